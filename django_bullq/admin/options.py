"""``QueueAdmin``: the ModelAdmin of the placeholder model, serving the queue pages by name."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
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
from django.urls import path, register_converter, reverse

from ..core.calls.operations import CLEAN_STATES
from ..core.errors import BullqError
from ..core.queue import Queue
from ..models import BullqQueue
from . import data
from .names import EncodedNameConverter

register_converter(EncodedNameConverter, "bullqname")

#: Job actions on a selection, action -> (permission codename, label).
JOB_ACTIONS = {
    "retry": ("retry_job", "Retry"),
    "promote": ("promote_job", "Promote"),
    "remove": ("remove_job", "Remove"),
    "cancel": ("cancel_job", "Cancel (running)"),
    "change_priority": ("change_job", "Change priority"),
}
#: Queue-wide actions, action -> (permission codename, label).
QUEUE_ACTIONS = {
    "pause": ("pause_queue", "Pause"),
    "resume": ("pause_queue", "Resume"),
    "clean": ("clean_queue", "Clean by age"),
    "drain": ("clean_queue", "Drain"),
    "obliterate": ("obliterate_queue", "Obliterate"),
    "retry_all": ("retry_job", "Retry all failed"),
    "remove_all": ("remove_job", "Remove all failed"),
}
#: States each job action applies to (others are skipped, not errors).
ACTION_STATES = {
    "retry": ("failed", "completed"),
    "promote": ("delayed",),
    "remove": data.ALL_STATES,
    "cancel": ("active",),
    "change_priority": ("waiting", "prioritized", "delayed", "waiting-children"),
}
#: Largest "older than" age of a clean, in seconds (ten years).
MAX_GRACE_S = 10 * 365 * 24 * 3600
APP = "django_bullq"

if TYPE_CHECKING:  # generic in django-stubs only
    _ModelAdmin = admin.ModelAdmin[BullqQueue]
else:
    _ModelAdmin = admin.ModelAdmin


class QueueAdmin(_ModelAdmin):
    """Queue overview (changelist), per-queue job lists, job detail and POST-only actions.

    No add/change/delete of the placeholder; every page needs ``django_bullq.view_bullqqueue``,
    every action its own permission (see :data:`JOB_ACTIONS` / :data:`QUEUE_ACTIONS`).
    """

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # --- urls ------------------------------------------------------------------------------

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("q/<bullqname:queue>/", wrap(self.queue_view), name="django_bullq_queue"),
            path(
                "q/<bullqname:queue>/job/<bullqname:job_id>/",
                wrap(self.job_view),
                name="django_bullq_job",
            ),
            path(
                "q/<bullqname:queue>/action/<slug:action>/",
                wrap(self.action_view),
                name="django_bullq_action",
            ),
            path("", wrap(self.changelist_view), name="django_bullq_bullqqueue_changelist"),
        ]

    # --- helpers ---------------------------------------------------------------------------

    def _require(self, request: HttpRequest, codename: str) -> None:
        user: Any = request.user  # admin users have has_perm; AbstractBaseUser does not declare it
        if not user.has_perm(f"{APP}.{codename}"):
            raise PermissionDenied

    def _queue(self, name: str) -> Queue:
        queue = data.queue_or_none(name)
        if queue is None:
            raise Http404("invalid queue name")
        return queue

    def _context(self, request: HttpRequest, title: str, **extra: Any) -> dict[str, Any]:
        ctx = dict(
            self.admin_site.each_context(request),
            title=title,
            opts=self.model._meta,
            app_label=APP,
            events_js=_events_js(),
        )
        ctx.update(extra)
        return ctx

    def _log(self, request: HttpRequest, repr_: str, message: str, flag: int = CHANGE) -> None:
        LogEntry.objects.create(
            user_id=request.user.pk,
            content_type_id=ContentType.objects.get_for_model(
                BullqQueue, for_concrete_model=False
            ).pk,
            object_id=repr_[:255],
            object_repr=repr_[:200],
            action_flag=flag,
            change_message=message,
        )

    # --- pages -----------------------------------------------------------------------------

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        """Overview: every known queue with counts per state, paused flag, workers, latency."""
        self._require(request, "view_bullqqueue")
        rows = []
        for name in data.known_queue_names():
            queue = data.queue_or_none(name)
            if queue is None:
                continue
            counts = queue.get_job_counts()
            rows.append(
                {
                    "name": name,
                    "counts": {s: counts.get(s, 0) for s in data.ALL_STATES},
                    "paused": queue.is_paused(),
                    "workers": len(data.workers(queue)),
                    "latency": data.waiting_latency_ms(queue),
                }
            )
        return TemplateResponse(
            request,
            "admin/django_bullq/overview.html",
            self._context(request, "Queues", rows=rows, states=data.ALL_STATES),
        )

    def queue_view(self, request: HttpRequest, queue: str) -> HttpResponse:
        """One queue: counts, workers, throughput chart, a page of jobs of one state, search."""
        self._require(request, "view_bullqqueue")
        q = self._queue(queue)
        raw_counts = q.get_job_counts()
        counts = {s: raw_counts.get(s, 0) for s in data.ALL_STATES}
        state = request.GET.get("state") or "waiting"
        if state not in data.ALL_STATES:
            raise Http404("unknown state")
        try:
            page_no = int(request.GET.get("page", "1"))
        except ValueError:
            page_no = 1
        page = data.job_page(q, state, page_no, request.GET.get("q", "").strip())
        return TemplateResponse(
            request,
            "admin/django_bullq/queue.html",
            self._context(
                request,
                f"Queue {queue}",
                queue=q,
                counts=counts,
                state=state,
                page=page,
                states=data.ALL_STATES,
                paused=q.is_paused(),
                workers=data.workers(q),
                latency=data.waiting_latency_ms(q),
                chart=data.throughput_bars(q),
                job_actions=JOB_ACTIONS,
                queue_actions=QUEUE_ACTIONS,
                search_window=data.SEARCH_WINDOW,
                page_size=data.PAGE_SIZE,
            ),
        )

    def job_view(self, request: HttpRequest, queue: str, job_id: str) -> HttpResponse:
        """One job: data, options, attempts, failure, logs, progress, return value, relations."""
        self._require(request, "view_bullqqueue")
        q = self._queue(queue)
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
        return TemplateResponse(
            request,
            "admin/django_bullq/job.html",
            self._context(
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
                stacktrace=[data.truncate(s) for s in job.stacktrace[-10:]],
                logs=job.get_logs(-data.MAX_LOGS, -1),
                parent=parent,
                children=children,
                failed_reason=data.truncate(job.failed_reason or ""),
                attempts_allowed=max(1, job.attempts or 0),  # BullMQ: attempts 0 means one run
                job_actions={
                    key: spec for key, spec in JOB_ACTIONS.items() if state in ACTION_STATES[key]
                },
            ),
        )

    # --- actions ---------------------------------------------------------------------------

    def action_view(self, request: HttpRequest, queue: str, action: str) -> HttpResponse:
        """POST-only action: without ``confirm=yes`` renders a confirmation page, with it acts.

        Job actions take ``ids`` (repeated) or ``select_all=1`` with ``state`` (and ``q``:
        the jobs the search matched); queue actions take their own fields (``grace_s`` and
        ``clean_state`` for clean, ``delayed`` for drain).
        """
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        self._require(request, "view_bullqqueue")
        if action in JOB_ACTIONS:
            codename, label = JOB_ACTIONS[action]
        elif action in QUEUE_ACTIONS:
            codename, label = QUEUE_ACTIONS[action]
        else:
            raise Http404("unknown action")
        self._require(request, codename)
        q = self._queue(queue)
        post = request.POST
        state = post.get("state") or "waiting"
        if state not in data.ALL_STATES:
            state = "waiting"
        ids = [i for i in post.getlist("ids") if i]
        select_all = post.get("select_all") == "1"
        search = post.get("q", "").strip()
        if select_all and search:
            page_no = _int(post.get("page"), 1)
            ids = [j.id for j in data.job_page(q, state, page_no, search).jobs]
            select_all = False
        back = reverse("admin:django_bullq_queue", kwargs={"queue": q.name}) + f"?state={state}"
        if action in JOB_ACTIONS and not ids and not select_all:
            messages.warning(request, "No jobs selected.")
            return HttpResponseRedirect(back)
        if post.get("confirm") != "yes":
            return TemplateResponse(
                request,
                "admin/django_bullq/confirm.html",
                self._context(
                    request,
                    f"{label}: are you sure?",
                    queue=q,
                    action=action,
                    label=label,
                    ids=ids,
                    select_all=select_all,
                    state=state,
                    post=post,
                    is_job_action=action in JOB_ACTIONS,
                    count=(q.get_job_counts(state)[state] if select_all else len(ids)),
                ),
            )
        try:
            summary = self._perform(q, action, post, ids, select_all, state)
        except (BullqError, ValueError, OverflowError) as exc:
            messages.error(request, f"{label} failed: {exc}")
            return HttpResponseRedirect(back)
        target = (
            q.name if select_all or action in QUEUE_ACTIONS else f"{q.name} / {', '.join(ids[:20])}"
        )
        self._log(
            request,
            f"queue {target}",
            f"{label}: {summary.text}",
            DELETION if action in ("remove", "remove_all", "obliterate") else CHANGE,
        )
        if summary.errors:
            messages.warning(request, f"{label}: {summary.text}")
        else:
            messages.success(request, f"{label}: {summary.text}")
        if action == "obliterate":
            return HttpResponseRedirect(reverse("admin:django_bullq_bullqqueue_changelist"))
        return HttpResponseRedirect(back)

    def _perform(
        self, q: Queue, action: str, post: Any, ids: list[str], select_all: bool, state: str
    ) -> Summary:
        """Run one confirmed action; returns its summary for the message and the log.

        Job actions act on each selected job on its own: a job that is gone or not in a state
        the action applies to is skipped, one that fails is reported, and the rest go on.
        """
        if action == "pause":
            q.pause()
            return Summary("queue paused")
        if action == "resume":
            q.resume()
            return Summary("queue resumed")
        if action == "clean":
            clean_state = post.get("clean_state") or "completed"
            if clean_state not in CLEAN_STATES:
                raise ValueError(f"cannot clean state {clean_state!r}")
            grace_s = float(post.get("grace_s") or 0)
            if not math.isfinite(grace_s) or not 0 <= grace_s <= MAX_GRACE_S:
                raise ValueError(f"age must be between 0 and {MAX_GRACE_S} s")
            removed = q.clean(int(grace_s * 1000), 0, clean_state)
            return Summary(f"{len(removed)} {clean_state} jobs older than {grace_s:g} s removed")
        if action == "drain":
            return Summary(f"{q.drain(delayed=post.get('delayed') == '1')} jobs drained")
        if action == "obliterate":
            q.obliterate(force=post.get("force") == "1")
            return Summary("queue obliterated")
        if action == "retry_all":
            return Summary(f"{q.retry_jobs('failed', 1000)} failed jobs retried")
        if action == "remove_all":
            return Summary(f"{len(q.clean(0, 0, 'failed'))} failed jobs removed")
        if select_all:
            return Summary(self._perform_all(q, action, post, state))
        done, skipped, errors = 0, 0, []
        for job_id in ids:
            try:
                acted = self._act_on_job(q, action, post, job_id)
            except (BullqError, ValueError) as exc:
                errors.append(f"{job_id}: {exc}")
                continue
            done += acted
            skipped += not acted
        text = f"{done} of {len(ids)} jobs"
        if skipped:
            text += f"; {skipped} skipped (gone, or not in a state this action applies to)"
        if errors:
            text += f"; {len(errors)} failed: " + "; ".join(errors[:5])
        return Summary(text, errors=len(errors))

    @staticmethod
    def _act_on_job(q: Queue, action: str, post: Any, job_id: str) -> bool:
        """Apply a job action to one job; False when it does not apply (gone, other state)."""
        current = q.get_job_state(job_id)
        if current not in ACTION_STATES[action]:
            return False
        job = q.get_job(job_id)
        if job is None:
            return False
        if action == "retry":
            job.retry(current)
        elif action == "promote":
            q.promote(job_id)
        elif action == "remove":
            q.remove(job_id)
        elif action == "cancel":
            q.cancel_job(job_id, post.get("reason", "cancelled from the admin"))
        elif action == "change_priority":
            job.change_priority(_int(post.get("priority"), 0))
        return True

    def _perform_all(self, q: Queue, action: str, post: Any, state: str) -> str:
        if action == "retry":
            if state not in ("failed", "completed"):
                raise ValueError("retry applies to failed or completed jobs")
            return f"{q.retry_jobs(state, 1000)} {state} jobs retried"
        if action == "promote":
            return f"{q.promote_jobs(1000)} delayed jobs promoted"
        if action == "remove":
            clean_state = "wait" if state == "waiting" else state
            if clean_state not in CLEAN_STATES:
                raise ValueError(f"cannot remove every {state} job at once")
            return f"{len(q.clean(0, 0, clean_state))} {state} jobs removed"
        # cancel / change priority: read every id first, then act. Changing priorities
        # reorders the prioritized set, so acting page by page would skip or repeat jobs.
        every: list[str] = []
        while True:
            ids = q.get_job_ids(state, start=len(every), end=len(every) + 999)
            if not ids:
                break
            every.extend(ids)
        done = 0
        for job_id in dict.fromkeys(every):
            if action == "cancel":
                q.cancel_job(job_id, post.get("reason", "cancelled from the admin"))
            else:
                job = q.get_job(job_id)
                if job is None:
                    continue
                job.change_priority(_int(post.get("priority"), 0))
            done += 1
        return f"{done} {state} jobs"


@dataclass
class Summary:
    """What an action did: ``text`` for the message and the LogEntry; ``errors`` per job."""

    text: str
    errors: int = 0


def _int(value: Any, default: int) -> int:
    """``int(value)``, or ``default`` for a missing or malformed form value."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


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
