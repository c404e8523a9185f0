"""The admin pages that make jobs: create a job of a task, retry a failed job with edited data.

Both need ``django_bullq.add_job`` beside the view permission (the retry also
``retry_job``), validate like ``enqueue`` (:mod:`django_bullq.admin.job_forms`), write a
LogEntry and land on the job's page.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.models import ADDITION, CHANGE
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from ..conf import bullq_settings
from ..core.errors import BullqError
from ..producer.registry import registry
from ..producer.task import Task
from .data import pretty
from .job_forms import EditedDataForm, call_form_class
from .views import ModelAdminBase, log_action, page_context, queue_or_404, require


def new_job_view(model_admin: ModelAdminBase, request: HttpRequest, queue: str) -> HttpResponse:
    """``q/<queue>/new/?task=<name>``: pick a task, fill in its call, enqueue it on ``queue``.

    GET without ``task`` lists the registered tasks (those declared on this queue first); with
    it, the form of its signature. POST enqueues the call (as ``task.using(queue=...)``) and
    redirects to the new job's page.

    Raises:
        PermissionDenied: no ``view_bullqqueue`` or no ``add_job``. Http404: unknown task.
    """
    require(request, "view_bullqqueue")
    require(request, "add_job")
    q = queue_or_404(queue)
    name = request.POST.get("task") if request.method == "POST" else request.GET.get("task")
    if not name:
        names = registry.names()
        default = bullq_settings.DEFAULT_QUEUE
        here = sorted(n for n in names if (_task(n).queue_name or default) == q.name)
        return TemplateResponse(
            request,
            "admin/django_bullq/new_job.html",
            page_context(
                model_admin,
                request,
                f"Create a job on {q.name}",
                queue=q,
                task_names=here + sorted(set(names) - set(here)),
            ),
        )
    task = registry.get(name)
    if task is None:
        raise Http404("no such task")
    form_class = call_form_class(task)
    form = form_class(request.POST) if request.method == "POST" else form_class()
    if request.method == "POST" and form.is_valid():
        args, kwargs = form.call()
        try:
            added = task.using(queue=q.name).enqueue(*args, **kwargs)
        except (BullqError, ValueError, TypeError) as exc:
            form.add_error(None, str(exc))
        else:
            job_id = str(added.id)
            return _done(request, q.name, job_id, f"Created job {job_id} of {task.name}", ADDITION)
    return TemplateResponse(
        request,
        "admin/django_bullq/new_job.html",
        page_context(
            model_admin,
            request,
            f"Create a job of {task.name}",
            queue=q,
            task_name=task.name,  # not the Task: templates call what is callable
            form=form,
        ),
    )


def edit_retry_view(
    model_admin: ModelAdminBase, request: HttpRequest, queue: str, job_id: str
) -> HttpResponse:
    """``q/<queue>/job/<id>/edit-retry/``: change a failed job's ``data``, then retry it.

    The data is checked against the job's ``@task`` when its name is a registered one. POST
    stores the data (``Job.update_data``) and retries the job (``Job.retry``: failed to wait).

    Raises:
        PermissionDenied: no ``view_bullqqueue``, ``add_job`` or ``retry_job``. Http404: no
            such job.
    """
    require(request, "view_bullqqueue")
    require(request, "add_job")
    require(request, "retry_job")
    q = queue_or_404(queue)
    job = q.get_job(job_id)
    if job is None:
        raise Http404("no such job")
    state = q.get_job_state(job_id)
    task = registry.get(job.name)
    form = (
        EditedDataForm(request.POST, task=task)
        if request.method == "POST"
        else EditedDataForm(initial={"job_data": pretty(job.data)}, task=task)
    )
    refusal = ""
    if state != "failed":  # said beside the form: an unbound (GET) form takes no errors
        refusal = f"job {job_id} is {state}, not failed: only a failed job is retried"
    elif request.method == "POST" and form.is_valid():
        try:
            job.update_data(form.cleaned_data["job_data"])
            job.retry("failed")
        except (BullqError, ValueError) as exc:
            form.add_error(None, str(exc))
        else:
            return _done(request, q.name, job_id, f"Retried job {job_id} with edited data", CHANGE)
    return TemplateResponse(
        request,
        "admin/django_bullq/edit_retry.html",
        page_context(
            model_admin,
            request,
            f"Retry job {job_id} with edited data",
            queue=q,
            job=job,
            state=state,
            task_name=task.name if task is not None else None,
            form=form,
            refusal=refusal,
        ),
    )


def _task(name: str) -> Task[..., Any]:
    task = registry.get(name)
    assert task is not None  # a name registry.names() just gave
    return task


def _done(
    request: HttpRequest, queue: str, job_id: str, message: str, flag: int
) -> HttpResponseRedirect:
    """Log the action (``message`` in the LogEntry and the success message) and go to the
    job's page."""
    log_action(request, f"{queue}/{job_id}", message, flag)
    messages.success(request, f"{message}.")
    return HttpResponseRedirect(_job_url(queue, job_id))


def _job_url(queue: str, job_id: str) -> str:
    return reverse("admin:django_bullq_job", kwargs={"queue": queue, "job_id": job_id})


__all__ = ["edit_retry_view", "new_job_view"]
