"""Job options: validation, time conversion (one helper) and BullMQ's stored ``opts`` JSON shape."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import Any

from . import backoff as backoff_mod
from .keys import validate_job_id

PRIORITY_LIMIT = 2**21 - 1

KeepJobs = bool | int | dict[str, int] | None


def now_ms() -> int:
    """Current time in integer ms since the epoch (the client clock, as BullMQ uses)."""
    return int(time.time() * 1000)


def to_delay_ms(value: int | float | timedelta | datetime | None, now: int | None = None) -> int:
    """The one conversion of a delay into ms.

    Args:
        value: ms (int/float), a ``timedelta``, or an aware ``datetime`` to run at.
        now: reference time in ms (defaults to :func:`now_ms`).

    Returns:
        A delay in integer ms, never negative (a past datetime gives 0).

    Raises:
        ValueError: a naive datetime (its instant is ambiguous; the Django layer makes it aware
            in ``TIME_ZONE`` first), or a negative number.
    """
    if value is None:
        return 0
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("a naive datetime is ambiguous: pass an aware datetime")
        due = int(round(value.timestamp() * 1000))
        return max(0, due - (now_ms() if now is None else now))
    if isinstance(value, timedelta):
        ms = int(round(value.total_seconds() * 1000))
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"delay must be ms, a timedelta or an aware datetime, not {value!r}")
    elif value < 0:
        raise ValueError("delay must be >= 0 ms")
    else:
        ms = int(value)
    if ms < 0:
        raise ValueError("delay must be >= 0 ms")
    return ms


def normalize_keep(value: KeepJobs) -> tuple[int, int, int]:
    """removeOnComplete / removeOnFail as (count, age_s, limit): count -1 keeps all, 0 keeps none.

    ``True`` → keep none; ``False``/``None`` → keep all; N → newest N; ``{"count", "age"
    (seconds), "limit"}`` as BullMQ.

    Raises:
        ValueError: any other shape, or negative numbers.
    """
    if value is None or value is False:
        return (-1, 0, 1000)
    if value is True:
        return (0, 0, 1000)
    if isinstance(value, int):
        if value < 0:
            raise ValueError("keep count must be >= 0")
        return (value, 0, 1000)
    if isinstance(value, dict):
        count = int(value.get("count", -1))
        age = int(value.get("age", 0))
        limit = int(value.get("limit", 1000))
        if age < 0 or limit <= 0:
            raise ValueError("keep age must be >= 0 s and limit > 0")
        return (count, age, limit)
    raise ValueError(f"removeOnComplete/removeOnFail must be bool, int or dict, not {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOptions:
    """Options of one job, stored in the job hash as BullMQ's ``opts`` JSON.

    Attributes:
        job_id: custom job id (BullMQ ``jobId``); see :func:`validate_job_id`.
        delay: ms before the job may run (BullMQ ``delay``); also timedelta / aware datetime.
        priority: 0 none, 1 (most urgent) .. 2_097_151 (BullMQ ``priority``).
        lifo: push at the head of wait (BullMQ ``lifo``).
        attempts: total tries, 0 and 1 mean no retry (BullMQ ``attempts``).
        backoff: ms (fixed) or ``{"type": "fixed"|"exponential"|custom, "delay": ms,
            "jitter": 0..1}`` (BullMQ ``backoff``).
        remove_on_complete / remove_on_fail: retention, see :func:`normalize_keep`.
        timestamp: creation time override, ms.
        keep_logs: keep only the newest N log lines (BullMQ ``keepLogs``, stored ``kl``).
        extra: further BullMQ options stored under their own names.
        parent: ``{"id": parent job id, "queue": "<prefix>:<queue>"}`` makes this job a child
            of an existing job (BullMQ ``parent``); see docs/flows.md.
        fail_parent_on_failure / continue_parent_on_failure / ignore_dependency_on_failure /
            remove_dependency_on_failure: what this child's final failure does to its parent
            (BullMQ ``failParentOnFailure`` ``fpof`` / ``continueParentOnFailure`` ``cpof`` /
            ``ignoreDependencyOnFailure`` ``idof`` / ``removeDependencyOnFailure`` ``rdof``);
            at most one may be set.
        deduplication: ``{"id": str, "ttl": ms, "extend": bool, "replace": bool,
            "keep_last_if_active": bool, "reschedule": bool}`` (BullMQ ``deduplication``,
            stored ``de``); see docs/deduplication.md. camelCase keys (``keepLastIfActive``)
            are accepted too.
        timeout: ms a run may take; past it the worker cancels the job, which fails with
            ``"timed out after <N> ms"`` (BullMQ Pro ``timeout``; docs/cancellation.md).
    """

    job_id: str | None = None
    delay: int | float | timedelta | datetime | None = None
    priority: int = 0
    lifo: bool = False
    attempts: int = 0
    backoff: int | dict[str, Any] | None = None
    remove_on_complete: KeepJobs = None
    remove_on_fail: KeepJobs = None
    timestamp: int | None = None
    keep_logs: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # --- flows (docs/flows.md) ---
    parent: dict[str, str] | None = None
    fail_parent_on_failure: bool = False
    continue_parent_on_failure: bool = False
    ignore_dependency_on_failure: bool = False
    remove_dependency_on_failure: bool = False
    deduplication: dict[str, Any] | None = None
    timeout: int | None = None

    def merged(self, **overrides: Any) -> JobOptions:
        """A copy with ``overrides`` applied; unknown names raise ``TypeError``."""
        names = {f.name for f in fields(self)}
        unknown = set(overrides) - names
        if unknown:
            raise TypeError(f"unknown job option(s): {', '.join(sorted(unknown))}")
        return replace(self, **overrides)

    def validate(self) -> None:
        """Raise ``ValueError`` for options BullMQ would reject or misread."""
        if self.job_id is not None:
            validate_job_id(self.job_id)
        if (
            isinstance(self.priority, bool)
            or not isinstance(self.priority, int)
            or not (0 <= self.priority <= PRIORITY_LIMIT)
        ):
            raise ValueError(f"priority must be an int in 0..{PRIORITY_LIMIT}")
        if (
            isinstance(self.attempts, bool)
            or not isinstance(self.attempts, int)
            or (self.attempts < 0)
        ):
            raise ValueError("attempts must be an int >= 0")
        backoff_mod.normalize(self.backoff)
        to_delay_ms(self.delay)
        normalize_keep(self.remove_on_complete)
        normalize_keep(self.remove_on_fail)
        if self.keep_logs is not None and self.keep_logs < 0:
            raise ValueError("keep_logs must be >= 0")
        validate_parent_options(self)
        if self.deduplication is not None:
            normalize_deduplication(self.deduplication)
        if self.timeout is not None and (
            isinstance(self.timeout, bool) or not isinstance(self.timeout, int) or self.timeout <= 0
        ):
            raise ValueError("timeout must be an int > 0 (ms)")

    def to_stored(self, delay_ms: int) -> dict[str, Any]:
        """BullMQ's ``opts`` dict (public names, short keys where BullMQ shortens them)."""
        opts: dict[str, Any] = dict(self.extra)
        opts["attempts"] = self.attempts
        if delay_ms:
            opts["delay"] = delay_ms
        if self.priority:
            opts["priority"] = self.priority
        for attr, key in _STORED_WHEN_SET:
            value = getattr(self, attr)
            if value is not None:
                opts[key] = value
        normalized = backoff_mod.normalize(self.backoff)
        if normalized:
            opts["backoff"] = normalized
        if self.parent is not None:
            opts["parent"] = {"id": str(self.parent["id"]), "queue": self.parent["queue"]}
        for attr, key in _STORED_FLAGS:
            if getattr(self, attr):
                opts[key] = True
        if self.deduplication is not None:
            opts["de"] = normalize_deduplication(self.deduplication)
        return opts


