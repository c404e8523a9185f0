"""The admin's polling endpoints: the data the live pages render, as JSON.

A page whose events socket cannot open (a WSGI-only site, a proxy without WebSockets) polls
these; a live page reads the queue one after events, to redraw its job list, and every few
seconds for its workers. Each needs staff and ``django_bullq.view_bullqqueue``, as the pages.
The job endpoint answers the socket's ``snapshot`` frame (:mod:`django_bullq.live.snapshots`).
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from django.utils.text import Truncator

from .. import queues
from ..core.job import Job
from ..core.queue import Queue
from ..core.worker_clients import ClientLists
from ..live.snapshots import SNAPSHOT_LOGS, snapshot_frame
from . import data, display, unreachable
from .actions import JOB_ACTIONS, permitted
from .forms import JobListForm
from .views import ModelAdminBase, queue_or_404, require

#: Characters of a job list's name, progress and failure cells (the template's truncatechars).
NAME_CHARS, PROGRESS_CHARS, FAILURE_CHARS = 80, 40, 120


def overview_live_view(model_admin: ModelAdminBase, request: HttpRequest) -> JsonResponse:
    """The overview's figures.

    Returns:
        ``{"type": "overview", "queues": [{"name", "counts": {state: n}, "paused": bool,
        "workers": n, "latency": ms | None}]}`` for every known queue; a queue whose Redis
        does not answer is ``{"name", "error": "Redis unreachable: ..."}``.
    """
    require(request, "view_bullqqueue")
    rows: list[dict[str, Any]] = []
    clients = ClientLists()
    for name in queues.known_queue_names():
        queue = queues.queue_or_none(name)
        if queue is None:
            continue
        try:
            workers = len(data.workers(queue, clients))
            rows.append({"name": name, **_figures(queue), "workers": workers})
        except unreachable.DOWN as exc:
            rows.append({"name": name, "error": unreachable.reason(exc)})
    return JsonResponse({"type": "overview", "queues": rows})


def queue_live_view(model_admin: ModelAdminBase, request: HttpRequest, queue: str) -> JsonResponse:
    """One queue page's figures and job list, for the same ``state`` / ``page`` / filter as
    the page (a bad ``page`` reads page 1).

    Returns:
        ``{"type": "queue", "name", "counts", "paused", "latency": ms | None, "workers":
        [{"name", "addr", "age", "idle"}], "list": {"state", "page", "pages", "total",
        "selectable": bool, "jobs": [row]} | None}`` (None for a filtered page, whose list
        is not redrawn); a row is ``{"id", "name",
        "timestamp": ms, "attemptsMade", "priority", "progress": text, "failure": text}``
        as the page's table shows it. ``selectable`` is whether the user may act on jobs
        (the rows then get checkboxes).

    Raises:
        django.http.Http404: an invalid queue name or an unknown state.
    """
    require(request, "view_bullqqueue")
    q = queue_or_404(queue)
    query = JobListForm(request.GET)
    if not query.is_valid() and "state" in query.errors:
        raise Http404("unknown state")
    state = query.cleaned_data["state"]
    return JsonResponse(
        {
            "type": "queue",
            "name": q.name,
            **_figures(q),
            "workers": data.workers(q),
            # a filtered list is not redrawn: each redraw would repeat the filter's walk
            "list": None if query.job_filter().active else _list(request, q, state, query),
        }
    )


def _list(request: HttpRequest, q: Queue, state: str, query: JobListForm) -> dict[str, Any]:
    page = data.job_page(q, state, query.cleaned_data.get("page", 1))
    return {
        "state": state,
        "page": page.page,
        "pages": page.pages,
        "total": page.total,
        "selectable": bool(permitted(request.user, JOB_ACTIONS)),
        "jobs": [_row(job, state) for job in page.jobs],
    }


def job_live_view(
    model_admin: ModelAdminBase, request: HttpRequest, queue: str, job_id: str
) -> JsonResponse:
    """The job as a socket's ``snapshot`` frame, ``{"type": "snapshot", "id": None, "job":
    {...} | None}`` (None once the job is gone), with its attempt history as the page shows
    it: ``"attempts": [{"number": int | None, "outcome": "failed" | "completed", "type":
    str | None, "message", "trace"}]`` (:func:`~django_bullq.admin.display.attempt_history`,
    traces cut at ``data.MAX_SHOWN`` characters).

    Raises:
        django.http.Http404: an invalid queue name.
    """
    require(request, "view_bullqqueue")
    q = queue_or_404(queue)
    job = q.get_job(job_id)
    if job is None:
        return JsonResponse(snapshot_frame(None, None, None, []))
    state = q.get_job_state(job_id)
    frame = snapshot_frame(None, job, state, job.get_logs(-SNAPSHOT_LOGS, -1))
    frame["attempts"] = [
        {
            "number": a.number,
            "outcome": a.outcome,
            "type": a.type,
            "message": a.message,
            "trace": data.truncate(a.trace),
        }
        for a in display.attempt_history(job, state)
    ]
    return JsonResponse(frame)


def _figures(queue: Queue) -> dict[str, Any]:
    counts = queue.get_job_counts()
    return {
        "counts": {s: counts.get(s, 0) for s in data.ALL_STATES},
        "paused": queue.is_paused(),
        "latency": data.waiting_latency_ms(queue),
    }


def _row(job: Job, state: str) -> dict[str, Any]:
    progress = str(job.progress) if display.progress_reported(job) else ""
    return {
        "id": job.id,
        "name": Truncator(job.name).chars(NAME_CHARS),
        "timestamp": job.timestamp,
        "attemptsMade": job.attempts_made,
        "priority": job.priority,
        "progress": Truncator(progress).chars(PROGRESS_CHARS),
        "failure": Truncator(display.list_failure(job, state)).chars(FAILURE_CHARS),
    }
