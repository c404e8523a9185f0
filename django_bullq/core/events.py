"""QueueEvents: read a queue's events stream (XREAD BLOCK) as typed events, and detect gaps.

BullMQ trims ``<prefix>:<queue>:events`` (``MAXLEN ~ meta.opts.maxLenEvents``, default 10,000)
on every transition, so a reader that falls behind loses entries. BullMQ's ``QueueEvents``
loses them silently; this reader yields a ``gap`` event (and logs a warning) with the range of
ids it never saw. Events are best-effort notifications: never use them for exact counts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .calls import Command, Steps
from .serialization import loads, to_str

if TYPE_CHECKING:
    from .queue import Queue

logger = logging.getLogger("django_bullq.events")

#: Fields holding JSON text (protocol §6.3), decoded for the caller.
JSON_FIELDS = {("completed", "returnvalue"), ("progress", "data")}
GAP = "gap"


@dataclass(frozen=True, slots=True)
class QueueEvent:
    """One entry of the events stream.

    Attributes:
        event: BullMQ event name (``completed``, ``failed``, ``progress``, ...) or ``"gap"``.
        id: stream entry id (``<ms>-<seq>``); for a gap, the last id that was missed.
        job_id: the ``jobId`` field, None for queue-level events (drained, paused, cleaned, gap).
        fields: the other fields; ``completed.returnvalue`` and ``progress.data`` JSON-decoded
            (raw text kept when invalid), ``delayed.delay`` as int ms. A gap has
            ``{"first": id, "last": id}``: entries after the reader's last id up to ``last``
            were trimmed before it read them.
    """

    event: str
    id: str
    job_id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)


def _id_tuple(stream_id: str) -> tuple[int, int]:
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


def _prev(stream_id: tuple[int, int]) -> tuple[int, int]:
    ms, seq = stream_id
    return (ms, seq - 1) if seq > 0 else (ms - 1, 2**64 - 1)


def next_id(stream_id: str) -> str:
    """The smallest stream id greater than ``stream_id``."""
    ms, seq = _id_tuple(stream_id)
    return f"{ms}-{seq + 1}"


def parse_entry(entry_id: Any, raw: Any) -> QueueEvent:
    """A :class:`QueueEvent` from one XREAD/XRANGE entry (bytes or str)."""
    values = {to_str(k) or "": to_str(v) or "" for k, v in dict(raw).items()}
    name = values.pop("event", "")
    job_id = values.pop("jobId", None)
    fields: dict[str, Any] = dict(values)
    for key, text in values.items():
        if (name, key) in JSON_FIELDS:
            try:
                fields[key] = loads(text)
            except ValueError:
                fields[key] = text
        elif name == "delayed" and key == "delay":
            fields[key] = int(float(text)) if text.lstrip("-").replace(".", "").isdigit() else text
    return QueueEvent(name, to_str(entry_id) or "", job_id, fields)


class QueueEvents:
    """Reader of one queue's events (BullMQ's ``QueueEvents``), with gap detection.

    Iterate with ``async for event in reader`` or ``for event in reader.iter_events()``.

    Args:
        queue: the :class:`~django_bullq.core.queue.queue.Queue` to listen to.
        last_id: where to start: ``"$"`` (default: only events after the reader starts),
            ``"0"`` (the whole stream still present) or a stream id (events after it).
        block_ms: ms one ``XREAD BLOCK`` waits (capped at 1000 ms so a block never outlasts a
            client socket timeout; the loop simply blocks again).
        count: max entries per read.

    Gap detection: after each read the reader asks ``XINFO STREAM`` for the stream's first
    entry. If it is newer than the reader's last id + 1, entries the reader never saw were
    trimmed: it yields ``QueueEvent("gap", last, None, {"first": ..., "last": ...})`` before
    the entries it did get, and logs a warning. (Stream ids are not dense, so when trimming
    stops exactly at the reader's position a gap of zero entries can be reported; a loss is
    never silent.) Entries removed with XDEL are caught through ``max-deleted-entry-id``
    (Redis >= 7.0 and Valkey; Redis 6.2 has no such field, and an XDEL goes unseen there).
    """

    def __init__(
        self, queue: Queue, last_id: str = "$", block_ms: int = 1000, count: int = 1000
    ) -> None:
        self.queue = queue
        self.key = queue.keys["events"]
        self.last_id = last_id
        self.block_ms = max(1, min(int(block_ms), 1000))
        self.count = count
        self.gaps = 0
        self._closed = False
        # "0": the caller wants whatever is left; entries trimmed before that are no gap
        self._from_start = last_id in ("0", "0-0")

    def close(self) -> None:
        """Stop the iterators after the current read."""
        self._closed = True

    # --- one step, shared by both iterators -----------------------------------------------

    def _start_id(self, last: Any) -> str:
        if not last:
            return "0-0"
        return to_str(last[0][0]) or "0-0"

    def _gap(self, info: Any, first_seen: str | None) -> QueueEvent | None:
        if self._from_start or not info:
            return None
        info = {to_str(k): v for k, v in info.items()}
        added, length = info.get("entries-added"), info.get("length")
        if added is not None and length is not None and int(added) == int(length):
            return None  # Redis >= 7: nothing was ever trimmed or deleted from this stream
        last_seen = _id_tuple(self.last_id)
        missed: list[tuple[int, int]] = []
        first_entry = info.get("first-entry")
        if first_entry:
            first_id = _id_tuple(to_str(first_entry[0]) or "0-0")
            if first_id > _id_tuple(next_id(self.last_id)):
                missed.append(_prev(first_id))
        deleted = to_str(info.get("max-deleted-entry-id"))
        if deleted is not None and _id_tuple(deleted) > last_seen:  # XDEL (Redis >= 7.0)
            missed.append(_id_tuple(deleted))
        if not missed:
            return None
        last = max(missed)
        if first_seen is not None and last >= _id_tuple(first_seen):
            last = _prev(_id_tuple(first_seen))
        last_missed = f"{last[0]}-{last[1]}"
        first = next_id(self.last_id)
        self.gaps += 1
        logger.warning(
            "events of queue %s were trimmed before this reader saw them: "
            "ids %s .. %s are lost (increase meta opts.maxLenEvents or read faster)",
            self.queue.name,
            first,
            last_missed,
        )
        return QueueEvent(GAP, last_missed, None, {"first": first, "last": last_missed})

    def _events(self, reply: Any, info: Any) -> list[QueueEvent]:
        entries = reply[0][1] if reply else []
        first_seen = to_str(entries[0][0]) if entries else None
        out: list[QueueEvent] = []
        gap = self._gap(info, first_seen)
        if gap is not None:
            out.append(gap)
            self.last_id = gap.id
        for entry_id, raw in entries:
            event = parse_entry(entry_id, raw)
            out.append(event)
            self.last_id = event.id
            self._from_start = False
        return out

    def _read(self) -> Steps[list[QueueEvent]]:
        """One blocking read (``XREAD BLOCK``), then ``XINFO STREAM`` for :meth:`_gap`."""
        if self.last_id == "$":
            self.last_id = yield Command("xrevrange", (self.key,), {"count": 1}, self._start_id)
        reply = yield Command(
            "xread", ({self.key: self.last_id},), {"count": self.count, "block": self.block_ms}
        )
        try:
            info = yield Command("xinfo_stream", (self.key,))
        except Exception:  # noqa: BLE001 - no stream yet: nothing can have been trimmed
            info = None
        return self._events(reply, info)

    # --- sync -------------------------------------------------------------------------------

    def read(self) -> list[QueueEvent]:
        """One blocking read (up to ``block_ms``); returns the events, possibly none."""
        return self.queue._drive(self._read())

    def iter_events(self) -> Iterator[QueueEvent]:
        """Blocking iterator over events until :meth:`close`."""
        while not self._closed:
            yield from self.read()

    # --- async ------------------------------------------------------------------------------

    async def aread(self) -> list[QueueEvent]:
        """Async twin of :meth:`read`."""
        return await self.queue._adrive(self._read())

    async def __aiter__(self) -> AsyncIterator[QueueEvent]:
        while not self._closed:
            for event in await self.aread():
                yield event
            await asyncio.sleep(0)