#: Options stored as given when set: attribute -> BullMQ's ``opts`` key.
_STORED_WHEN_SET = (
    ("job_id", "jobId"),
    ("remove_on_complete", "removeOnComplete"),
    ("remove_on_fail", "removeOnFail"),
    ("timestamp", "timestamp"),
    ("keep_logs", "kl"),
    ("timeout", "timeout"),
)


#: ``deduplication`` keys (snake_case or BullMQ camelCase) -> stored camelCase key.
_DEDUP_KEYS = {
    "id": "id",
    "ttl": "ttl",
    "extend": "extend",
    "replace": "replace",
    "keep_last_if_active": "keepLastIfActive",
    "keepLastIfActive": "keepLastIfActive",
    "reschedule": "reschedule",
}


def normalize_deduplication(value: Any) -> dict[str, Any]:
    """The ``deduplication`` option as BullMQ stores it under ``opts.de``.

    Args:
        value: ``{"id": non-empty str, "ttl": ms > 0 (optional), "extend": bool,
            "replace": bool, "keep_last_if_active": bool, "reschedule": bool}`` (camelCase
            accepted).

    Returns:
        ``{"id", "ttl"?, "extend"?, "replace"?, "keepLastIfActive"?, "reschedule"?}`` without
        false flags.

    Raises:
        ValueError: not a dict, unknown key, missing/empty id, bad ttl or flag.
    """
    if not isinstance(value, dict):
        raise ValueError("deduplication must be a dict like {'id': 'order-7', 'ttl': 5000}")
    unknown = set(value) - set(_DEDUP_KEYS)
    if unknown:
        raise ValueError(f"unknown deduplication key(s): {', '.join(sorted(unknown))}")
    dedup_id = value.get("id")
    if not isinstance(dedup_id, str) or not dedup_id:
        raise ValueError("deduplication needs a non-empty string 'id'")
    stored: dict[str, Any] = {"id": dedup_id}
    ttl = value.get("ttl")
    if ttl is not None:
        if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
            raise ValueError("deduplication 'ttl' must be an int > 0 (ms)")
        stored["ttl"] = ttl
    for key, target in _DEDUP_KEYS.items():
        if key in ("id", "ttl") or key not in value:
            continue
        flag = value[key]
        if not isinstance(flag, bool):
            raise ValueError(f"deduplication {key!r} must be a bool")
        if flag:
            stored[target] = True
    return stored


