"""Queue events for Django Channels: one reader per queue per process, wake-ups to sockets.

:class:`EventsHub` keeps, per process and event loop, at most one
:class:`~django_bullq.core.events.QueueEvents` reader per queue while at least one socket
subscribes to it. What the reader reads (``gap`` notices included, case B22) goes into the
feed's bounded buffer of encoded frames (:class:`Frame`); the channel layer carries only a wake-up
(``bullq.wake``, no event in it) to each subscribed consumer's own channel. A woken consumer
sends the frames after the last id it sent, from the buffer, or from the stream itself when it
is further behind than the buffer reaches (a ``gap`` when the stream was trimmed past it).

A channel layer drops messages to a full channel (and expires old ones), so no event may
travel in one. Wake-ups are coalesced: at most one is on its way to a consumer at a time, so
the channel never fills with ours; and after every read (at least once a second) the hub wakes
each consumer still behind the buffer whose wake-up is not on its way, or was sent over
:data:`REWAKE_AFTER_S` ago, so a lost wake-up only delays the frames.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import logging
import re
import weakref
from collections import deque
from dataclasses import dataclass
from itertools import islice
from typing import Any

from channels.exceptions import ChannelFull

from ..core.events import QueueEvent, QueueEvents
from ..core.serialization import to_str

logger = logging.getLogger("django_bullq.events")

#: Channel-layer message type of a wake-up (handled by the consumers' ``bullq_wake``).
WAKE_TYPE = "bullq.wake"
#: Most frames a feed keeps for its sockets (the newest); a socket further behind reads the
#: stream itself.
BUFFER_FRAMES = 10_000
#: Most bytes of JSON text a feed keeps in frames (the newest).
BUFFER_BYTES = 8 * 1024 * 1024
#: Seconds after which a wake-up not yet answered is sent again (the layer lost or expired it).
REWAKE_AFTER_S = 5.0
#: Largest JSON frame sent to a socket, in bytes (Daphne refuses messages over 1 MiB and a
#: refused message would be replayed on every reconnect).
MAX_FRAME_BYTES = 256 * 1024
#: Longest string (characters) and longest list / object (items) kept in a frame, tried in turn.
_FIELD_LIMITS = ((16_384, 200), (2_048, 50), (256, 10))
#: Largest stream id part: ids are two unsigned 64-bit integers.
_ID_PART_MAX = 2**64 - 1


def event_payload(event: QueueEvent) -> dict[str, Any]:
    """The JSON-able wire form of an event (see docs/events.md, "Over WebSockets").

    Returns:
        ``{"type": "event", "event": name, "id": stream id, "jobId": str | None,
        "fields": dict}``.
    """
    return fit_frame(
        {
            "type": "event",
            "event": event.event,
            "id": event.id,
            "jobId": event.job_id,
            "fields": event.fields,
        },
        "fields",
    )


def _bounded(value: Any, chars: int, items: int, *, tail: bool = False) -> tuple[Any, bool]:
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


def fit_frame(frame: dict[str, Any], body: str, tails: tuple[str, ...] = ()) -> dict[str, Any]:
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
            value: Any = {
                k: _bounded(v, chars, items, tail=k in tails)[0] for k, v in original.items()
            }
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


@dataclass(frozen=True, slots=True)
class Frame:
    """One event ready for sockets, encoded once for all of them.

    Attributes:
        key: the stream id as a comparable tuple (:func:`id_tuple`).
        id: the stream id, ``<ms>-<seq>``.
        event: the event name (``"gap"`` for a gap notice).
        job_id: the job the event is about, None for queue-level events and gaps.
        text: the JSON text frame (:func:`event_payload`).
    """

    key: tuple[int, int]
    id: str
    event: str
    job_id: str | None
    text: str


def encode_event(event: QueueEvent) -> Frame:
    """The :class:`Frame` of ``event``."""
    return Frame(
        id_tuple(event.id), event.id, event.event, event.job_id, json.dumps(event_payload(event))
    )


class Feed:
    """One queue's reader in this process, its buffer of the newest frames, and the
    subscriptions to it (made by :class:`EventsHub`)."""

    def __init__(self, reader: QueueEvents) -> None:
        self.reader = reader
        self.frames: deque[Frame] = deque()
        self.size = 0  # bytes of JSON in frames
        self.base_id = reader.last_id  # frames hold every event after base_id
        self.base = id_tuple(self.base_id)
        self.head = self.base  # the newest id read
        self.subscriptions: set[Subscription] = set()
        self.task: asyncio.Task[None] | None = None

    def append(self, frames: list[Frame]) -> None:
        """Add ``frames`` (newer than every buffered one, oldest first); drop the oldest while
        the buffer holds over :data:`BUFFER_FRAMES` frames or :data:`BUFFER_BYTES` bytes."""
        for frame in frames:
            self.frames.append(frame)
            self.size += len(frame.text)
        if frames:
            self.head = frames[-1].key
        while self.frames and (len(self.frames) > BUFFER_FRAMES or self.size > BUFFER_BYTES):
            old = self.frames.popleft()
            self.size -= len(old.text)
            self.base, self.base_id = old.key, old.id

    def after(self, key: tuple[int, int], limit: int) -> list[Frame] | None:
        """Up to ``limit`` frames after stream id ``key`` (a tuple), oldest first; None when
        the buffer no longer holds every event after ``key``."""
        if key < self.base:
            return None
        start = bisect.bisect_right(self.frames, key, key=lambda f: f.key)
        return list(islice(self.frames, start, start + limit))

    async def wake_behind(self) -> None:
        """Wake every subscription whose consumer has not yet sent the newest frame."""
        behind = [s for s in self.subscriptions if s.position < self.head]
        if behind:
            await asyncio.gather(*(s.wake() for s in behind))


class Subscription:
    """One consumer's hold on a queue's feed (from :meth:`EventsHub.subscribe`).

    The consumer tells the feed how far it got (:meth:`seen`), takes the frames after that
    (:meth:`frames_after`) and marks each wake-up it handles (:meth:`woken`).
    """

    def __init__(self, feed: Feed, layer: Any, channel: str) -> None:
        self.feed, self.layer, self.channel = feed, layer, channel
        self.position = (0, 0)
        self._woken_at: float | None = None  # loop time of the wake-up on its way, if any

    def seen(self, stream_id: str) -> None:
        """The consumer has sent (or skipped) every event up to ``stream_id``."""
        self.position = id_tuple(stream_id)

    def behind(self, stream_id: str) -> bool:
        """Whether the feed has read events after ``stream_id``."""
        return id_tuple(stream_id) < self.feed.head

    def frames_after(self, stream_id: str, limit: int) -> list[Frame] | None:
        """Up to ``limit`` buffered frames after ``stream_id``, oldest first; None when the
        buffer no longer reaches back to ``stream_id`` (read the stream instead)."""
        return self.feed.after(id_tuple(stream_id), limit)

    @property
    def reaches(self) -> str:
        """The oldest id the buffer can go on from (it holds every event after this one)."""
        return self.feed.base_id

    def woken(self) -> None:
        """The consumer is handling a wake-up: the next one may be sent."""
        self._woken_at = None

    async def wake(self) -> None:
        """Send a ``bullq.wake`` message to the consumer's channel, unless one sent less than
        :data:`REWAKE_AFTER_S` ago is still unanswered."""
        loop = asyncio.get_running_loop()
        if self._woken_at is not None and loop.time() - self._woken_at < REWAKE_AFTER_S:
            return
        self._woken_at = loop.time()
        try:
            await self.layer.send(self.channel, {"type": WAKE_TYPE})
        except ChannelFull:  # messages are waiting there; try again after the next read
            self._woken_at = None
        except Exception:
            self._woken_at = None
            logger.exception("waking events socket %s failed", self.channel)


class EventsHub:
    """One reader per queue (in this process and event loop), buffering for its sockets.

    Use :func:`get_hub` for the running loop's hub; consumers call :meth:`subscribe` on
    connect and :meth:`unsubscribe` on disconnect.
    """

    def __init__(self) -> None:
        self._feeds: dict[str, Feed] = {}
        self._lock = asyncio.Lock()

    def readers(self) -> dict[str, QueueEvents]:
        """The live readers by queue name (for tests and introspection)."""
        return {name: feed.reader for name, feed in self._feeds.items()}

    async def subscribe(self, queue: Any, layer: Any, channel: str) -> Subscription:
        """Start (or share) the reader of ``queue`` (a core Queue) for the consumer on
        ``channel`` of channel layer ``layer``.

        When this returns, the reader's position is fixed: every event appended after this
        call reaches the buffer, and the consumer is woken while it is behind it.
        """
        async with self._lock:
            feed = self._feeds.get(queue.name)
            if feed is None:
                feed = Feed(QueueEvents(queue, last_id=await last_stream_id(queue)))
                feed.task = asyncio.ensure_future(self._run(feed))
                self._feeds[queue.name] = feed
            subscription = Subscription(feed, layer, channel)
            subscription.position = feed.head
            feed.subscriptions.add(subscription)
            return subscription

    async def unsubscribe(self, subscription: Subscription) -> None:
        """Drop one subscription; the last one stops the reader."""
        async with self._lock:
            feed = subscription.feed
            feed.subscriptions.discard(subscription)
            name = feed.reader.queue.name
            if feed.subscriptions or self._feeds.get(name) is not feed:
                return
            del self._feeds[name]
        feed.reader.close()
        if feed.task is not None:
            feed.task.cancel()
            # the reader is gone either way: its end (a cancel or an error) says nothing more
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await feed.task

    async def _run(self, feed: Feed) -> None:
        reader = feed.reader
        while True:
            try:
                events = await reader.aread()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("events reader of queue %s failed; retrying", reader.queue.name)
                await asyncio.sleep(1.0)
                continue
            feed.append([encode_event(event) for event in events])
            await feed.wake_behind()  # after every read, so at least once a second


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, EventsHub] = weakref.WeakKeyDictionary()


def get_hub() -> EventsHub:
    """The :class:`EventsHub` of the running event loop (one per process in a server)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = EventsHub()
    return hub
