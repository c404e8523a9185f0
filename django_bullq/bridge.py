"""Queue events for Django Channels: one reader per queue per process, fanned out to groups.

:class:`EventsHub` keeps, per process and event loop, at most one
:class:`~django_bullq.core.events.QueueEvents` reader per queue while at least one subscriber
(a WebSocket consumer) holds it, and forwards every event -- ``gap`` notices included (case
B22) -- to the channel-layer group :func:`group_name` of the queue. Every consumer of the
group gets every event; with several processes (``channels_redis``) a consumer may see an
event twice and drops ids it has already sent (stream ids only grow).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import weakref
from dataclasses import dataclass
from typing import Any

from .core.events import QueueEvent, QueueEvents
from .core.serialization import to_str

logger = logging.getLogger("django_bullq.events")

#: Channel-layer message type of a forwarded event (handled by ``bullq_event``).
MESSAGE_TYPE = "bullq.event"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_SLUG_MAX = 40
#: Largest JSON frame sent to a socket, in bytes (Daphne refuses messages over 1 MiB and a
#: refused message would be replayed on every reconnect).
MAX_FRAME_BYTES = 256 * 1024
#: Longest string (characters) and longest list / object (items) kept in a frame, tried in turn.
_FIELD_LIMITS = ((16_384, 200), (2_048, 50), (256, 10))
#: Largest stream id part: ids are two unsigned 64-bit integers.
_ID_PART_MAX = 2**64 - 1


def group_name(queue_name: str) -> str:
    """The channel-layer group of a queue's events: ``bullq.<slug>.<hash>``.

    Channels allows only ASCII alphanumerics, ``-``, ``_`` and ``.`` in group names, shorter
    than 100 characters. The slug (readable, lossy, at most 40 characters) is followed by the
    first 16 hex digits of the SHA-256 of the exact name, so distinct names never share a
    group (``a#b`` and ``a b`` slug alike but hash apart).

    Args:
        queue_name: the queue name, any characters the core allows.

    Returns:
        A valid group name of at most 63 characters.
    """
    slug = _UNSAFE.sub("_", queue_name)[:_SLUG_MAX].strip("_") or "_"
    digest = hashlib.sha256(queue_name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"bullq.{slug}.{digest}"


def event_payload(event: QueueEvent) -> dict[str, Any]:
    """The JSON-able wire form of an event (see docs/events.md, "Over WebSockets").

    Returns:
        ``{"type": "event", "event": name, "id": stream id, "jobId": str | None,
        "fields": dict}``.
    """
    return fit_frame({"type": "event", "event": event.event, "id": event.id,
                      "jobId": event.job_id, "fields": event.fields}, "fields")


def _bounded(value: Any, chars: int, items: int, tail: bool = False) -> tuple[Any, bool]:
    """``value`` with strings cut to ``chars`` and lists / objects to ``items``; and whether
    anything was cut. Cut parts end with a note of how much was left out; ``tail`` keeps a
    list's last items instead (newest log lines), the note first."""
    if isinstance(value, str):
        if len(value) <= chars:
            return value, False
        return f"{value[:chars]}… [{len(value) - chars} more characters not sent]", True
    if isinstance(value, list):
        chosen = value[-items:] if tail else value[:items]
        kept = [_bounded(v, chars, items) for v in chosen]
        cut = len(value) > items or any(c for _, c in kept)
        out = [v for v, _ in kept]
        if len(value) > items:
            note = f"… [{len(value) - items} more items not sent]"
            out = [note, *out] if tail else [*out, note]
        return out, cut
    if isinstance(value, dict):
        pairs = list(value.items())
        kept_items = [(str(k)[:chars], _bounded(v, chars, items)) for k, v in pairs[:items]]
        out_dict = {k: v for k, (v, _) in kept_items}
        cut = len(pairs) > items or any(c for _, (_, c) in kept_items)
        if len(pairs) > items:
            out_dict["…"] = f"{len(pairs) - items} more keys not sent"
        return out_dict, cut
    return value, False


def fit_frame(frame: dict[str, Any], body: str, tails: tuple[str, ...] = ()
              ) -> dict[str, Any]:
    """``frame`` made to fit :data:`MAX_FRAME_BYTES` once JSON-encoded.

    Only ``frame[body]`` (an event's ``fields``, a snapshot's ``job``) is shortened: strings,
    lists and objects in it are cut ever shorter until the frame fits, and the frame gets
    ``"truncated": true``; if even the shortest cut is too big, ``body`` becomes ``{}``.
    Lists under the keys ``tails`` of ``body`` keep their last items (newest log lines).
    Reading the job itself (the admin's detail page) shows everything.
    """
    if len(json.dumps(frame)) <= MAX_FRAME_BYTES:
        return frame
    original = frame[body]
    for chars, items in _FIELD_LIMITS:
        if isinstance(original, dict):  # bound each field, never drop the body's own keys
            value: Any = {k: _bounded(v, chars, items, k in tails)[0]
                          for k, v in original.items()}
        else:
            value = _bounded(original, chars, items)[0]
        candidate = {**frame, body: value, "truncated": True}
        if len(json.dumps(candidate)) <= MAX_FRAME_BYTES:
            return candidate
    return {**frame, body: {}, "truncated": True}


def id_tuple(stream_id: str) -> tuple[int, int]:
    """``"<ms>-<seq>"`` as a comparable tuple (``"0"`` and ``""`` -> ``(0, 0)``)."""
    ms, _, seq = (stream_id or "0").partition("-")
    return int(ms or 0), int(seq or 0)


def valid_stream_id(value: str) -> bool:
    """True for ``<ms>`` or ``<ms>-<seq>``: digits only, each part an unsigned 64-bit integer."""
    if not re.fullmatch(r"\d{1,20}(-\d{1,20})?", value or ""):
        return False
    return all(int(part) <= _ID_PART_MAX for part in value.split("-"))


async def last_stream_id(queue: Any) -> str:
    """The id of the newest entry of the queue's events stream (``"0-0"`` when empty)."""
    last = await queue.aclient.xrevrange(queue.keys["events"], count=1)
    return (to_str(last[0][0]) or "0-0") if last else "0-0"


@dataclass
class _Feed:
    reader: QueueEvents
    task: asyncio.Task[None]
    holders: int = 0


class EventsHub:
    """One reader per queue (in this process and event loop), forwarding to its group.

    Use :func:`get_hub` for the running loop's hub; consumers call :meth:`acquire` on connect
    and :meth:`release` on disconnect.
    """

    def __init__(self) -> None:
        self._feeds: dict[str, _Feed] = {}
        self._lock = asyncio.Lock()

    def readers(self) -> dict[str, QueueEvents]:
        """The live readers by queue name (for tests and introspection)."""
        return {name: feed.reader for name, feed in self._feeds.items()}

    async def acquire(self, queue: Any) -> None:
        """Start (or share) the reader of ``queue`` (a core Queue).

        When this returns, the reader's position is fixed: every event appended after this
        call is forwarded to :func:`group_name` ``(queue.name)``.
        """
        async with self._lock:
            feed = self._feeds.get(queue.name)
            if feed is None:
                reader = QueueEvents(queue, last_id=await last_stream_id(queue))
                task = asyncio.ensure_future(self._run(reader))
                feed = self._feeds[queue.name] = _Feed(reader, task)
            feed.holders += 1

    async def release(self, queue_name: str) -> None:
        """Drop one hold; the last one stops the reader."""
        async with self._lock:
            feed = self._feeds.get(queue_name)
            if feed is None:
                return
            feed.holders -= 1
            if feed.holders > 0:
                return
            del self._feeds[queue_name]
        feed.reader.close()
        feed.task.cancel()
        try:
            await feed.task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - reader is gone either way
            pass

    async def _run(self, reader: QueueEvents) -> None:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        group = group_name(reader.queue.name)
        while True:
            prev = reader.last_id
            try:
                events = await reader.aread()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis hiccup: log, wait, read again
                logger.exception("events reader of queue %s failed; retrying",
                                 reader.queue.name)
                await asyncio.sleep(1.0)
                continue
            for event in events:
                # "prev": the entry before this one, so a consumer that lost a message (a full
                # channel drops it) sees the hole and reads it back from the stream
                if layer is not None:
                    await layer.group_send(group, {"type": MESSAGE_TYPE, "prev": prev,
                                                   "payload": event_payload(event)})
                prev = event.id


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, EventsHub] = (
    weakref.WeakKeyDictionary())


def get_hub() -> EventsHub:
    """The :class:`EventsHub` of the running event loop (one per process in a server)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = EventsHub()
    return hub
