"""The queue admin's pages: overview, one queue's job list, one job, and the action POSTs.

Each view takes the :class:`~django_bullq.admin.options.QueueAdmin` serving it first (its
site's context and the placeholder model's options); ``QueueAdmin.get_urls`` binds it. The
other page modules (``job_views``, ``schedule_views``, ``live``) build on its helpers:
:func:`require`, :func:`has_perms`, :func:`queue_or_404`, :func:`page_context`,
:func:`log_action`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.http import urlencode

from .. import queues
from ..core.errors import BullqError
from ..core.queue import Queue
from ..core.worker_clients import ClientLists
from ..models import BullqQueue
from . import (
    data,
    display,
    filter_form,
    flow_tree,
    listing,
    metrics,
    search,
    server,
    unreachable,
)
from .actions import (
    ACTIONS,
    JOB_ACTIONS,
    QUEUE_ACTIONS,
    Action,
    Summary,
    job_actions_for,
    perform,
    permitted,
)
from .confirm import CLEAN_CHOICES, what_goes
from .forms import DEFAULT_STATE, JobListForm, SelectionForm, errors_text

APP = "django_bullq"

if TYPE_CHECKING:  # generic in django-stubs only
    ModelAdminBase = admin.ModelAdmin[BullqQueue]
else:
    ModelAdminBase = admin.ModelAdmin


def overview_view(model_admin: ModelAdminBase, request: HttpRequest) -> HttpResponse:
    """Overview: every known queue with counts per state, paused flag, workers, latency."""
    require(request, "view_bullqqueue")
    rows = []
    clients = ClientLists()
    for name in queues.known_queue_names():
        queue = queues.queue_or_none(name)
        if queue is None:
            continue
        try:
            counts = queue.get_job_counts()
            rows.append(
                {
                    "name": name,
                    "counts": {s: counts.get(s, 0) for s in data.ALL_STATES},
                    "paused": queue.is_paused(),
                    "workers": len(data.workers(queue, clients)),
                    "latency": data.waiting_latency_ms(queue),
                    "spark": metrics.sparkline(queue),  # issue 15 item 5
                }
            )
        except unreachable.DOWN as exc:  # listed as such, beside the queues it can reach
            rows.append({"name": name, "error": unreachable.reason(exc)})
    return TemplateResponse(
        request,
        "admin/django_bullq/overview.html",
        page_context(
            model_admin,
            request,
            "Queues",
            rows=rows,
            states=data.ALL_STATES,
            servers=server.all_facts(),  # item 7: Redis facts per connection
            live_url=reverse("admin:django_bullq_live"),
        ),
    )


def queue_view(model_admin: ModelAdminBase, request: HttpRequest, queue: str) -> HttpResponse:
    """One queue: counts, workers, throughput chart, a page of jobs of one state, filters.

    Without a filter the list pages through the state (``page``); with one
    (:mod:`django_bullq.admin.search`) it shows up to a page of matches from ``cursor`` on,
    from the job index or a bounded walk of Redis (:mod:`django_bullq.admin.listing`). A bad
    ``page`` shows page 1, a bad filter field is left out, each with a message saying why.

    Raises:
        django.http.Http404: no valid queue name, or an unknown ``state``.
    """
    require(request, "view_bullqqueue")
    q = queue_or_404(queue)
    query = JobListForm(request.GET)
    if not query.is_valid():
        if "state" in query.errors:
            raise Http404("unknown state")
        messages.warning(request, f"Left out: {errors_text(query)}")
    state = query.cleaned_data["state"]
    flt = query.job_filter()
    kept = {k: v for k, v in filter_form.query_items(request.GET).items() if k not in query.errors}
    found = page = None
    if flt.active:
        found = listing.find(q, state, flt, cursor=query.cleaned_data.get("cursor", 0))
    else:
        page = data.job_page(q, state, query.cleaned_data.get("page", 1))
    raw_counts = q.get_job_counts()
    job_actions = permitted(request.user, JOB_ACTIONS)
    return TemplateResponse(
        request,
        "admin/django_bullq/queue.html",
        page_context(
            model_admin,
            request,
            f"Queue {queue}",
            queue=q,
            counts={s: raw_counts.get(s, 0) for s in data.ALL_STATES},
            state=state,
            page=page,
            found=found,
            jobs=found.jobs if found else page.jobs if page else [],
            filter_values=kept,
            filter_qs=urlencode(kept),
            time_label="finished" if state in search.FINISHED_STATES else "created",
            states=data.ALL_STATES,
            job_actions=job_actions,
            # what Enter in the list's form posts to: the first button
            default_action=next(iter(job_actions), None),
            page_size=data.PAGE_SIZE,
            can_add_job=has_perms(request, "add_job"),
            live_url=reverse("admin:django_bullq_queue_live", kwargs={"queue": q.name})
            + "?"
            + urlencode({"state": state, "page": page.page if page else 1, **kept}),
            **_queue_facts(request, q),
        ),
    )


def job_flow_part_view(
    model_admin: ModelAdminBase, request: HttpRequest, queue: str, job_id: str
) -> HttpResponse:
    """The job page's flow tree alone (``flow_tree.flow_html``), which the page redraws every
    3 s (bullq-refresh.js): the socket follows this job only, not the rest of its flow.
    Empty once the job is gone or has no flow.

    Raises:
        django.http.Http404: an invalid queue name.
    """
    require(request, "view_bullqqueue")
    q = queue_or_404(queue)
    job = q.get_job(job_id)
    flow = flow_tree.flow_view(q, job) if job is not None else None
    return HttpResponse(flow_tree.flow_html(flow) if flow is not None else "")


def job_view(
    model_admin: ModelAdminBase, request: HttpRequest, queue: str, job_id: str
) -> HttpResponse:
    """One job: data, options, attempts, failure, logs, progress, return value, relations."""
    require(request, "view_bullqqueue")
    q = queue_or_404(queue)
    job = q.get_job(job_id)
    if job is None:
        raise Http404("no such job")
    parent = None
    if job.parent_key:
        parent = data.split_job_key(job.parent_key, q.prefix)
    children: list[tuple[str, str, str]] = []
    try:
        deps = job.get_dependencies()
    except BullqError:
        deps = {}
    for key in deps.get("all", [])[:500]:
        split = data.split_job_key(key, q.prefix)
        if split:
            children.append((split[0], split[1], key))
    progress = job.progress if isinstance(job.progress, int | float) else None
    state = q.get_job_state(job_id)
    flow = flow_tree.flow_view(q, job)
    return TemplateResponse(
        request,
        "admin/django_bullq/job.html",
        page_context(
            model_admin,
            request,
            f"Job {job_id}",
            queue=q,
            job=job,
            state=state,
            data_json=data.pretty(job.data),
            opts_json=data.pretty(job.opts),
            returnvalue_json=data.pretty(job.returnvalue),
            progress_json=data.pretty(job.progress),
            progress=progress,
            progress_reported=display.progress_reported(job),
            waited_ms=display.waited_ms(job),
            ran_ms=display.ran_ms(job),
            attempts=[
                dataclasses.replace(a, trace=data.truncate(a.trace))
                for a in display.attempt_history(job, state)
            ],
            logs=job.get_logs(-data.MAX_LOGS, -1),
            parent=parent,
            children=children,
            flow_html=flow_tree.flow_html(flow) if flow is not None else None,
            flow_part_url=reverse(
                "admin:django_bullq_job_flow", kwargs={"queue": q.name, "job_id": job_id}
            ),
            failed_reason=data.truncate(display.failure_text(job)),
            attempts_allowed=max(1, job.attempts or 0),  # BullMQ: attempts 0 means one run
            can_edit_retry=state == "failed" and has_perms(request, "add_job", "retry_job"),
            # every job action the user may run; the page shows those of the job's state
            # (and the live page those of its next state)
            job_actions=permitted(request.user, JOB_ACTIONS),
            state_actions=permitted(request.user, job_actions_for(state)),
            live_url=reverse(
                "admin:django_bullq_job_live", kwargs={"queue": q.name, "job_id": job_id}
            ),
        ),
    )


def action_view(
    model_admin: ModelAdminBase, request: HttpRequest, queue: str, action: str
) -> HttpResponse:
    """POST-only action: without ``confirm=yes`` renders a confirmation page, with it acts.

    Job actions take ``ids`` (repeated) or ``select_all=1`` with ``state`` (and the filter's
    fields: every job the filter matches, at most
    :data:`~django_bullq.admin.listing.MAX_MATCHING` per confirmation, acted on one by one);
    queue actions take their own fields (``grace_s`` and
    ``clean_state`` for clean, ``delayed`` for drain, ``force`` for obliterate). Invalid
    fields answer with a message and the queue page, the action not run.

    Raises:
        django.core.exceptions.PermissionDenied: no view permission or no permission for
            this action.
        django.http.Http404: an unknown action or an invalid queue name.
    """
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    require(request, "view_bullqqueue")
    act = ACTIONS.get(action)
    if act is None:
        raise Http404("unknown action")
    require(request, act.permission)
    q = queue_or_404(queue)
    selection = SelectionForm(request.POST)
    if not selection.is_valid():
        state = selection.cleaned_data.get("state", DEFAULT_STATE)
        return _refuse(request, act, q, state, errors_text(selection))
    state = selection.cleaned_data["state"]
    ids, select_all, matching = _targets(act, selection)
    back = _queue_url(q, state, filter_form.query_items(request.POST))
    if act.on_jobs and not ids and not select_all and matching is None:
        messages.warning(request, "No jobs selected.")
        return HttpResponseRedirect(back)
    if not selection.cleaned_data["confirm"]:
        return _confirm_page(
            model_admin, request, act, q, state, ids, select_all=select_all, flt=matching
        )
    form = act.form(request.POST)
    if not form.is_valid():
        return _refuse(request, act, q, state, errors_text(form))
    try:
        ids, summary = _act(act, q, form, state, ids, select_all=select_all, matching=matching)
    except (BullqError, ValueError, OverflowError) as exc:
        return _refuse(request, act, q, state, str(exc))
    _report(request, act, q, ids, summary, select_all=select_all or matching is not None)
    if act.leaves_queue:
        return HttpResponseRedirect(reverse("admin:django_bullq_bullqqueue_changelist"))
    return HttpResponseRedirect(back)


def _act(
    act: Action,
    q: Queue,
    form: Any,
    state: str,
    ids: list[str],
    *,
    select_all: bool,
    matching: search.JobFilter | None,
) -> tuple[list[str], Summary]:
    """Run a confirmed action; with ``matching``, on every job the filter matches now."""
    if matching is not None:
        ids = listing.matching_ids(q, state, matching)
    summary = perform(act, q, form, state, ids, select_all=select_all)
    if matching is not None:
        summary.text = (
            f"every {state} job matching {filter_form.describe(matching)}: {summary.text}"
        )
    return ids, summary


def _targets(
    act: Action, selection: SelectionForm
) -> tuple[list[str], bool, search.JobFilter | None]:
    """What a job action acts on: ``(ids, select_all, filter)``; ``filter`` is set (and
    ``select_all`` False) for "every job matching the filter", the ids then found on confirm."""
    cleaned = selection.cleaned_data
    flt = selection.job_filter()
    if act.on_jobs and cleaned["select_all"] and flt.active:
        return [], False, flt
    return cleaned["ids"], cleaned["select_all"], None


def _confirm_page(
    model_admin: ModelAdminBase,
    request: HttpRequest,
    act: Action,
    q: Queue,
    state: str,
    ids: list[str],
    *,
    select_all: bool,
    flt: search.JobFilter | None,
) -> TemplateResponse:
    """The confirmation; ``flt`` (an "every matching job" action) shows how many match now."""
    if flt is not None:
        count = listing.count_matching(q, state, flt)
    else:
        count = q.get_job_counts(state)[state] if select_all else len(ids)
    return TemplateResponse(
        request,
        "admin/django_bullq/confirm.html",
        page_context(
            model_admin,
            request,
            f"{act.label}: are you sure?",
            queue=q,
            action=act.name,
            label=act.label,
            ids=ids,
            select_all=select_all,
            state=state,
            post=request.POST,
            is_job_action=act.on_jobs,
            danger=act.danger,
            goes=what_goes(act, q),
            clean_choices=CLEAN_CHOICES,
            count=count,
            matching=flt is not None,
            max_matching=listing.MAX_MATCHING,
            filter_values=filter_form.query_items(request.POST),
        ),
    )


def _report(
    request: HttpRequest,
    act: Action,
    q: Queue,
    ids: list[str],
    summary: Summary,
    *,
    select_all: bool,
) -> None:
    """Log the action in the admin's history and say its result as a message."""
    target = q.name if select_all or not act.on_jobs else f"{q.name} / {', '.join(ids[:20])}"
    log_action(request, f"queue {target}", f"{act.label}: {summary.text}", act.flag)
    if summary.errors or summary.nothing:  # not a success: say it in the warning's colour
        messages.warning(request, f"{act.label}: {summary.text}")
    else:
        messages.success(request, f"{act.label}: {summary.text}")


