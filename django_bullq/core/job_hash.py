"""The job hash decoded: ``HGETALL`` output into the fields of a :class:`~.job.Job`.

The hash's fields have BullMQ's names (protocol §3). A field that cannot be decoded becomes
a readable problem, never an exception, so a corrupt hash fails its job and not the worker.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .serialization import loads, loads_str, to_str


def int_field(value: str | None, default: int = 0) -> int:
    """An integer hash field; ``default`` for anything else (junk, NaN, Infinity, absent)."""
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return int(float(value))  # "1e3", "2.0": as Number() would read them
    except (ValueError, OverflowError):
        return default


def as_dict(raw: Any) -> dict[str, str]:
    """``HGETALL`` output (a dict, or a flat list of bytes or str) as a dict of str; bytes that
    are not UTF-8 are decoded with replacement characters."""
    if isinstance(raw, dict):
        pairs: Iterable[tuple[Any, Any]] = raw.items()
    else:
        seq = raw if type(raw) is list else list(raw or [])
        if len(seq) % 2 == 0:
            it = iter(seq)
            try:  # the hot path (every fetched job): a flat list of bytes, as RESP2 sends it
                return {k.decode(): v.decode() for k, v in zip(it, it, strict=True)}
            except AttributeError:  # str (decode_responses) or other types: the general path
                pass
            except UnicodeDecodeError:
                it = iter(seq)
                return {
                    k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                    for k, v in zip(it, it, strict=True)
                }
        pairs = zip(seq[0::2], seq[1::2], strict=False)
    return {to_str(k) or "": to_str(v) or "" for k, v in pairs}


#: Integer fields: (hash field, attribute); read only when the hash holds them.
_INT_FIELDS = (
    ("timestamp", "timestamp"),
    ("delay", "delay"),
    ("priority", "priority"),
    ("processedOn", "processed_on"),
    ("finishedOn", "finished_on"),
    ("atm", "attempts_made"),
    ("ats", "attempts_started"),
    ("stc", "stalled_counter"),
)
#: Text fields read as they are: (hash field, attribute).
_TEXT_FIELDS = (
    ("failedReason", "failed_reason"),
    ("pb", "processed_by"),
    ("parentKey", "parent_key"),
    ("rjk", "repeat_job_key"),
    ("deid", "deduplication_id"),
    ("defa", "deferred_failure"),
)
#: The fields of a job that waits or has just been fetched, decoded above; a hash holding
#: only these has none of the fields decode_rare reads.
COMMON_FIELDS = frozenset(
    ("name", "data", "opts", "progress", "parent", *(k for k, _ in _INT_FIELDS))
)


def decode_json(state: dict[str, Any], fields: dict[str, str]) -> list[str]:
    """Decode the JSON fields a job hash holds (data, opts, progress, parent) into ``state``;
    returns the problems found, in the order a reader meets them."""
    problems: list[str] = []
    opts: Any = {}
    for key in ("data", "opts", "progress", "parent"):
        text = fields.get(key)
        if text is None:
            continue
        try:
            value = loads_str(text)
        except ValueError as exc:
            problems.append(f"field {key!r} is not valid JSON ({exc})")
            continue
        if key == "opts":
            opts = value
        else:
            state[key] = value
    if "data" not in fields:
        problems.append("job hash has no 'data' field")
    if isinstance(opts, dict):
        state["opts"] = opts
    else:
        problems.append("field 'opts' is not a JSON object")
    return problems


def decode_ints(state: dict[str, Any], fields: dict[str, str]) -> None:
    """The integer fields a job hash holds, into ``state`` (junk reads as 0: :func:`int_field`)."""
    get = fields.get
    for key, attr in _INT_FIELDS:
        text = get(key)
        if text is not None:
            try:
                state[attr] = int(text)
            except ValueError:
                state[attr] = int_field(text)


def decode_rare(state: dict[str, Any], fields: dict[str, str]) -> None:
    """The fields of finished, failed, child, repeated or deduplicated jobs, into ``state``."""
    get = fields.get
    if "attemptsMade" in fields:  # BullMQ 4's name of atm, read before it
        state["attempts_made"] = int_field(fields["attemptsMade"])
    for key, attr in _TEXT_FIELDS:
        text = get(key)
        if text is not None:
            state[attr] = text
    text = get("returnvalue")
    if text is not None:
        try:
            state["returnvalue"] = loads(text)
        except ValueError:
            state["returnvalue"] = text  # BullMQ readers tolerate this too
    text = get("stacktrace")
    if text is not None:
        try:
            trace = loads(text)
        except ValueError:
            trace = None
        if isinstance(trace, list):
            state["stacktrace"] = [str(line) for line in trace]


__all__ = ["COMMON_FIELDS", "as_dict", "decode_ints", "decode_json", "decode_rare", "int_field"]
