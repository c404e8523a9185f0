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
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils.module_loading import import_string

from . import conf
from .bridge import (
    event_payload,
    fit_frame,
    get_hub,
    group_name,
    id_tuple,
    last_stream_id,
    valid_stream_id,
)
from .core.events import QueueEvents

#: WebSocket close codes for not allowed and bad request (name or last_id).
CLOSE_FORBIDDEN = 4403
CLOSE_BAD_REQUEST = 4400
#: No channel layer configured (``settings.CHANNEL_LAYERS``).
CLOSE_UNAVAILABLE = 1011
#: The permission of the default authorisation (``<app_label>.<codename>``).
VIEW_PERMISSION = "django_bullq.view_bullqqueue"
_BACKFILL_LIMIT = 100_000
#: Seconds a ``counts`` frame waits after an event, so a burst of events costs one read.
COUNTS_DELAY_S = 0.25
#: Newest log lines a snapshot carries.
SNAPSHOT_LOGS = 200
#: Longest request frame a client may send (characters); longer ones are ignored.
MAX_REQUEST_CHARS = 1024


def default_authorizer(user: Any, queue_name: str, job_id: str | None) -> bool:
    """Active staff users holding ``django_bullq.view_bullqqueue`` (superusers hold every perm)."""
    return bool(getattr(user, "is_active", False) and getattr(user, "is_staff", False)
                and user.has_perm(VIEW_PERMISSION))


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
            segments = data[at + len(marker):].rstrip(b"/").split(b"/")
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
    last_id: str = "0-0"
    _joined = False
    #: ``?counts=1``: send ``counts`` frames (on connect, then after events, debounced).
    want_counts = False
    _counts_task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Run the consumer; whatever ends it (a crash included), leave the group and release
        the events reader, so no reader outlives its sockets."""
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
        # join first, then fix positions: nothing appended from here on can be missed
        await self.channel_layer.group_add(group_name(queue_name), self.channel_name)
        await get_hub().acquire(self.queue)
        self._joined = True
        await self.accept()
        position = await last_stream_id(self.queue)
        self.last_id = position
        if self.job_id is not None:
            await self.send_json(await self.snapshot())
        if resume and id_tuple(resume) < id_tuple(position):  # a newer id: nothing to replay
            self.last_id = resume
            await self.replay(position)
            if id_tuple(position) > id_tuple(self.last_id):
                self.last_id = position
        if self.want_counts:
            await self.send_json(await self.counts())

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None,
                      **kwargs: Any) -> None:
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
            return {"type": "snapshot", "id": self.last_id, "job": None}
        return fit_frame({"type": "snapshot", "id": self.last_id, "job": {
            "id": job.id, "name": job.name, "state": await job.aget_state(),
            "progress": job.progress, "logs": await job.aget_logs(-SNAPSHOT_LOGS, -1),
            "returnvalue": job.returnvalue, "failedReason": job.failed_reason,
            "attemptsMade": job.attempts_made, "timestamp": job.timestamp,
            "processedOn": job.processed_on, "finishedOn": job.finished_on}},
            "job", ("logs",))

    async def replay(self, until: str) -> None:
        """Send the events after ``last_id`` up to ``until`` still in the stream, a ``gap``
        first if some were trimmed (a resume, or messages the channel layer dropped)."""
        reader = QueueEvents(self.queue, last_id=self.last_id, block_ms=1)
        limit = id_tuple(until)
        sent = 0
        while sent < _BACKFILL_LIMIT:
            events = await reader.aread()
            if not events:
                return
            for event in events:
                if id_tuple(event.id) > limit:
                    return
                await self.forward(event_payload(event))
                sent += 1
            if id_tuple(reader.last_id) >= limit:
                return

    async def forward(self, payload: dict[str, Any]) -> None:
        """Send one event unless already sent (ids only grow) or of another job."""
        if id_tuple(payload["id"]) <= id_tuple(self.last_id):
            return
        self.last_id = payload["id"]
        if self.job_id is not None and payload["event"] != "gap" \
                and payload["jobId"] != self.job_id:
            return
        await self.send_json(payload)
        self._schedule_counts()

    async def bullq_event(self, message: dict[str, Any]) -> None:
        """Channel-layer handler of ``bullq.event`` messages from :mod:`django_bullq.bridge`."""
        payload = message["payload"]
        prev = message.get("prev")
        if prev and id_tuple(prev) > id_tuple(self.last_id):  # we lost messages: read them
            await self.replay(payload["id"])
        await self.forward(payload)

    async def disconnect(self, code: int) -> None:
        await self._leave()

    async def _leave(self) -> None:
        """Stop the counts timer, leave the group, release the reader (idempotent)."""
        if self._counts_task is not None:
            self._counts_task.cancel()
            self._counts_task = None
        if self._joined:
            self._joined = False
            await get_hub().release(self.queue.name)
            await self.channel_layer.group_discard(group_name(self.queue.name),
                                                   self.channel_name)


class UnknownRouteConsumer(AsyncJsonWebsocketConsumer):
    """Any other ``ws/bullq/...`` path (e.g. one a browser normalised): closed with 4400."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_BAD_REQUEST)


class JobEventsConsumer(QueueEventsConsumer):
    """One job: a ``snapshot`` message first, then its events (and ``gap`` notices)."""

    marker = "/ws/bullq/jobs/"
    parts = 2