# --- helpers ------------------------------------------------------------------------------


def require(request: HttpRequest, codename: str) -> None:
    """Raise PermissionDenied unless the user has ``django_bullq.<codename>``."""
    user: Any = request.user  # admin users have has_perm; AbstractBaseUser does not declare it
    if not user.has_perm(f"{APP}.{codename}"):
        raise PermissionDenied


def has_perms(request: HttpRequest, *codenames: str) -> bool:
    """True when the user has every ``django_bullq.<codename>``."""
    user: Any = request.user
    return all(user.has_perm(f"{APP}.{codename}") for codename in codenames)


def queue_or_404(name: str) -> Queue:
    """The queue named ``name``. Raises Http404 for a name ``Queue`` refuses."""
    queue = queues.queue_or_none(name)
    if queue is None:
        raise Http404("invalid queue name")
    return queue


def _queue_url(queue: Queue, state: str, kept: dict[str, str] | None = None) -> str:
    """The queue page of ``state``, with the filter fields ``kept``."""
    url = reverse("admin:django_bullq_queue", kwargs={"queue": queue.name})
    return url + "?" + urlencode({"state": state, **(kept or {})})


def _refuse(
    request: HttpRequest, act: Action, queue: Queue, state: str, why: str
) -> HttpResponseRedirect:
    """Back to the queue page with ``"<label> failed: <why>"``; nothing was logged."""
    messages.error(request, f"{act.label} failed: {why}")
    return HttpResponseRedirect(_queue_url(queue, state))


