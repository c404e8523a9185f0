"""Forms of the queue admin: the job list's query and each action's input, validated.

A value a browser would not send (``page=abc``, ``grace_s=nan``, ``priority=high``) makes the
form invalid; the views answer with a message, never with a 500 or a silent default.
"""

from __future__ import annotations

from typing import Any

from django import forms

from ..core.calls.operations import CLEAN_STATES
from ..core.job import STATES
from .filter_form import JobFilterForm

#: Largest "older than" age of a clean, in seconds (ten years).
MAX_GRACE_S = 10 * 365 * 24 * 3600
#: Largest job priority (BullMQ's limit, 2**21 - 1; the core checks it again).
MAX_PRIORITY = 2_097_151
#: Reason a cancel gives the worker when the operator leaves the field empty.
DEFAULT_CANCEL_REASON = "cancelled from the admin"
#: State a job list shows, and a selection refers to, when none is given.
DEFAULT_STATE = "waiting"


class FlagField(forms.Field):
    """An optional flag that is on only for the value ``"1"`` (the pages' checkboxes send it)."""

    widget = forms.HiddenInput

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> bool:
        return bool(value == "1")


class JobIdsField(forms.Field):
    """The repeated ``ids`` of a selection: the non-empty values, in the order sent."""

    widget = forms.MultipleHiddenInput

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> list[str]:
        if not value:
            return []
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in value if v]


class JobListForm(JobFilterForm):
    """The job list's query (GET): ``state`` (a core job state, default ``waiting``),
    ``page`` (1-based; past the last one shows the last) and the filter's fields
    (:class:`~django_bullq.admin.filter_form.JobFilterForm`)."""

    state = forms.ChoiceField(choices=[(s, s) for s in STATES], required=False)
    page = forms.IntegerField(min_value=1, required=False)

    def clean_state(self) -> str:
        return str(self.cleaned_data["state"] or DEFAULT_STATE)

    def clean_page(self) -> int:
        page = self.cleaned_data["page"]
        return 1 if page is None else int(page)


class SelectionForm(JobListForm):
    """What an action POST acts on: the job list's query plus the selected ``ids``,
    ``select_all=1`` (every job of ``state``; with a filter, every job it matches, at most
    :data:`~django_bullq.admin.listing.MAX_MATCHING`) and ``confirm=yes`` (the operator
    confirmed; without it the view asks)."""

    ids = JobIdsField()
    select_all = FlagField()
    confirm = forms.CharField(required=False)

    def clean_confirm(self) -> bool:
        return bool(self.cleaned_data["confirm"] == "yes")


class CleanForm(forms.Form):
    """Input of "Clean by age": ``clean_state`` (a state ``Queue.clean`` accepts, default
    ``completed``) and ``grace_s``, the age in seconds (0 to :data:`MAX_GRACE_S`), required: a
    post without it is refused, not read as 0 (which would clean every job of the state)."""

    clean_state = forms.ChoiceField(choices=[(s, s) for s in CLEAN_STATES], required=False)
    grace_s = forms.FloatField(min_value=0, max_value=MAX_GRACE_S)

    def clean_clean_state(self) -> str:
        return str(self.cleaned_data["clean_state"] or "completed")

    def clean_grace_s(self) -> float:
        return float(self.cleaned_data["grace_s"]) + 0.0  # + 0.0: -0 reads as 0


class DrainForm(forms.Form):
    """Input of "Drain": ``delayed=1`` drains the delayed jobs too."""

    delayed = FlagField()


class ObliterateForm(forms.Form):
    """Input of "Obliterate": ``force=1`` obliterates even with active jobs."""

    force = FlagField()


class PriorityForm(forms.Form):
    """Input of "Change priority": ``priority``, 0 (none) to :data:`MAX_PRIORITY`, 1 the most
    urgent; default 0."""

    priority = forms.IntegerField(min_value=0, max_value=MAX_PRIORITY, required=False)

    def clean_priority(self) -> int:
        priority = self.cleaned_data["priority"]
        return 0 if priority is None else int(priority)


class CancelForm(forms.Form):
    """Input of "Cancel (running)": the ``reason`` the worker's cancel token carries
    (default :data:`DEFAULT_CANCEL_REASON`)."""

    reason = forms.CharField(required=False, empty_value=DEFAULT_CANCEL_REASON)


def errors_text(form: forms.Form) -> str:
    """A bound, invalid form's errors on one line: ``"field: message; field: message"``."""
    return "; ".join(
        f"{name}: {' '.join(str(m) for m in messages)}" for name, messages in form.errors.items()
    )
