"""The admin's actions: one :class:`Action` per button, all of them in :data:`ACTIONS`.

A job action acts on the selected jobs one by one (:attr:`Action.one`) or on every job of a
state (:attr:`Action.all`, "select all"); a queue action acts on the queue (:attr:`Action.all`).
The views look an action up by its URL slug, check its permission, validate its
:attr:`Action.form` and call :func:`perform`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import django.forms
from django.contrib.admin.models import CHANGE, DELETION

from ..core.calls.operations import CLEAN_STATES
from ..core.errors import BullqError
from ..core.job import STATES, Job
from .forms import CancelForm, CleanForm, DrainForm, ObliterateForm, PriorityForm

if TYPE_CHECKING:
    from ..core.queue import Queue

#: Acts on one selected job ``(queue, job, its current state, valid form)``.
OneJob = Callable[["Queue", Job, str, django.forms.Form], None]
#: Acts on every job of a state, or on the queue ``(queue, state, valid form)`` -> summary.
AllJobs = Callable[["Queue", str, django.forms.Form], str]
#: Jobs one bulk call (``retry_jobs``, ``promote_jobs``) moves per script call.
BATCH = 1000


@dataclass(frozen=True)
class Action:
    """One admin action: its slug, permission, label, the states it applies to, and how it acts.

    A job action has :attr:`one` (a selected job) and :attr:`all` (every job of a state); a
    queue action has only :attr:`all`. Both get the action's valid :attr:`form`.
    """

    #: The URL slug, ``…/q/<queue>/action/<name>/``.
    name: str
    #: Codename of the permission it needs (``django_bullq.<permission>`` in ``has_perm``).
    permission: str
    #: The button text, also the start of its message and LogEntry.
    label: str
    #: Acts on the queue (queue action) or on every job of a state (job action, "select
    #: all"): ``(queue, state, form) -> summary text``.
    all: AllJobs
    #: Acts on one selected job whose current state is in :attr:`states`:
    #: ``(queue, job, state, form)``; None for a queue action.
    one: OneJob | None = None
    #: The job states :attr:`one` applies to (a selected job in another state is skipped and
    #: reported, not an error); empty for a queue action.
    states: Sequence[str] = ()
    #: The form of the action's own input, validated before it runs.
    form: type[django.forms.Form] = django.forms.Form
    #: The LogEntry ``action_flag`` (``DELETION`` for what deletes jobs).
    flag: int = CHANGE
    #: After it, the overview is shown (the queue page is gone).
    leaves_queue: bool = False
    #: True when it deletes jobs; then its buttons are styled as danger and its confirmation
    #: says how many jobs go (``django_bullq.admin.confirm``).
    danger: bool = False

    @property
    def on_jobs(self) -> bool:
        """True for a job action (it takes a selection), False for a queue action."""
        return self.one is not None


@dataclass
class Summary:
    """What an action did: ``text`` for the message and the LogEntry; ``errors`` per job;
    ``nothing``: it acted on none of the jobs it was given (all gone, or in other states)."""

    text: str
    errors: int = 0
    nothing: bool = False


def perform(
    action: Action,
    queue: Queue,
    form: django.forms.Form,
    state: str,
    ids: list[str],
    *,
    select_all: bool,
) -> Summary:
    """Run one confirmed action with its valid ``form``; returns its summary.

    A job action with ``ids`` acts on each job on its own: a job that is gone or not in one
    of :attr:`Action.states` is skipped, one that fails (BullqError, ValueError) is reported,
    and the rest go on. Anything else (queue actions, "select all") raises what it raises.
    """
    if action.one is None or select_all:
        return Summary(action.all(queue, state, form))
    done, skipped, errors = 0, 0, []
    for job_id in ids:
        try:
            acted = _act_on_job(action.one, action.states, queue, job_id, form)
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
    return Summary(text, errors=len(errors), nothing=bool(ids) and not done)


def _act_on_job(
    one: OneJob, states: Sequence[str], queue: Queue, job_id: str, form: django.forms.Form
) -> bool:
    """Apply ``one`` to job ``job_id``; False when it does not apply (gone, other state)."""
    current = queue.get_job_state(job_id)
    if current not in states:
        return False
    job = queue.get_job(job_id)
    if job is None:
        return False
    one(queue, job, current, form)
    return True


def _each_job(one: OneJob) -> AllJobs:
    """An :attr:`Action.all` applying ``one`` to every job of the state, once each.

    Every id is read first, then acted on: changing priorities reorders the prioritized set,
    so acting page by page would skip or repeat jobs.
    """

    def run(queue: Queue, state: str, form: django.forms.Form) -> str:
        every: list[str] = []
        while True:
            ids = queue.get_job_ids(state, start=len(every), end=len(every) + BATCH - 1)
            if not ids:
                break
            every.extend(ids)
        done = 0
        for job_id in dict.fromkeys(every):
            job = queue.get_job(job_id)
            if job is None:
                continue
            one(queue, job, state, form)
            done += 1
        return f"{done} {state} jobs"

    return run


# --- job actions --------------------------------------------------------------------------


def _retry_one(queue: Queue, job: Job, state: str, form: django.forms.Form) -> None:
    job.retry(state)


def _retry_all(queue: Queue, state: str, form: django.forms.Form) -> str:
    if state not in RETRY_STATES:
        raise ValueError("retry applies to failed or completed jobs")
    return f"{queue.retry_jobs(state, BATCH)} {state} jobs retried"


def _promote_one(queue: Queue, job: Job, state: str, form: django.forms.Form) -> None:
    queue.promote(job.id)


def _promote_all(queue: Queue, state: str, form: django.forms.Form) -> str:
    return f"{queue.promote_jobs(BATCH)} delayed jobs promoted"


def _remove_one(queue: Queue, job: Job, state: str, form: django.forms.Form) -> None:
    queue.remove(job.id)


def _remove_all(queue: Queue, state: str, form: django.forms.Form) -> str:
    clean_state = "wait" if state == "waiting" else state
    if clean_state not in CLEAN_STATES:
        raise ValueError(f"cannot remove every {state} job at once")
    return f"{len(queue.clean(0, 0, clean_state))} {state} jobs removed"


def _cancel_one(queue: Queue, job: Job, state: str, form: django.forms.Form) -> None:
    queue.cancel_job(job.id, form.cleaned_data["reason"])


def _change_priority_one(queue: Queue, job: Job, state: str, form: django.forms.Form) -> None:
    job.change_priority(form.cleaned_data["priority"])


# --- queue actions ------------------------------------------------------------------------


def _pause(queue: Queue, state: str, form: django.forms.Form) -> str:
    queue.pause()
    return "queue paused"


def _resume(queue: Queue, state: str, form: django.forms.Form) -> str:
    queue.resume()
    return "queue resumed"


def _clean(queue: Queue, state: str, form: django.forms.Form) -> str:
    clean_state, grace_s = form.cleaned_data["clean_state"], form.cleaned_data["grace_s"]
    removed = queue.clean(int(grace_s * 1000), 0, clean_state)
    return f"{len(removed)} {clean_state} jobs older than {grace_s:g} s removed"


def _drain(queue: Queue, state: str, form: django.forms.Form) -> str:
    return f"{queue.drain(delayed=form.cleaned_data['delayed'])} jobs drained"


def _obliterate(queue: Queue, state: str, form: django.forms.Form) -> str:
    queue.obliterate(force=form.cleaned_data["force"])
    return "queue obliterated"


def _retry_all_failed(queue: Queue, state: str, form: django.forms.Form) -> str:
    return f"{queue.retry_jobs('failed', BATCH)} failed jobs retried"


def _remove_all_failed(queue: Queue, state: str, form: django.forms.Form) -> str:
    return f"{len(queue.clean(0, 0, 'failed'))} failed jobs removed"


#: States a retry moves a job out of.
RETRY_STATES = ("failed", "completed")
#: States whose jobs take a new priority.
PRIORITY_STATES = ("waiting", "prioritized", "delayed", "waiting-children")

#: Every action by URL slug (job actions first, then queue actions, in button order).
ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action("retry", "retry_job", "Retry", _retry_all, _retry_one, RETRY_STATES),
        Action("promote", "promote_job", "Promote", _promote_all, _promote_one, ("delayed",)),
        Action(
            "remove",
            "remove_job",
            "Remove",
            _remove_all,
            _remove_one,
            STATES,
            flag=DELETION,
            danger=True,
        ),
        Action(
            "cancel",
            "cancel_job",
            "Cancel (running)",
            _each_job(_cancel_one),
            _cancel_one,
            ("active",),
            form=CancelForm,
        ),
        Action(
            "change_priority",
            "change_job",
            "Change priority",
            _each_job(_change_priority_one),
            _change_priority_one,
            PRIORITY_STATES,
            form=PriorityForm,
        ),
        Action("pause", "pause_queue", "Pause", _pause),
        Action("resume", "pause_queue", "Resume", _resume),
        Action("clean", "clean_queue", "Clean by age", _clean, form=CleanForm, danger=True),
        Action("drain", "clean_queue", "Drain", _drain, form=DrainForm, danger=True),
        Action(
            "obliterate",
            "obliterate_queue",
            "Obliterate",
            _obliterate,
            form=ObliterateForm,
            flag=DELETION,
            leaves_queue=True,
            danger=True,
        ),
        Action("retry_all", "retry_job", "Retry all failed", _retry_all_failed),
        Action(
            "remove_all",
            "remove_job",
            "Remove all failed",
            _remove_all_failed,
            flag=DELETION,
            danger=True,
        ),
    )
}
#: The job actions (they take a selection), by slug.
JOB_ACTIONS = {name: a for name, a in ACTIONS.items() if a.on_jobs}
#: The queue actions, by slug.
QUEUE_ACTIONS = {name: a for name, a in ACTIONS.items() if not a.on_jobs}
#: The slugs of the actions that delete jobs (:attr:`Action.danger`).
DANGER = frozenset(name for name, a in ACTIONS.items() if a.danger)


def permitted(user: Any, actions: dict[str, Action]) -> dict[str, Action]:
    """The ``actions`` ``user`` may run (``has_perm("django_bullq.<permission>")``): the
    buttons a page shows. Pages of a user with only the view permission show none."""
    return {name: a for name, a in actions.items() if user.has_perm(f"django_bullq.{a.permission}")}


def job_actions_for(state: str | None) -> dict[str, Action]:
    """The job actions that apply to a job in ``state`` (the job page's buttons)."""
    return {name: a for name, a in JOB_ACTIONS.items() if state in a.states}
