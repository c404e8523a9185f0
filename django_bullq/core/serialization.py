"""Strict JSON for everything stored in Redis: job data, return values, progress. Never pickle."""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable
from typing import Any

from .errors import PayloadTooLargeError, SerializationError

#: Largest job ``data`` (bytes of its UTF-8 JSON) a producer may add and a worker will run, by
#: default (``BULLQ["MAX_PAYLOAD_BYTES"]``). Big enough for BullMQ-style payloads of a few MB;
#: Redis itself allows 512 MB, which a queue should never approach.
DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024


def dumps(value: Any, what: str = "value") -> str:
    """Encode ``value`` as compact JSON text that is valid UTF-8.

    Args:
        value: any JSON value (dict, list, str, int, float, bool, None); NaN/Infinity refused.
        what: a description for the error message, e.g. ``"argument 'x' of task app.tasks.f"``.

    Returns:
        JSON text, compact separators, non-ASCII kept as is.

    Raises:
        SerializationError: the value is not JSON-serialisable, holds NaN/Infinity, or holds a
            string that is not valid Unicode (lone surrogates).
    """
    try:
        text = _encode(value)
    except RecursionError as exc:
        raise SerializationError(
            f"{what} is not JSON-serialisable: it nests too deeply, or holds itself (a list or "
            "dict that contains itself)"
        ) from exc
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"{what} is not JSON-serialisable: {exc}") from exc
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SerializationError(f"{what} holds a string that is not valid Unicode: {exc}") from exc
    return text


# Built once, as _DECODER below (json.dumps with keywords builds an encoder per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _make_encode() -> Callable[[Any], str]:
    """:data:`_ENCODER`'s ``encode``, or the same text from one C encoder made once.

    ``JSONEncoder.encode`` makes a new C encoder on every call (about 1 us of a 1.3 us encode
    of a small task call, twice per add: data and options). The one made here is kept; it is
    made without ``markers`` (the circular-reference check), so no call leaves anything in it
    and every thread can share it: a value that holds itself ends in the recursion limit, a
    ``RecursionError`` that :func:`dumps` reports as it reports too deep a nesting. Where the
    C accelerator is missing (not CPython), ``_ENCODER.encode`` as it is.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return _ENCODER.encode
    enc = _ENCODER  # its settings, as JSONEncoder.iterencode passes them (markers: None)
    chunks = make(
        None,
        enc.default,
        json.encoder.encode_basestring,
        enc.indent,
        enc.key_separator,
        enc.item_separator,
        enc.sort_keys,
        enc.skipkeys,
        enc.allow_nan,
    )

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


_encode = _make_encode()


class Encoded:
    """A JSON value and its text, encoded once by :func:`dumps`.

    :meth:`Queue.add <django_bullq.core.queue.queue.Queue.add>`, ``aadd`` and ``add_bulk``
    take one as a job's ``data``: they store :attr:`text` as it is (still checked against the
    payload limit) and give the :class:`~django_bullq.core.job.Job` :attr:`value`. A producer
    that has encoded the data to check it (``@task``) thus does not encode it twice.

    Attributes:
        value: the JSON value. text: its JSON text, as :func:`dumps` made it.
    """

    __slots__ = ("text", "value")

    def __init__(self, value: Any, text: str) -> None:
        self.value = value
        self.text = text

    def __repr__(self) -> str:
        return f"Encoded({self.text})"


def data_text(data: Any, what: str) -> tuple[Any, str]:
    """``data``'s JSON value and text: an :class:`Encoded`'s own, else :func:`dumps` (``what``
    names it in the error).

    Raises:
        SerializationError: as :func:`dumps`.
    """
    if type(data) is Encoded:
        return data.value, data.text
    return data, dumps(data, what)


def checked_text(data: Any, limit: int, what: str) -> str:
    """``data``'s JSON text (:func:`data_text`) checked against ``limit`` (:func:`check_size`).

    Raises:
        SerializationError: as :func:`dumps`. PayloadTooLargeError: as :func:`check_size`.
    """
    _, text = data_text(data, what)
    check_size(text, limit, what)
    return text


def check_size(text: str, limit: int, what: str) -> int:
    """Refuse JSON ``text`` larger than ``limit`` bytes (``0`` = no limit); returns its size.

    Raises:
        PayloadTooLargeError: the message names ``what`` (e.g. the task), the size and the limit.
    """
    size = len(text.encode("utf-8"))
    if limit and size > limit:
        raise PayloadTooLargeError(
            f"{what} is {size} bytes of JSON, over the payload limit of {limit} bytes "
            "(BULLQ['MAX_PAYLOAD_BYTES']); store large data elsewhere and pass a reference"
        )
    return size


def loads(text: str | bytes | None, default: Any = None) -> Any:
    """Decode JSON text read from Redis; ``None`` gives ``default``.

    Raises:
        ValueError: the text is not valid JSON (``NaN``/``Infinity`` included: strict JSON, as
            every BullMQ reader's ``JSON.parse``).
    """
    if text is None:
        return default
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return loads_str(text)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# One decoder for every call: json.loads with any keyword builds a new one each time, a
# measurable share of a worker's CPU per job (each job's data and opts are decoded).
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


#: The ValueError of text that nests deeper than the decoder reads (it raises RecursionError,
#: which no caller of :func:`loads` expects: a job hash holding such data wedged the fetch).
NESTED_TOO_DEEPLY = "JSON nested too deeply to read"

# The decoder's scanner (C where CPython has it), called first by :func:`loads_str`;
# typeshed types make_scanner as a class that takes itself, hence the Any.
_make_scanner: Any = json.scanner.make_scanner
_scan: Callable[[str, int], tuple[Any, int]] = _make_scanner(_DECODER)


def loads_str(text: str) -> Any:
    """:func:`loads` for ``str`` text, without its checks, for the per-job hot path
    (``Job.from_hash``).

    ``JSONDecoder.decode`` matches the whitespace around the value with two regular
    expressions on every call, about half of a small job field's decode. The scanner alone
    reads text that is one value and nothing else; text it does not read whole (whitespace
    around the value, junk after it, invalid JSON) goes to ``decode``, so the value or the
    ``JSONDecodeError`` is ``decode``'s own.

    Raises:
        ValueError: as :func:`loads`; also for text nested deeper than the decoder reads
            (:data:`NESTED_TOO_DEEPLY`), where the decoder raises RecursionError.
    """
    try:
        try:
            value, end = _scan(text, 0)
            if end == len(text):
                return value
        except StopIteration:
            pass
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError(NESTED_TOO_DEEPLY) from None


def to_str(value: str | bytes | int | float | None) -> str | None:
    """A Redis reply as ``str`` whatever the client's ``decode_responses`` setting."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
