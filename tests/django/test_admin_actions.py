"""The admin's action registry and forms (django_bullq/admin/actions.py, forms.py).

The registry is data: these tests check what it promises without Redis (every permission
exists, every state is a core state, every form refuses what a browser would not send).
"""

from __future__ import annotations

from typing import Any

import pytest
from django import forms as django_forms
from django.template.loader import get_template

from django_bullq.admin import forms
from django_bullq.admin.actions import ACTIONS, JOB_ACTIONS, QUEUE_ACTIONS, job_actions_for
from django_bullq.admin.schedule_views import SCHEDULER_ACTIONS
from django_bullq.core.job import STATES
from django_bullq.models import BullqQueue

#: Every form class of the admin, with the fields that a valid POST needs filled.
FORMS = [
    value
    for value in vars(forms).values()
    if isinstance(value, type)
    and issubclass(value, django_forms.Form)
    and value.__module__ == forms.__name__
]
TAMPERED_NUMBERS = ["abc", "nan", "NaN", "inf", "-inf", "1e999", "-5", "high", "1e400", "0x10"]


def test_every_action_needs_a_permission_the_model_declares() -> None:
    declared = {codename for codename, _label in BullqQueue._meta.permissions}
    for name, action in ACTIONS.items():
        assert action.permission in declared, name
    used = {a.permission for a in ACTIONS.values()}
    used |= {spec[0] for spec in SCHEDULER_ACTIONS.values()}  # the Schedules page's
    used.add("add_job")  # the pages that make jobs (admin/job_views.py)
    assert declared == used, "a permission no action uses"


def test_every_action_is_named_by_its_slug_and_is_one_kind() -> None:
    for name, action in ACTIONS.items():
        assert action.name == name and name.replace("_", "").isalnum()
        assert action.label
    assert set(JOB_ACTIONS) | set(QUEUE_ACTIONS) == set(ACTIONS)
    assert not set(JOB_ACTIONS) & set(QUEUE_ACTIONS)
    assert list(JOB_ACTIONS) == ["retry", "promote", "remove", "cancel", "change_priority"]


def test_job_actions_apply_to_known_core_states_and_queue_actions_to_none() -> None:
    for name, action in JOB_ACTIONS.items():
        assert action.states, name
        assert set(action.states) <= set(STATES), name
    for name, action in QUEUE_ACTIONS.items():
        assert action.states == () and action.one is None, name


def test_the_job_page_offers_the_actions_of_the_jobs_state() -> None:
    assert set(job_actions_for("failed")) == {"retry", "remove"}
    assert set(job_actions_for("delayed")) == {"promote", "remove", "change_priority"}
    assert set(job_actions_for("active")) == {"remove", "cancel"}
    assert job_actions_for(None) == {}


def test_every_action_form_is_an_admin_form() -> None:
    for name, action in ACTIONS.items():
        assert action.form is django_forms.Form or action.form in FORMS, name


def _number_fields() -> list[tuple[type[django_forms.Form], str]]:
    return [
        (form, name)
        for form in FORMS
        for name, field in form.base_fields.items()
        if isinstance(field, django_forms.IntegerField | django_forms.FloatField)
    ]


def test_the_forms_have_number_fields_to_check() -> None:
    names = {f"{form.__name__}.{name}" for form, name in _number_fields()}
    assert {"CleanForm.grace_s", "PriorityForm.priority", "JobListForm.page"} <= names


@pytest.mark.parametrize("value", TAMPERED_NUMBERS)
@pytest.mark.parametrize(
    "form, field", _number_fields(), ids=lambda x: getattr(x, "__name__", str(x))
)
def test_every_number_field_refuses_tampered_input(
    form: type[django_forms.Form], field: str, value: str
) -> None:
    bound = form({field: value})
    assert not bound.is_valid()
    assert field in bound.errors
    assert field in forms.errors_text(bound)


@pytest.mark.parametrize(
    "form, field",
    [
        (form, name)
        for form in FORMS
        for name, f in form.base_fields.items()
        if isinstance(f, django_forms.ChoiceField)
    ],
    ids=lambda x: getattr(x, "__name__", str(x)),
)
def test_every_choice_field_refuses_an_unknown_value(
    form: type[django_forms.Form], field: str
) -> None:
    bound = form({field: "nonsense"})
    assert not bound.is_valid() and field in bound.errors


@pytest.mark.parametrize(
    "form, fields, expected",
    [
        (forms.JobListForm, {}, {"state": "waiting", "page": 1, "q": ""}),
        (forms.JobListForm, {"state": "failed", "page": "7", "q": " x "}, {"page": 7, "q": "x"}),
        (forms.CleanForm, {"grace_s": "0"}, {"clean_state": "completed", "grace_s": 0.0}),
        (forms.CleanForm, {"grace_s": "1.5", "clean_state": "wait"}, {"grace_s": 1.5}),
        (forms.CleanForm, {"grace_s": str(forms.MAX_GRACE_S)}, {}),
        (forms.PriorityForm, {}, {"priority": 0}),
        (forms.PriorityForm, {"priority": str(forms.MAX_PRIORITY)}, {}),
        (forms.CancelForm, {}, {"reason": forms.DEFAULT_CANCEL_REASON}),
        (forms.CancelForm, {"reason": "stop <now>"}, {"reason": "stop <now>"}),
        (forms.DrainForm, {"delayed": "1"}, {"delayed": True}),
        (forms.DrainForm, {"delayed": "on"}, {"delayed": False}),
        (forms.ObliterateForm, {}, {"force": False}),
        (forms.SelectionForm, {"select_all": "0", "confirm": "yes"}, {"select_all": False}),
        (forms.SelectionForm, {"confirm": "yes", "select_all": "1"}, {"confirm": True}),
        (forms.SelectionForm, {"confirm": "no"}, {"confirm": False, "ids": []}),
    ],
)
def test_forms_accept_what_the_pages_send(
    form: type[django_forms.Form], fields: dict[str, str], expected: dict[str, Any]
) -> None:
    bound = form(fields)
    assert bound.is_valid(), bound.errors
    assert expected.items() <= bound.cleaned_data.items()


def test_a_selection_keeps_its_ids_in_order() -> None:
    from django.http import QueryDict

    post = QueryDict("ids=b&ids=&ids=a&state=failed")
    bound = forms.SelectionForm(post)
    assert bound.is_valid()
    assert bound.cleaned_data["ids"] == ["b", "a"]


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_the_confirmation_page_sends_every_field_of_the_actions_form(name: str) -> None:
    """The form and the template agree: each field the action reads has an input."""
    source = get_template("admin/django_bullq/confirm.html").template.source
    for field in ACTIONS[name].form.base_fields:
        assert f'name="{field}"' in source, (name, field)


def test_a_grace_of_minus_zero_reads_as_zero() -> None:
    """Trial finding: ``grace_s=-0`` was reported as "older than -0 s"."""
    bound = forms.CleanForm({"grace_s": "-0"})
    assert bound.is_valid() and f"{bound.cleaned_data['grace_s']:g}" == "0"
