"""WebSocket consumers streaming queue events (Django Channels); routes in ``routing.py``.

``ws/bullq/queues/<queue>/`` sends every event of a queue, ``ws/bullq/jobs/<queue>/<job id>/``
a snapshot of one job and then that job's events (plus ``gap`` notices). Both resume from
``?last_id=<stream id>``. Wire protocol: docs/events.md, "Over WebSockets (Channels)".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils.module_loading import import_string

from . import conf
from .bridge import event_payload, get_hub, group_name, id_tuple, last_stream_id, valid_stream_id
from .core.events import QueueEvents

#: WebSocket close codes for not allowed and bad request (name or last_id).
CLOSE_FORBIDDEN = 4403
CLOSE_BAD_REQUEST = 4400
#: No channel layer configured (``settings.CHANNEL_LAYERS``).
CLOSE_UNAVAILABLE = 1011
#: The permission of the default authorisation (``<app_label>.<codename>``).
VIEW_PERMISSION = "django_bullq.view_bullqqueue"
_BACKFILL_LIMIT = 100_000


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

    async def connect(self) -> None:
        try:
            names = _route_names(self.scope, self.marker, self.parts)
        except UnicodeDecodeError:
            names = None
        if not names:
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        queue_name, self.job_id = names[0], (names[1] if self.parts == 2 else None)
        user = self.scope.get("user")
        if not await database_sync_to_async(authorize)(user, queue_name, self.job_id):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        resume = (query.get("last_id") or [""])[0]
        if resume and not valid_stream_id(resume):
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        try:
            self.queue = conf.get_queue(queue_name)
        except Exception:  # noqa: BLE001 - a name the core rejects
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        if self.channel_layer is None:  # settings.CHANNEL_LAYERS is missing
            await self.close(code=CLOSE_UNAVAILABLE)
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

    async def snapshot(self) -> dict[str, Any]:
        """``{"type": "snapshot", "id": stream id, "job": {...} | None}`` of the followed job
        (``job_id``)."""
        job = await self.queue.aget_job(self.job_id)
        if job is None:
            return {"type": "snapshot", "id": self.last_id, "job": None}
        return {"type": "snapshot", "id": self.last_id, "job": {
            "id": job.id, "name": job.name, "state": await job.aget_state(),
            "progress": job.progress, "logs": await job.aget_logs(),
            "returnvalue": job.returnvalue, "failedReason": job.failed_reason,
            "attemptsMade": job.attempts_made, "timestamp": job.timestamp,
            "processedOn": job.processed_on, "finishedOn": job.finished_on}}

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

    async def bullq_event(self, message: dict[str, Any]) -> None:
        """Channel-layer handler of ``bullq.event`` messages from :mod:`django_bullq.bridge`."""
        payload = message["payload"]
        prev = message.get("prev")
        if prev and id_tuple(prev) > id_tuple(self.last_id):  # we lost messages: read them
            await self.replay(payload["id"])
        await self.forward(payload)

    async def disconnect(self, code: int) -> None:
        if self._joined:
            self._joined = False
            await self.channel_layer.group_discard(group_name(self.queue.name),
                                                   self.channel_name)
            await get_hub().release(self.queue.name)


class JobEventsConsumer(QueueEventsConsumer):
    """One job: a ``snapshot`` message first, then its events (and ``gap`` notices)."""

    marker = "/ws/bullq/jobs/"
    parts = 2
