"""A job key that is not a hash (a string written at ``bull:q:14`` by hand, say) fails that job
with a readable reason and loses nothing else: the worker goes on with the other jobs, the
stalled check recovers the rest of its pass, and the admin shows the job as unreadable instead
of raising (a new-user trial's finding of stop 26)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from django_bullq.conf import get_queue
from tests.support.admin_users import staff_client
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample

pytestmark = pytest.mark.django_db

WRITTEN = "<b>not</b> a job"


@pytest.fixture
def unreadable(queue_name: str) -> Iterator[tuple[str, list[Any]]]:
    """Three jobs of ``sample.add`` on ``queue_name``, the middle one's key overwritten with a
    string; yields ``(that job's id, the other two jobs)``."""
    bound = sample.add.using(queue=queue_name, on_commit=False)
    first, middle, last = (bound.enqueue(n) for n in (1, 2, 3))
    queue = get_queue(queue_name)
    queue.client.delete(queue.keys.job(middle.id))
    queue.client.set(queue.keys.job(middle.id), WRITTEN)
    yield middle.id, [first, last]
    queue.obliterate(force=True)


def test_a_job_key_that_is_not_a_hash_fails_that_job_and_the_worker_goes_on(
    queue_name: str, unreadable: tuple[str, list[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    bad, good = unreadable
    queue = get_queue(queue_name)

    burst(queue_name)

    assert [job.wait(timeout=5) for job in good] == [1, 3]
    assert queue.get_job_state(bad) == "failed"
    assert queue.get_job_counts("active", "waiting", "failed") == {
        "active": 0,
        "waiting": 0,
        "failed": 1,
    }
    assert queue.client.get(queue.keys.job(bad)) == WRITTEN.encode()  # left as written
    reason = f"job key {queue.keys.job(bad)} holds a string, not a job hash"
    failed = [
        fields
        for _, fields in queue.client.xrange(queue.keys["events"])
        if fields[b"event"] == b"failed"
    ]
    assert failed == [
        {
            b"event": b"failed",
            b"jobId": bad.encode(),
            b"failedReason": reason.encode(),
            b"prev": b"active",
        }
    ]
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_a_job_key_that_is_not_a_hash_reads_as_an_unreadable_job(
    queue_name: str, unreadable: tuple[str, list[Any]]
) -> None:
    bad, good = unreadable
    queue = get_queue(queue_name)

    job = queue.get_job(bad, required=True)

    assert job.corrupt is not None and job.corrupt.startswith("the job key is not a hash")
    assert "WRONGTYPE" in job.corrupt
    assert [j.id for j in queue.get_jobs("waiting", asc=True)] == [good[0].id, bad, good[1].id]
    assert queue.get_job_fields([bad, good[0].id], ["name"]) == [None, [sample.add.name.encode()]]


def test_the_admin_shows_a_job_key_that_is_not_a_hash_instead_of_raising(
    queue_name: str, unreadable: tuple[str, list[Any]]
) -> None:
    bad, _ = unreadable
    client: Client = staff_client(every=True)
    queue_url = reverse("admin:django_bullq_queue", kwargs={"queue": queue_name})
    job_url = reverse("admin:django_bullq_job", kwargs={"queue": queue_name, "job_id": bad})

    listed = client.get(queue_url + "?state=waiting")
    page = client.get(job_url)

    assert listed.status_code == 200 and f">{bad}<" in listed.content.decode()
    assert page.status_code == 200
    body = page.content.decode()
    assert "the job key is not a hash" in body and "WRONGTYPE" in body
    assert "<b>not</b>" not in body


def test_the_admin_overview_reads_an_unreadable_oldest_waiting_job(queue_name: str) -> None:
    """Trial finding: with the oldest waiting job's key overwritten, the overview, the queue's
    pages and their live JSON raised WRONGTYPE (the oldest-waiting latency's HGET)."""
    bound = sample.add.using(queue=queue_name, on_commit=False)
    oldest, _ = bound.enqueue(1), bound.enqueue(2)
    queue = get_queue(queue_name)
    queue.client.delete(queue.keys.job(oldest.id))
    queue.client.set(queue.keys.job(oldest.id), WRITTEN)
    client: Client = staff_client(every=True)
    try:
        pages = [
            reverse("admin:django_bullq_bullqqueue_changelist"),
            reverse("admin:django_bullq_queue", kwargs={"queue": queue_name}),
        ]
        assert [client.get(url).status_code for url in pages] == [200, 200]
    finally:
        queue.obliterate(force=True)


def test_one_burst_run_gets_past_unreadable_jobs_to_the_rest(queue_name: str) -> None:
    """Trial finding: with jobs 1 and 2 unreadable and 3 healthy, each ``--burst`` run failed
    one unreadable job, saw an empty fetch and stopped: three runs to empty the queue."""
    bound = sample.add.using(queue=queue_name, on_commit=False)
    jobs = [bound.enqueue(n) for n in (1, 2, 3)]
    queue = get_queue(queue_name)
    for job in jobs[:2]:
        queue.client.delete(queue.keys.job(job.id))
        queue.client.set(queue.keys.job(job.id), WRITTEN)
    try:
        burst(queue_name)
        assert jobs[2].wait(timeout=5) == 3
        assert queue.get_job_counts("waiting", "failed") == {"waiting": 0, "failed": 2}
    finally:
        queue.obliterate(force=True)


DEEP = "[" * 100_000 + "]" * 100_000


def test_data_nested_deeper_than_json_reads_fails_that_job_and_the_queue_goes_on(
    queue_name: str,
) -> None:
    """A job whose ``data`` nests 100,000 lists deep (written by hand, or by a producer whose
    encoder goes deeper than the decoder): decoding it raised RecursionError out of
    ``Job.from_hash``, so the fetch failed and retried for ever with the job in active, the
    stalled check put it back in front of wait, and the jobs behind it never ran (a helper's
    trial, stop 29). It fails with a readable reason; the next job runs."""
    bound = sample.add.using(queue=queue_name, on_commit=False)
    first, deep, last = (bound.enqueue(n) for n in (1, 2, 3))
    queue = get_queue(queue_name)
    queue.client.hset(queue.keys.job(deep.id), "data", DEEP)

    assert queue.get_job(deep.id).corrupt.startswith("field 'data' is not valid JSON")  # type: ignore[union-attr]
    burst(queue_name)

    assert [job.wait(timeout=5) for job in (first, last)] == [1, 3]
    assert queue.get_job_state(deep.id) == "failed"
    reason = queue.client.hget(queue.keys.job(deep.id), "failedReason")
    assert reason is not None and b"nested too deeply" in reason
    assert queue.get_job_counts("active", "waiting") == {"active": 0, "waiting": 0}
    queue.obliterate(force=True)
