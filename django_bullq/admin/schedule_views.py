"""The Schedules page: every job scheduler of every known queue, and its actions.

Pages (``QueueAdmin.get_urls``): the list (``schedules/``, ``?queue=`` for one queue), the
create and edit forms, and one POST per action (pause, resume, run now, remove). Each action
needs its permission (``change_scheduler``, ``run_scheduler``, ``remove_scheduler``), takes
CSRF, writes a ``LogEntry`` as the queue actions do, and remove asks first.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin.models import ADDITION, CHANGE, DELETION
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from .. import queues
from ..core.errors import BullqError
from ..core.queue import Queue
from ..core.scheduler import ITERATION_OPTS, JobScheduler, upsert_call
from ..core.serialization import loads_str
from ..producer.registry import registry
from . import schedules, unreachable
from .job_forms import task_data_error
from .views import (
    ModelAdminBase,
    has_perms,
    log_action,
    page_context,
    queue_or_404,
    require,
)

#: Scheduler actions by URL slug: ``(permission, label, LogEntry flag, asks first)``.
SCHEDULER_ACTIONS: dict[str, tuple[str, str, int, bool]] = {
    "pause": ("change_scheduler", "Pause", CHANGE, False),
    "resume": ("change_scheduler", "Resume", CHANGE, False),
    "run": ("run_scheduler", "Run now", ADDITION, False),
    "remove": ("remove_scheduler", "Remove", DELETION, True),
}


def _list_url(queue: str | None = None) -> str:
    url = reverse("admin:django_bullq_schedules")
    return url + "?" + _query(queue) if queue else url


def _query(queue: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"queue": queue})


def schedules_view(model_admin: ModelAdminBase, request: HttpRequest) -> HttpResponse:
    """Every scheduler of every known queue (or of ``?queue=``), soonest next run first; the
    page redraws its tables from :func:`schedules_part_view` every 5 s (bullq-refresh.js).

    Raises:
        django.http.Http404: ``queue`` is not a valid queue name.
    """
    require(request, "view_bullqqueue")
    context = _sections(request)
    query = f"?{_query(context['only'])}" if context["only"] else ""
    return TemplateResponse(
        request,
        "admin/django_bullq/schedules.html",
        page_context(
            model_admin,
            request,
            "Job schedulers",
            events_js=None,  # the socket carries no scheduler changes: the part is redrawn
            part_url=reverse("admin:django_bullq_schedules_part") + query,
            **context,
        ),
    )


def schedules_part_view(model_admin: ModelAdminBase, request: HttpRequest) -> HttpResponse:
    """The Schedules page's tables alone (same ``?queue=``), as the page draws them.

    Raises:
        django.http.Http404: ``queue`` is not a valid queue name.
    """
    require(request, "view_bullqqueue")
    return TemplateResponse(request, "admin/django_bullq/schedules_part.html", _sections(request))


def _sections(request: HttpRequest) -> dict[str, Any]:
    """The tables' context: ``sections`` (queue and rows), ``empty_queues``, ``only`` (the
    ``?queue=`` or None), ``allowed`` (the scheduler actions the user may run)."""
    only = request.GET.get("queue") or None
    if only is not None:
        names = [queue_or_404(only).name]
    else:
        names = sorted(set(queues.known_queue_names()) | {q for q, _ in schedules.declared_ids()})
    sections: list[dict[str, Any]] = []
    for name in names:
        queue = queues.queue_or_none(name)
        if queue is not None:
            try:
                sections.append({"queue": queue, "rows": schedules.rows(queue)})
            except unreachable.DOWN as exc:  # said in its section, beside the others
                sections.append({"queue": queue, "rows": [], "error": unreachable.reason(exc)})
    allowed = {slug for slug, spec in SCHEDULER_ACTIONS.items() if has_perms(request, spec[0])}
    return {
        "sections": [s for s in sections if s["rows"] or s.get("error") or only],
        "empty_queues": [
            s["queue"].name for s in sections if not (s["rows"] or s.get("error") or only)
        ],
        "only": only,
        "allowed": allowed,
        "may_change": "pause" in allowed,
    }


#: A date and time to the second, read in the site's current time zone (aware datetimes).
_LOCAL_TIME = forms.DateTimeInput(
    format="%Y-%m-%dT%H:%M:%S", attrs={"type": "datetime-local", "step": "1"}
)


class SchedulerForm(forms.Form):
    """A scheduler to create or replace, checked as ``Queue.upsert_job_scheduler`` checks it.

    ``every`` (ms) or ``pattern`` (cron, 5 fields or 6 with seconds first) with ``tz``; the job
    ``name`` (default: the id), ``job_data`` (JSON), ``options`` (a JSON object of job options in
    BullMQ's names: ``attempts``, ``backoff``, ``removeOnComplete`` ...), ``limit`` and
    ``start_date`` / ``end_date`` (date and time in the site's current time zone, made aware
    datetimes; stored as ms). :meth:`clean` builds the upsert's call
    (no I/O), so whatever the upsert would refuse is a form error here.
    """

    queue = forms.CharField(max_length=255)
    scheduler_id = forms.CharField(label="Id", max_length=255)
    name = forms.CharField(label="Job name", max_length=1000, required=False)
    every = forms.IntegerField(label="Every (ms)", min_value=1, required=False)
    pattern = forms.CharField(label="Cron pattern", max_length=200, required=False)
    tz = forms.CharField(label="Time zone", max_length=64, required=False)
    job_data = forms.CharField(label="Data (JSON)", widget=forms.Textarea, required=False)
    options = forms.CharField(label="Options (JSON)", widget=forms.Textarea, required=False)
    limit = forms.IntegerField(min_value=1, required=False)
    start_date = forms.DateTimeField(label="Start", required=False, widget=_LOCAL_TIME)
    end_date = forms.DateTimeField(label="End", required=False, widget=_LOCAL_TIME)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        zone = timezone.get_current_timezone_name()
        for name in ("start_date", "end_date"):
            self.fields[name].label = f"{self.fields[name].label} ({zone})"

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        queue = queues.queue_or_none(cleaned["queue"])
        if queue is None:
            self.add_error("queue", "not a valid queue name")
            return cleaned
        try:
            payload = loads_str(cleaned["job_data"]) if cleaned["job_data"].strip() else {}
        except ValueError as exc:
            self.add_error("job_data", f"not JSON: {exc}")
            return cleaned
        try:
            raw_opts = loads_str(cleaned["options"]) if cleaned["options"].strip() else {}
            options = schedules.options_from_stored(raw_opts)
        except (ValueError, TypeError) as exc:
            self.add_error("options", f"not a JSON object of job options: {exc}")
            return cleaned
        repeat, extra = _schedule(cleaned)
        template = {"name": cleaned["name"] or cleaned["scheduler_id"], "data": payload}
        task = registry.get(template["name"])
        error = task_data_error(task, payload) if task is not None else None
        if error is not None:  # each run would fail as this call fails enqueue
            self.add_error("job_data", f"not a call of the task: {error}")
            return cleaned
        template["opts"] = options
        try:
            upsert_call(queue.keys, cleaned["scheduler_id"], repeat, template, extra)
        except (ValueError, TypeError, BullqError) as exc:
            raise forms.ValidationError(str(exc)) from exc
        cleaned.update(q=queue, repeat=repeat, template=template, extra=extra)
        return cleaned


def _schedule(cleaned: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The upsert's ``repeat`` (every / pattern / tz) and keyword options (limit, start and
    end as aware datetimes: naive ones, from a site without USE_TZ, in its time zone)."""
    repeat: dict[str, Any] = {}
    if cleaned["every"] is not None:
        repeat["every"] = cleaned["every"]
    if cleaned["pattern"]:
        repeat["pattern"] = cleaned["pattern"]
    if cleaned["tz"]:
        repeat["tz"] = cleaned["tz"]
    extra = {"limit": cleaned["limit"]}
    for name in ("start_date", "end_date"):
        when = cleaned[name]
        extra[name] = when if when is None or timezone.is_aware(when) else timezone.make_aware(when)
    return repeat, extra


def _initial(queue: Queue, scheduler: JobScheduler) -> dict[str, Any]:
    return {
        "queue": queue.name,
        "scheduler_id": scheduler.id,
        "name": scheduler.name,
        "every": scheduler.every,
        "pattern": scheduler.pattern or "",
        "tz": scheduler.tz or "",
        "job_data": json.dumps(scheduler.data, indent=2, ensure_ascii=False),
        "options": json.dumps(
            {k: v for k, v in scheduler.opts.items() if k not in ITERATION_OPTS},
            indent=2,
            ensure_ascii=False,
        ),
        "limit": scheduler.limit,
        "start_date": _local(scheduler.start_date),
        "end_date": _local(scheduler.end_date),
    }


def _local(ms: int | None) -> datetime | None:
    """``ms`` since epoch as a datetime in the current time zone (the form's inputs)."""
    if ms is None:
        return None
    return timezone.localtime(datetime.fromtimestamp(ms / 1000, UTC))


def scheduler_form_view(
    model_admin: ModelAdminBase,
    request: HttpRequest,
    queue: str | None = None,
    scheduler: str | None = None,
) -> HttpResponse:
    """Create (no ``scheduler``) or edit a scheduler: GET shows the form, POST upserts.

    Creating refuses an id that exists in that queue. Saving a paused scheduler resumes it
    (it is an upsert, as a Node ``upsertJobScheduler`` of the same id would be).

    Raises:
        django.core.exceptions.PermissionDenied: without ``change_scheduler``.
        django.http.Http404: the scheduler to edit does not exist.
    """
    require(request, "view_bullqqueue")
    require(request, "change_scheduler")
    editing: Queue | None = None
    current: JobScheduler | None = None
    if queue is not None and scheduler is not None:
        editing = queue_or_404(queue)
        current = editing.get_job_scheduler(scheduler)
        if current is None:
            raise Http404("no such scheduler")
    if request.method == "POST":
        posted = request.POST.copy()
        if editing is not None:  # the queue and id of an edit are the URL's
            posted["queue"], posted["scheduler_id"] = editing.name, str(scheduler)
        form = SchedulerForm(posted)
        if form.is_valid():
            response = _save(request, form, creating=editing is None)
            if response is not None:
                return response
    elif editing is not None and current is not None:
        form = SchedulerForm(initial=_initial(editing, current))
    else:
        form = SchedulerForm(initial={"queue": request.GET.get("queue", ""), "tz": "UTC"})
    if editing is not None:
        form.fields["queue"].disabled = True
        form.fields["scheduler_id"].disabled = True
    return TemplateResponse(
        request,
        "admin/django_bullq/schedule_form.html",
        page_context(
            model_admin,
            request,
            f"Edit scheduler {scheduler}" if editing is not None else "New job scheduler",
            events_js=None,
            form=form,
            editing=editing is not None,
            back=_list_url(editing.name if editing is not None else None),
        ),
    )


def _save(request: HttpRequest, form: SchedulerForm, *, creating: bool) -> HttpResponse | None:
    """Upsert the valid ``form``; a redirect to the list, or None with the form's new error."""
    cd = form.cleaned_data
    q: Queue = cd["q"]
    sid: str = cd["scheduler_id"]
    if creating and (q.get_job_scheduler(sid) is not None):
        form.add_error("scheduler_id", "a scheduler with this id exists in this queue: edit it")
        return None
    try:
        job = q.upsert_job_scheduler(sid, cd["repeat"], cd["template"], **cd["extra"])
    except (BullqError, ValueError, TypeError) as exc:
        form.add_error(None, str(exc))
        return None
    if job is None:  # the upsert wrote nothing: say so, keep the form
        form.add_error(
            None,
            "Not saved: this schedule has no run to make (its end date has passed, it has no "
            "occurrence before its end date, or it has made its limit of runs).",
        )
        return None
    label = "Create" if creating else "Edit"
    text = f"next run {job.id}"
    flag = ADDITION if creating else CHANGE
    log_action(request, f"queue {q.name} / scheduler {sid}", f"{label} scheduler: {text}", flag)
    messages.success(request, f"Scheduler {sid}: saved, {text}.")
    if registry.get(cd["template"]["name"]) is None:
        messages.warning(
            request,
            f"No task of this project is named {cd['template']['name']!r}: its runs are for "
            "a worker that knows that name (a Node or PyPI BullMQ worker); runworker fails "
            "them as an unknown task.",
        )
    return HttpResponseRedirect(_list_url(q.name))


def scheduler_action_view(
    model_admin: ModelAdminBase, request: HttpRequest, queue: str, scheduler: str, action: str
) -> HttpResponse:
    """POST-only scheduler action; remove first renders a confirmation (``confirm=yes`` acts).

    Raises:
        django.core.exceptions.PermissionDenied: no view permission or not the action's.
        django.http.Http404: an unknown action or an invalid queue name.
    """
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    require(request, "view_bullqqueue")
    spec = SCHEDULER_ACTIONS.get(action)
    if spec is None:
        raise Http404("unknown action")
    permission, label, flag, asks = spec
    if not has_perms(request, permission):
        raise PermissionDenied
    q = queue_or_404(queue)
    if asks and request.POST.get("confirm") != "yes":
        return TemplateResponse(
            request,
            "admin/django_bullq/schedule_confirm.html",
            page_context(
                model_admin,
                request,
                f"{label} scheduler {scheduler}: are you sure?",
                events_js=None,
                queue=q,
                scheduler_id=scheduler,
                action=action,
                label=label,
                found=q.get_job_scheduler(scheduler),
                back=_list_url(q.name),
            ),
        )
    try:
        text = _act(q, scheduler, action)
    except (BullqError, ValueError, TypeError) as exc:
        messages.error(request, f"{label} scheduler {scheduler} failed: {exc}")
        return HttpResponseRedirect(_list_url(q.name))
    log_action(
        request, f"queue {q.name} / scheduler {scheduler}", f"{label} scheduler: {text}", flag
    )
    messages.success(request, f"{label} scheduler {scheduler}: {text}")
    return HttpResponseRedirect(_list_url(q.name))


def _act(q: Queue, scheduler: str, action: str) -> str:
    if action == "pause":
        return schedules.pause(q, scheduler)
    if action == "resume":
        return schedules.resume(q, scheduler)
    if action == "run":
        return f"job {schedules.run_now(q, scheduler).id} added"
    existed = schedules.remove(q, scheduler)
    return "removed" if existed else "was gone already"


def urls(bind: Any) -> list[Any]:
    """The Schedules URLs, each view bound by ``QueueAdmin.get_urls``'s ``bind``."""
    one = "q/<bullqname:queue>/schedules/<bullqname:scheduler>/"
    return [
        path("schedules/", bind(schedules_view), name="django_bullq_schedules"),
        path("schedules/part/", bind(schedules_part_view), name="django_bullq_schedules_part"),
        path("schedules/new/", bind(scheduler_form_view), name="django_bullq_scheduler_new"),
        path(one + "edit/", bind(scheduler_form_view), name="django_bullq_scheduler_edit"),
        path(
            one + "action/<slug:action>/",
            bind(scheduler_action_view),
            name="django_bullq_scheduler_action",
        ),
    ]