def _queue_facts(request: HttpRequest, q: Queue) -> dict[str, Any]:
    """The queue page's header: paused, workers, latency, chart and queue actions."""
    queue_actions = permitted(request.user, QUEUE_ACTIONS)
    return {
        "paused": q.is_paused(),
        "workers": data.workers(q),
        "latency": data.waiting_latency_ms(q),
        "chart": data.throughput_bars(q),
        "queue_actions": {n: a for n, a in queue_actions.items() if not a.danger},
        "danger_actions": {n: a for n, a in queue_actions.items() if a.danger},
    }


def page_context(
    model_admin: ModelAdminBase, request: HttpRequest, title: str, **extra: Any
) -> dict[str, Any]:
    """The template context of a queue admin page: the admin site's, the page ``title``, the
    live script's settings, then ``extra``."""
    ctx = dict(
        model_admin.admin_site.each_context(request),
        title=title,
        opts=model_admin.model._meta,
        app_label=APP,
        events_js=_events_js(),
        # how bullq-events.js writes times and durations (as display.py does)
        bullq_tz=timezone.get_current_timezone_name(),
        bullq_decimal=formats.get_format("DECIMAL_SEPARATOR"),
    )
    ctx.update(extra)
    return ctx


def log_action(request: HttpRequest, repr_: str, message: str, flag: int) -> None:
    """Write the admin's LogEntry of an operator action (``flag``: ADDITION, CHANGE or
    DELETION; ``repr_`` names what it acted on, e.g. ``queue/job id``)."""
    LogEntry.objects.create(
        user_id=request.user.pk,
        content_type_id=ContentType.objects.get_for_model(BullqQueue, for_concrete_model=False).pk,
        object_id=repr_[:255],
        object_repr=repr_[:200],
        action_flag=flag,
        change_message=message,
    )


@functools.cache
def _events_js() -> str | None:
    """Path of ``django_bullq/js/bullq-events.js`` when staticfiles can find it, else None."""
    try:
        from django.apps import apps

        if apps.is_installed("django.contrib.staticfiles"):
            from django.contrib.staticfiles import finders

            if finders.find("django_bullq/js/bullq-events.js"):
                return "django_bullq/js/bullq-events.js"
    except Exception:  # noqa: BLE001 - live updates are optional
        pass
    return None


@receiver(setting_changed)
def _forget_events_js(*, setting: str, **kwargs: Any) -> None:
    """Look for the script again when a test overrides the apps or the static files."""
    if setting in ("INSTALLED_APPS", "STATICFILES_DIRS", "STATICFILES_FINDERS"):
        _events_js.cache_clear()