#: BullMQ's stored ``opts`` keys -> :class:`JobOptions` attribute (``de`` aside: a stored job's
#: deduplication is read back into ``extra``, as it is kept).
FROM_STORED = {
    "jobId": "job_id",
    "delay": "delay",
    "priority": "priority",
    "lifo": "lifo",
    "attempts": "attempts",
    "backoff": "backoff",
    "removeOnComplete": "remove_on_complete",
    "removeOnFail": "remove_on_fail",
    "timestamp": "timestamp",
    "kl": "keep_logs",
    "parent": "parent",
    "fpof": "fail_parent_on_failure",
    "cpof": "continue_parent_on_failure",
    "idof": "ignore_dependency_on_failure",
    "rdof": "remove_dependency_on_failure",
    "timeout": "timeout",
}

#: JobOptions flag -> BullMQ's short key, stored in ``opts`` and in the child's ``parent`` field.
PARENT_FLAGS = {
    "fail_parent_on_failure": "fpof",
    "continue_parent_on_failure": "cpof",
    "ignore_dependency_on_failure": "idof",
    "remove_dependency_on_failure": "rdof",
}
#: Flags stored as ``true`` when set: attribute -> BullMQ's ``opts`` key.
_STORED_FLAGS = (("lifo", "lifo"), *PARENT_FLAGS.items())


def validate_parent_options(opts: JobOptions) -> None:
    """Raise ``ValueError`` for a malformed ``parent`` or several failure policies at once."""
    # Most jobs set none: one short-circuit test before counting (every add validates).
    if (
        opts.fail_parent_on_failure
        or opts.continue_parent_on_failure
        or opts.ignore_dependency_on_failure
        or opts.remove_dependency_on_failure
    ) and sum(bool(getattr(opts, attr)) for attr in PARENT_FLAGS) > 1:
        raise ValueError(
            "fail_parent_on_failure, continue_parent_on_failure, "
            "ignore_dependency_on_failure and remove_dependency_on_failure "
            "exclude each other"
        )
    parent = opts.parent
    if parent is not None:
        if not isinstance(parent, dict) or not parent.get("id") or not parent.get("queue"):
            raise ValueError('parent must be {"id": <job id>, "queue": "<prefix>:<queue>"}')
        if ":" in str(parent["id"]):
            raise ValueError(f"parent id {parent['id']!r} must not contain ':'")


def parent_link(stored: dict[str, Any]) -> tuple[str, str]:
    """A child's ``parentKey`` and ``parent`` hash fields from its stored ``opts``.

    Returns:
        ``("<prefix>:<queue>:<id>", '{"id":..,"queueKey":..,"fpof":true?..}')``, or
        ``("", "")`` when the opts have no parent. The failure flags travel in the ``parent``
        JSON because that is where BullMQ's scripts read them.
    """
    parent = stored.get("parent")
    if not (isinstance(parent, dict) and parent.get("id") and parent.get("queue")):
        return "", ""
    link: dict[str, Any] = {"id": str(parent["id"]), "queueKey": parent["queue"]}
    for short in PARENT_FLAGS.values():
        if stored.get(short):
            link[short] = True
    return f"{parent['queue']}:{parent['id']}", json.dumps(link, separators=(",", ":"))


def options_from_stored(opts: dict[str, Any]) -> JobOptions:
    """Read BullMQ's stored ``opts`` into :class:`JobOptions`; unknown keys go to ``extra``."""
    known = {FROM_STORED[k]: v for k, v in opts.items() if k in FROM_STORED}
    extra = {k: v for k, v in opts.items() if k not in FROM_STORED}
    # Lua cjson turns empty arrays into {} and drops nulls; tolerate what real BullMQ stored.
    if "timeout" in known and (
        isinstance(known["timeout"], bool) or not isinstance(known["timeout"], int)
    ):
        extra["timeout"] = known.pop("timeout")
    for key in ("priority", "attempts", "delay"):
        if key in known and not isinstance(known[key], int | float):
            known.pop(key)
    return JobOptions(**known, extra=extra)
