"""Jobs made from the admin (issue 15, item 6): "create a job of this task" from a form built
from the task's signature, and "retry with edited data" on a failed job; both validated as
``enqueue`` validates, behind ``add_job`` (and ``retry_job``), logged, escaped."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.test import Client
from django.urls import reverse

from django_bullq.admin.job_forms import call_form_class
from django_bullq.conf import get_queue
from tests.support.admin_users import staff_client
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample

# transaction=True: enqueue inside the test transaction would wait for a commit that never comes
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"mk-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


def new_url(queue: str) -> str:
    return reverse("admin:django_bullq_new_job", kwargs={"queue": queue})


def edit_url(queue: str, job_id: str) -> str:
    return reverse("admin:django_bullq_edit_retry", kwargs={"queue": queue, "job_id": job_id})


def job_url(queue: str, job_id: str) -> str:
    return reverse("admin:django_bullq_job", kwargs={"queue": queue, "job_id": job_id})


def failed_job(qname: str, key: str) -> str:
    job = sample.always_fails.using(queue=qname, attempts=1).enqueue(key)
    burst(qname)
    assert get_queue(qname).get_job_state(job.id) == "failed"
    return str(job.id)


# --- the form of a task's signature --------------------------------------------------------


def test_a_tasks_form_has_one_json_field_per_parameter() -> None:
    form = call_form_class(sample.add)()
    assert list(form.fields) == ["a", "b"]
    assert form.fields["a"].required and not form.fields["b"].required
    assert form.fields["b"].initial == "0"
    assert "int" in str(form.fields["a"].help_text)
    raw = call_form_class(sample.email)()
    assert list(raw.fields) == ["data"]


@pytest.mark.parametrize(
    ("post", "error"),
    [
        ({"a": ""}, "This field is required"),
        ({"a": "two"}, "not JSON"),
        ({"a": "NaN"}, "not JSON"),
    ],
)
def test_a_bad_call_is_refused_and_makes_no_job(
    admin_client: Client, qname: str, post: dict[str, str], error: str
) -> None:
    response = admin_client.post(new_url(qname), {"task": sample.add.name, **post})
    assert response.status_code == 200
    assert error in response.content.decode()
    assert get_queue(qname).count() == 0


# --- create a job ---------------------------------------------------------------------------


def test_create_a_job_of_a_task_from_the_admin(admin_client: Client, qname: str) -> None:
    listing = admin_client.get(new_url(qname)).content.decode()
    assert sample.add.name in listing
    page = admin_client.get(new_url(qname), {"task": sample.add.name}).content.decode()
    assert 'name="a"' in page and 'name="b"' in page
    response = admin_client.post(new_url(qname), {"task": sample.add.name, "a": "2", "b": ""})
    assert response.status_code == 302
    q = get_queue(qname)
    (job,) = q.get_jobs("waiting")
    assert response["Location"] == job_url(qname, job.id)
    assert job.name == sample.add.name
    assert job.data == {"args": [], "kwargs": {"a": 2}}
    entry = LogEntry.objects.latest("action_time")
    assert entry.action_flag == ADDITION and job.id in entry.change_message
    burst(qname)
    assert job.wait(timeout=5) == 2


def test_a_raw_task_gets_the_value_as_its_data(admin_client: Client, qname: str) -> None:
    response = admin_client.post(
        new_url(qname), {"task": sample.email.name, "data": '{"to": "ops@example.com"}'}
    )
    assert response.status_code == 302
    (job,) = get_queue(qname).get_jobs("waiting")
    assert job.data == {"to": "ops@example.com"}


def test_view_only_staff_can_neither_create_nor_edit(qname: str) -> None:
    viewer = staff_client("view_bullqqueue")
    queue_page = viewer.get(reverse("admin:django_bullq_queue", kwargs={"queue": qname}))
    assert "Create a job" not in queue_page.content.decode()
    assert viewer.get(new_url(qname)).status_code == 403
    assert viewer.post(new_url(qname), {"task": sample.add.name, "a": "1"}).status_code == 403
    job_id = failed_job(qname, f"k-{uuid.uuid4().hex}")
    assert "Retry with edited data" not in viewer.get(job_url(qname, job_id)).content.decode()
    assert viewer.post(edit_url(qname, job_id), {"job_data": "{}"}).status_code == 403
    retrier = staff_client("view_bullqqueue", "retry_job")  # add_job is needed too
    assert retrier.get(edit_url(qname, job_id)).status_code == 403
    assert get_queue(qname).count() == 0


# --- retry with edited data -------------------------------------------------------------------


def test_retry_a_failed_job_with_edited_data(admin_client: Client, qname: str) -> None:
    job_id = failed_job(qname, "old-key")
    page = admin_client.get(job_url(qname, job_id)).content.decode()
    assert edit_url(qname, job_id) in page
    form = admin_client.get(edit_url(qname, job_id)).content.decode()
    assert "old-key" in form
    new_data = '{"args": ["new-key"], "kwargs": {}}'
    response = admin_client.post(edit_url(qname, job_id), {"job_data": new_data})
    assert response.status_code == 302 and response["Location"] == job_url(qname, job_id)
    q = get_queue(qname)
    assert q.get_job_state(job_id) == "waiting"
    job = q.get_job(job_id)
    assert job is not None and job.data == {"args": ["new-key"], "kwargs": {}}
    entry = LogEntry.objects.latest("action_time")
    assert entry.action_flag == CHANGE and "edited data" in entry.change_message


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ('{"args": ["a", "b", "c"], "kwargs": {}}', "too many positional arguments"),
        ('{"args": []}', "takes data"),
        ("[1, 2", "not JSON"),
    ],
)
def test_edited_data_is_checked_against_the_tasks_signature(
    admin_client: Client, qname: str, data: str, error: str
) -> None:
    job_id = failed_job(qname, "kept")
    response = admin_client.post(edit_url(qname, job_id), {"job_data": data})
    assert response.status_code == 200
    assert error in response.content.decode()
    q = get_queue(qname)
    assert q.get_job_state(job_id) == "failed"
    job = q.get_job(job_id)
    assert job is not None and job.data == {"args": ["kept"], "kwargs": {}}


def test_only_a_failed_job_is_retried_with_edited_data(admin_client: Client, qname: str) -> None:
    job = sample.add.using(queue=qname).enqueue(1)
    response = admin_client.post(
        edit_url(qname, job.id), {"job_data": '{"args": [5], "kwargs": {}}'}
    )
    assert response.status_code == 200
    assert "not failed" in response.content.decode()
    assert get_queue(qname).get_job(job.id).data == {"args": [1], "kwargs": {}}  # type: ignore[union-attr]


def test_the_edit_page_of_a_job_that_is_not_failed_says_so_instead_of_a_500(
    admin_client: Client, qname: str
) -> None:
    """Trial finding: GET of edit-retry for a waiting or completed job raised AttributeError
    (an error added to an unbound form)."""
    job = sample.add.using(queue=qname).enqueue(1)
    response = admin_client.get(edit_url(qname, job.id))
    assert response.status_code == 200
    assert f"job {job.id} is waiting, not failed" in response.content.decode()


def test_hostile_data_is_escaped_in_the_edit_form(admin_client: Client, qname: str) -> None:
    job_id = failed_job(qname, "</textarea><script>alert(1)</script>")
    body = admin_client.get(edit_url(qname, job_id)).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;/textarea&gt;&lt;script&gt;" in body
