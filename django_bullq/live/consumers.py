"""WebSocket consumers streaming queue events (Django Channels); routes in ``routing.py``.

``ws/bullq/queues/<queue>/`` sends every event of a queue, ``ws/bullq/jobs/<queue>/<job id>/``
a snapshot of one job and then that job's events (plus ``gap`` notices). Both resume from
``?last_id=<stream id>``. Queue sockets opened with ``?counts=1`` also get ``counts`` frames
(on connect, then a quarter second after events); a client may ask for a fresh ``snapshot`` /
``counts`` by sending ``{"type": "snapshot"}`` / ``{"type": "counts"}``.
Wire protocol: docs/events.md, "Over WebSockets (Channels)".
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils.module_loading import import_string

from .. import conf
from ..core.events import GAP, QueueEvent, QueueEvents, next_id
from .bridge import (
    Frame,
    Subscription,
    encode_event,
    get_hub,
    id_tuple,
    last_stream_id,
    valid_stream_id,
)
from .snapshots import SNAPSHOT_LOGS, snapshot_frame

logger = logging.getLogger("django_bullq.events")

#: WebSocket close codes for not allowed and bad request (name or last_id).
CLOSE_FORBIDDEN = 4403
CLOSE_BAD_REQUEST = 4400
#: No channel layer configured (``settings.CHANNEL_LAYERS``).
CLOSE_UNAVAILABLE = 1011
#: The permission of the default authorisation (``<app_label>.<codename>``).
VIEW_PERMISSION = "django_bullq.view_bullqqueue"
#: Frames one wake-up sends at most before the consumer handles its other messages (it
#: wakes itself again to go on), and frames taken per step (buffer slice or stream read).
CATCH_UP_FRAMES = 2_000
CATCH_UP_STEP = 500
#: Seconds a ``counts`` frame waits after an event, so a burst of events costs one read.
COUNTS_DELAY_S = 0.25
#: Longest request frame a client may send (characters); longer ones are ignored.
MAX_REQUEST_CHARS = 1024


def default_authorizer(user: Any, queue_name: str, job_id: str | None) -> bool:
    """Active staff users holding ``django_bullq.view_bullqqueue`` (superusers hold every perm)."""
    return bool(
        getattr(user, "is_active", False)
        and getattr(user, "is_staff", False)
        and user.has_perm(VIEW_PERMISSION)
    )


def authorize(user: Any, queue_name: str, job_id: str | None) -> bool:
    """Whether ``user`` may follow the queue (``job_id`` None) or one of its jobs.

    Anonymous users are always refused. ``BULLQ["EVENTS_AUTHORIZER"]`` (a dotted path to
    ``f(user, queue_name, job_id) -> bool``) replaces :func:`default_authorizer`; it may call
    it to keep staff access. Runs synchronously (may use the ORM).
    """
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    path = conf.get_config().get("EVENTS_AUTHORIZER")
    check = import_string(path) if path else default_authorizer
    return bool(check(user, queue_name, job_id))


def _route_names(scope: Mapping[str, Any], marker: str, parts: int) -> list[str] | None:
    """Names from the still-encoded ``raw_path`` (so ``%2F`` in a queue name is no separator).

    Falls back to the router's kwargs (decoded path) when the server gives no raw_path.
    """
    raw = scope.get("raw_path")
    if raw:
        data = raw if isinstance(raw, bytes) else str(raw).encode("utf-8")
        data = data.split(b"?", 1)[0]
        at = data.find(marker.encode("ascii"))
        if at >= 0:
            segments = data[at + len(marker) :].rstrip(b"/").split(b"/")
            if len(segments) == parts:
                return [unquote_to_bytes(s).decode("utf-8") for s in segments]
    kwargs = scope.get("url_route", {}).get("kwargs", {})
    names = [kwargs.get("queue")] + ([kwargs.get("job_id")] if parts == 2 else [])
    return names if all(isinstance(n, str) and n for n in names) else None


class QueueEventsConsumer(AsyncJsonWebsocketConsumer):
    """Every event of one queue, in stream order, resumable with ``?last_id=``."""

    marker = "/ws/bullq/queues/"
    parts = 1

    queue: Any = None
    job_id: str | None = None
    #: The id of the newest event sent (or skipped, of another job); frames only go forward.
    last_id: str = "0-0"
    _subscription: Subscription | None = None
    #: ``?counts=1``: send ``counts`` frames (on connect, then after events, debounced).
    want_counts = False
    _counts_task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Run the consumer; whatever ends it (a crash included), drop its subscription, so no
        events reader outlives its sockets."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._leave()

    async def refuse(self, code: int) -> None:
        """Accept, then close with ``code``: closing during the handshake would reach the
        browser as an HTTP 403 and close code 1006, which clients cannot tell from a network
        error (and would retry forever)."""
        await self.accept()
        await self.close(code=code)

    async def connect(self) -> None:
        try:
            names = _route_names(self.scope, self.marker, self.parts)
        except UnicodeDecodeError:
            names = None
        if not names:
            await self.refuse(CLOSE_BAD_REQUEST)
            return
        queue_name, self.job_id = names[0], (names[1] if self.parts == 2 else None)
        user = self.scope.get("user")
        if not await database_sync_to_async(authorize)(user, queue_name, self.job_id):
            await self.refuse(CLOSE_FORBIDDEN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        resume = (query.get("last_id") or [""])[0]
        self.want_counts = self.job_id is None and (query.get("counts") or [""])[0] == "1"
        if resume and not valid_stream_id(resume):
            await self.refuse(CLOSE_BAD_REQUEST)
            return
        try:
            self.queue = conf.get_queue(queue_name)
        except Exception:  # noqa: BLE001 - a name the core rejects
            await self.refuse(CLOSE_BAD_REQUEST)
            return
        if self.channel_layer is None:  # settings.CHANNEL_LAYERS is missing
            await self.refuse(CLOSE_UNAVAILABLE)
            return
        # subscribe first, then fix positions: nothing appended from here on can be missed
        self._subscription = await get_hub().subscribe(
            self.queue, self.channel_layer, self.channel_name
        )
        await self.accept()
        position = await last_stream_id(self.queue)
        self.last_id = position
        if self.job_id is not None:
            await self.send_json(await self.snapshot())
        if resume and id_tuple(resume) < id_tuple(position):  # a newer id: nothing to replay
            self.last_id = resume
        await self.catch_up()
        if self.want_counts:
            await self.send_json(await self.counts())

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """Client frames: short JSON text; binary, long or malformed frames are ignored."""
        if text_data is None or len(text_data) > MAX_REQUEST_CHARS:
            return
        try:
            content = json.loads(text_data)
        except (ValueError, RecursionError):
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Client requests: ``{"type": "snapshot"}`` (job sockets) answers a fresh snapshot,
        ``{"type": "counts"}`` (queue sockets) fresh counts; anything else is ignored."""
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "snapshot" and self.job_id is not None:
            await self.send_json(await self.snapshot())
        elif kind == "counts" and self.job_id is None:
            await self.send_json(await self.counts())

    async def counts(self) -> dict[str, Any]:
        """``{"type": "counts", "counts": {state: n}, "paused": bool}`` of the queue now
        (one MULTI pipeline, as ``Queue.get_job_counts``; BullMQ ``getJobCounts``)."""
        counts = await self.queue.aget_job_counts()
        return {"type": "counts", "counts": counts, "paused": await self.queue.ais_paused()}

    def _schedule_counts(self) -> None:
        if self.want_counts and (self._counts_task is None or self._counts_task.done()):
            self._counts_task = asyncio.ensure_future(self._send_counts_later())

    async def _send_counts_later(self) -> None:
        await asyncio.sleep(COUNTS_DELAY_S)
        await self.send_json(await self.counts())

    async def snapshot(self) -> dict[str, Any]:
        """``{"type": "snapshot", "id": stream id, "job": {...} | None}`` of the followed job
        (``job_id``)."""
        job = await self.queue.aget_job(self.job_id)
        if job is None:
            return snapshot_frame(self.last_id, None, None, [])
        state = await job.aget_state()
        logs = await job.aget_logs(-SNAPSHOT_LOGS, -1)
        return snapshot_frame(self.last_id, job, state, logs)

    async def catch_up(self) -> None:
        """Send the events after ``last_id`` that the queue's feed has read, in stream order:
        from the feed's buffer, or from the stream while ``last_id`` is older than the buffer
        (a resume, a socket that fell behind), a ``gap`` first if entries were trimmed.

        Sends at most :data:`CATCH_UP_FRAMES` frames, then wakes itself to go on after the
        messages waiting for it (client requests)."""
        subscription = self._subscription
        assert subscription is not None
        sent = 0
        while sent < CATCH_UP_FRAMES and subscription.behind(self.last_id):
            frames = subscription.frames_after(self.last_id, CATCH_UP_STEP)
            if frames is None:
                frames = await self.read_stream(CATCH_UP_STEP) or [
                    self.lost_until(subscription.reaches)
                ]
            if not frames:
                break
            for frame in frames:
                await self.forward(frame)
            sent += len(frames)
        subscription.seen(self.last_id)
        if subscription.behind(self.last_id):
            await subscription.wake()

    async def read_stream(self, count: int) -> list[Frame]:
        """Up to ``count`` frames after ``last_id`` read from the stream itself (a ``gap``
        first when entries after ``last_id`` were trimmed)."""
        # "0-0" (the stream was empty on connect) would read as "whatever is left, no gap"
        after = "0-1" if id_tuple(self.last_id) == (0, 0) else self.last_id
        reader = QueueEvents(self.queue, last_id=after, block_ms=1, count=count)
        return [encode_event(event) for event in await reader.aread()]

    def lost_until(self, stream_id: str) -> Frame:
        """The ``gap`` frame of the entries after ``last_id`` up to ``stream_id``: gone from
        the stream (deleted with it, e.g. by an obliterate) and no longer buffered."""
        first = next_id(self.last_id)
        logger.warning(
            "events %s .. %s of queue %s are gone from the stream before this socket sent them",
            first,
            stream_id,
            self.queue.name,
        )
        return encode_event(QueueEvent(GAP, stream_id, None, {"first": first, "last": stream_id}))

    async def forward(self, frame: Frame) -> None:
        """Send one event unless already sent (ids only grow) or of another job."""
        if frame.key <= id_tuple(self.last_id):
            return
        self.last_id = frame.id
        if self.job_id is not None and frame.event != "gap" and frame.job_id != self.job_id:
            return
        await self.send(text_data=frame.text)
        self._schedule_counts()

    async def bullq_wake(self, message: dict[str, Any]) -> None:
        """Channel-layer handler of ``bullq.wake`` messages from :mod:`django_bullq.live.bridge`:
        send what the feed has read since ``last_id``."""
        if self._subscription is not None:
            self._subscription.woken()
            await self.catch_up()

    async def disconnect(self, code: int) -> None:
        await self._leave()

    async def _leave(self) -> None:
        """Stop the counts timer, drop the subscription (idempotent)."""
        if self._counts_task is not None:
            self._counts_task.cancel()
            self._counts_task = None
        if self._subscription is not None:
            subscription, self._subscription = self._subscription, None
            await get_hub().unsubscribe(subscription)


class UnknownRouteConsumer(AsyncJsonWebsocketConsumer):
    """Any other ``ws/bullq/...`` path (e.g. one a browser normalised): closed with 4400."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_BAD_REQUEST)


class JobEventsConsumer(QueueEventsConsumer):
    """One job: a ``snapshot`` message first, then its events (and ``gap`` notices)."""

    marker = "/ws/bullq/jobs/"
    parts = 2
