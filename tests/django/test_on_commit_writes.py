"""The on-commit rule beyond ``enqueue`` (issue 12 item 2): flows, chains and ``Task.schedule``
inside ``transaction.atomic()`` wait for the commit of their database, a rollback writes nothing,
the outbox carries them; a pending enqueue knows its job id and can be waited for."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections, transaction
from django.http import HttpRequest, JsonResponse
from django.test import Client
from django.urls import path

from django_bullq.conf import get_queue
from django_bullq.core.errors import NotEnqueuedError
from django_bullq.core.flow import JobNode
from django_bullq.core.job import Job
from django_bullq.models import OutboxJob
from django_bullq.producer.flows import aadd_flow, add_chain, add_flow, flow_producer
from django_bullq.producer.outbox import KIND_FLOW, KIND_SCHEDULER, push
from django_bullq.producer.pending import PendingEnqueue
from django_bullq.producer.relay import relay, relay_all
from django_bullq.producer.transaction import Pending
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample
from tests.testapp.models import Note

BOTH = ["default", "other"]


class SimulatedCrash(Exception):
    """Raised by an on-commit callback registered first: the later ones (the outbox move) never
    run, as if the process died right after the commit."""


def crash_after_commit(using: str = "default") -> None:
    def crash() -> None:
        raise SimulatedCrash

    transaction.on_commit(crash, using=using)


@pytest.fixture
def outbox(settings: Any) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "OUTBOX": {"ENABLED": True, "DATABASES": BOTH, "POLL_INTERVAL": 0.1},
    }


def keys_of(queue_name: str) -> list[str]:
    """Every Redis key of the queue (nothing at all for a queue never written to)."""
    queue = get_queue(queue_name)
    return sorted(
        k.decode() if isinstance(k, bytes) else k
        for k in queue.client.keys(f"{queue.prefix}:{queue_name}:*")
    )


def job_count(queue_name: str) -> int:
    """Jobs of the queue in any state."""
    return sum(get_queue(queue_name).get_job_counts().values())


def note_flow(queue_name: str) -> dict[str, Any]:
    """A parent and a child that both count the notes the transaction writes."""
    counter = sample.count_notes.using(queue=queue_name)
    root = counter.node()
    root["children"] = [counter.node()]
    return root


def ran_after_commit(root: JobNode, queue_name: str) -> None:
    """The flow runs after the commit, and both jobs see the committed row."""
    burst(queue_name)
    assert root.children[0].job.refresh().returnvalue == 1  # the child saw the row
    assert root.job.refresh().returnvalue == 1


# --- add_flow / add_chain ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_flow_in_atomic_waits_for_the_commit(queue_name: str) -> None:
    with transaction.atomic():
        Note.objects.create(slug="flow-row")
        pending = add_flow(note_flow(queue_name))
        assert keys_of(queue_name) == []  # no child a worker could run before the commit
        assert isinstance(pending, Pending) and pending.state == "pending"
        with pytest.raises(NotEnqueuedError, match="has not committed yet"):
            pending.outcome()
    assert pending.state == "done"
    root = pending.outcome()
    assert isinstance(root, JobNode) and root.job.id == pending.id
    assert root.job.get_state() == "waiting-children"
    ran_after_commit(root, queue_name)


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_flow_rolled_back_writes_nothing(queue_name: str) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        Note.objects.create(slug="flow-row")
        pending = add_flow(note_flow(queue_name))
        1 / 0  # noqa: B018
    assert keys_of(queue_name) == []
    assert isinstance(pending, Pending) and pending.state == "rolled back"
    with pytest.raises(NotEnqueuedError, match="rolled back") as caught:
        pending.outcome()
    assert caught.value.reason == "rolled back"
    burst(queue_name)
    assert job_count(queue_name) == 0


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_flow_rolled_back_savepoint_writes_nothing(queue_name: str) -> None:
    with transaction.atomic():
        with pytest.raises(ZeroDivisionError), transaction.atomic():
            pending = add_flow(note_flow(queue_name))
            1 / 0  # noqa: B018
        assert isinstance(pending, Pending) and pending.state == "rolled back"
    assert pending.state == "rolled back" and keys_of(queue_name) == []


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_flow_bad_node_raises_at_the_call(queue_name: str) -> None:
    bad = note_flow(queue_name)
    bad["children"][0]["queue_name"] = "a:b"
    with pytest.raises(ValueError, match="must not contain"), transaction.atomic():
        add_flow(bad)


@pytest.mark.django_db(transaction=True, databases=BOTH)
async def test_aadd_flow_outside_atomic_adds_at_once(queue_name: str) -> None:
    root = await aadd_flow(note_flow(queue_name))
    assert isinstance(root, JobNode) and root.job.get_state() == "waiting-children"


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_chain_in_atomic_waits_for_the_commit(queue_name: str) -> None:
    counter = sample.count_notes.using(queue=queue_name)
    with transaction.atomic():
        Note.objects.create(slug="chain-row")
        pending = add_chain([counter.node(), counter.node()])
        assert keys_of(queue_name) == [] and isinstance(pending, Pending)
    root = pending.outcome()
    assert root.job.id == pending.id
    ran_after_commit(root, queue_name)


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_chain_rolled_back_writes_nothing(queue_name: str) -> None:
    counter = sample.count_notes.using(queue=queue_name)
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        pending = add_chain([counter.node(), counter.node()])
        1 / 0  # noqa: B018
    assert keys_of(queue_name) == []
    assert isinstance(pending, Pending) and pending.state == "rolled back"
    burst(queue_name)
    assert job_count(queue_name) == 0


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_flow_on_commit_false_adds_inside_the_transaction(queue_name: str) -> None:
    with transaction.atomic():
        root = add_flow(note_flow(queue_name), on_commit=False)
        assert isinstance(root, JobNode) and keys_of(queue_name) != []


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_flow_follows_the_commit_of_its_using_database(queue_name: str) -> None:
    with transaction.atomic(using="other"):
        pending = add_flow(note_flow(queue_name), database="other")
        with transaction.atomic(using="default"):
            pass  # a commit on another database does not release it
        assert keys_of(queue_name) == [] and isinstance(pending, Pending)
    assert pending.outcome().job.id == pending.id
    with transaction.atomic(using="default"):  # open only on another database: at once
        assert isinstance(add_flow(note_flow(queue_name), database="other"), JobNode)


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_add_flow_rollback_of_its_database_drops_it_even_if_another_commits(
    queue_name: str,
) -> None:
    with (
        transaction.atomic(using="default"),
        pytest.raises(ZeroDivisionError),
        transaction.atomic(using="other"),
    ):
        pending = add_flow(note_flow(queue_name), database="other")
        1 / 0  # noqa: B018
    assert keys_of(queue_name) == []
    assert isinstance(pending, Pending) and pending.state == "rolled back"


# --- Task.schedule -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_schedule_in_atomic_creates_the_scheduler_at_commit(queue_name: str) -> None:
    key = f"calls:{queue_name}"
    queue = get_queue(queue_name)
    with transaction.atomic():
        pending = sample.record_job.using(queue=queue_name).schedule(
            "tick", every=60_000, args=[key]
        )
        assert queue.get_job_scheduler("tick") is None and keys_of(queue_name) == []
        assert isinstance(pending, Pending) and pending.state == "pending"
    first = pending.outcome()
    assert isinstance(first, Job) and first.id.startswith("repeat:tick:")
    assert queue.get_job_scheduler("tick") is not None
    burst(queue_name)
    ran = [x.decode() if isinstance(x, bytes) else x for x in queue.client.lrange(key, 0, -1)]
    assert ran == [first.id]


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_schedule_rolled_back_leaves_no_scheduler_and_no_iteration(queue_name: str) -> None:
    key = f"calls:{queue_name}"
    queue = get_queue(queue_name)
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        pending = sample.record_job.using(queue=queue_name).schedule(
            "tick", every=60_000, args=[key]
        )
        1 / 0  # noqa: B018
    assert keys_of(queue_name) == []
    assert isinstance(pending, Pending) and pending.state == "rolled back"
    burst(queue_name)
    assert queue.get_job_scheduler("tick") is None and queue.get_job_schedulers_count() == 0
    assert queue.client.llen(key) == 0 and job_count(queue_name) == 0


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_schedule_bad_values_raise_at_the_call(queue_name: str) -> None:
    bound = sample.record_job.using(queue=queue_name)
    with pytest.raises(ValueError, match="cron"), transaction.atomic():
        bound.schedule("bad", cron="61 * * * *", args=["k"])


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_schedule_follows_the_commit_of_its_using_database(queue_name: str) -> None:
    queue = get_queue(queue_name)
    bound = sample.record_job.using(queue=queue_name, database="other")
    with transaction.atomic(using="other"):
        pending = bound.schedule("tick", every=60_000, args=["k"])
        with transaction.atomic(using="default"):
            pass
        assert queue.get_job_scheduler("tick") is None and isinstance(pending, Pending)
    assert queue.get_job_scheduler("tick") is not None
    with (
        transaction.atomic(using="default"),
        pytest.raises(ZeroDivisionError),
        transaction.atomic(using="other"),
    ):
        dropped = bound.schedule("tock", every=60_000, args=["k"])
        1 / 0  # noqa: B018
    assert isinstance(dropped, Pending) and dropped.state == "rolled back"
    assert queue.get_job_scheduler("tock") is None


@pytest.mark.django_db(transaction=True, databases=BOTH)
async def test_aschedule_outside_atomic_upserts_at_once(queue_name: str) -> None:
    job = await sample.record_job.using(queue=queue_name).aschedule("now", every=1000, args=["k"])
    assert isinstance(job, Job)


# --- through the outbox --------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_flow_is_a_row_in_the_same_transaction(outbox: None, queue_name: str) -> None:
    with transaction.atomic():
        Note.objects.create(slug="outbox-flow")
        pending = add_flow(note_flow(queue_name))
        row = OutboxJob.objects.get()
        assert row.kind == KIND_FLOW and row.job_id == pending.id and row.queue == queue_name
        assert keys_of(queue_name) == []
    assert not OutboxJob.objects.exists()
    root = pending.outcome()
    assert root.job.id == pending.id
    ran_after_commit(root, queue_name)


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_flow_rolled_back_leaves_no_row(outbox: None, queue_name: str) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        pending = add_chain([sample.count_notes.using(queue=queue_name).node()] * 2)
        assert OutboxJob.objects.count() == 1
        1 / 0  # noqa: B018
    assert not OutboxJob.objects.exists() and relay_all() == 0
    assert isinstance(pending, Pending) and pending.state == "rolled back"
    assert keys_of(queue_name) == []


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_flow_after_a_crash_is_relayed_once(outbox: None, queue_name: str) -> None:
    tree = note_flow(queue_name)
    tree["children"][0]["opts"] = {"delay": 3_600_000}
    with pytest.raises(SimulatedCrash), transaction.atomic():
        crash_after_commit()
        Note.objects.create(slug="outbox-crash")
        pending = add_flow(tree)
    assert isinstance(pending, Pending) and pending.state == "rolled back"  # never ran
    assert OutboxJob.objects.count() == 1 and keys_of(queue_name) == []
    first = push(OutboxJob.objects.get())  # a relay added it, then died before its commit
    assert relay("default") == 1  # the next relay adds it again: every node a duplicate
    queue = get_queue(queue_name)
    assert queue.get_job_counts("waiting-children", "delayed", "waiting") == {
        "waiting-children": 1,
        "delayed": 1,
        "waiting": 0,
    }
    child = queue.get_job(first.children[0].job.id)
    assert child is not None and 3_500_000 < child.delay <= 3_600_000  # due kept from the add
    assert flow_producer(queue_name).get_flow(queue_name, pending.id) is not None
    assert first.job.get_dependencies_count()["unprocessed"] == 1


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_schedule_is_a_row_in_the_same_transaction(outbox: None, queue_name: str) -> None:
    queue = get_queue(queue_name)
    bound = sample.record_job.using(queue=queue_name)
    with transaction.atomic():
        pending = bound.schedule("tick", every=60_000, args=["k"])
        row = OutboxJob.objects.get()
        assert row.kind == KIND_SCHEDULER and row.name == "tick" and row.queue == queue_name
        assert queue.get_job_scheduler("tick") is None
    assert not OutboxJob.objects.exists()
    first = pending.outcome() if isinstance(pending, Pending) else None
    assert isinstance(first, Job) and first.id.startswith("repeat:tick:")
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        bound.schedule("tock", every=60_000, args=["k"])
        1 / 0  # noqa: B018
    assert not OutboxJob.objects.exists() and queue.get_job_scheduler("tock") is None


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_outbox_schedule_after_a_crash_is_relayed_by_the_worker(
    outbox: None, queue_name: str
) -> None:
    key = f"calls:{queue_name}"
    queue = get_queue(queue_name)
    with pytest.raises(SimulatedCrash), transaction.atomic():
        crash_after_commit()
        sample.record_job.using(queue=queue_name).schedule("tick", every=60_000, args=[key])
    assert OutboxJob.objects.get().kind == KIND_SCHEDULER
    assert queue.get_job_scheduler("tick") is None
    burst(queue_name)  # runworker relays the outbox first, then runs the first iteration
    assert not OutboxJob.objects.exists()
    assert queue.get_job_scheduler("tick") is not None and queue.client.llen(key) == 1


# --- a pending enqueue: its id, wait() -------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases=BOTH)
@pytest.mark.parametrize("through_outbox", [False, True])
def test_pending_enqueue_id_is_the_job_id_after_commit(
    settings: Any, queue_name: str, *, through_outbox: bool
) -> None:
    settings.BULLQ = {**settings.BULLQ, "OUTBOX": {"ENABLED": through_outbox}}
    with transaction.atomic():
        job = sample.add.using(queue=queue_name).enqueue(2, b=3)
        assert isinstance(job, PendingEnqueue)
        job_id = job.id  # known before the commit
        assert isinstance(job_id, str) and get_queue(queue_name).get_job(job_id) is None
    assert job.job is not None and job.job.id == job_id
    stored = get_queue(queue_name).get_job(job_id)
    assert stored is not None and stored.data == {"args": [2], "kwargs": {"b": 3}}


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_pending_enqueue_keeps_a_given_job_id(queue_name: str) -> None:
    custom = f"mine-{uuid.uuid4().hex}"
    with transaction.atomic():
        job = sample.add.using(queue=queue_name, job_id=custom).enqueue(1)
        assert job.id == custom
    assert get_queue(queue_name).get_job(custom) is not None


@pytest.mark.django_db(transaction=True, databases=BOTH)
@pytest.mark.parametrize("through_outbox", [False, True])
def test_wait_on_a_pending_enqueue_works_once_committed(
    settings: Any, queue_name: str, *, through_outbox: bool
) -> None:
    """The README's ``job = task.enqueue(...); job.wait()`` under ATOMIC_REQUESTS."""
    settings.BULLQ = {**settings.BULLQ, "OUTBOX": {"ENABLED": through_outbox}}
    with transaction.atomic():  # what ATOMIC_REQUESTS wraps a view in
        job = sample.add.using(queue=queue_name).enqueue(40, b=2)
    burst(queue_name)
    assert job.wait(timeout=10) == 42


@pytest.mark.django_db(transaction=True, databases=BOTH)
async def test_await_result_on_a_pending_enqueue_works_once_committed(queue_name: str) -> None:
    def enqueue_in_atomic() -> Any:
        try:
            with transaction.atomic():
                return sample.add.using(queue=queue_name).enqueue(1, b=1)
        finally:
            connections.close_all()  # this thread's connection

    job = await asyncio.to_thread(enqueue_in_atomic)
    await asyncio.to_thread(burst, queue_name)
    assert isinstance(job, PendingEnqueue) and await job.await_result(timeout=10) == 2


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_wait_before_the_commit_raises_not_enqueued_error(queue_name: str) -> None:
    with transaction.atomic():
        job = sample.add.using(queue=queue_name).enqueue(1)
        with pytest.raises(NotEnqueuedError, match="has not committed yet") as caught:
            job.wait(timeout=1)
    assert caught.value.reason == "pending" and caught.value.database == "default"
    assert job.id in str(caught.value)


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_wait_after_a_rollback_raises_not_enqueued_error(queue_name: str) -> None:
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        job = sample.add.using(queue=queue_name).enqueue(1)
        1 / 0  # noqa: B018
    assert isinstance(job, PendingEnqueue) and job.state == "rolled back"
    with pytest.raises(NotEnqueuedError, match="rolled back") as caught:
        job.wait(timeout=1)
    assert caught.value.reason == "rolled back"


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_wait_on_an_outbox_row_not_moved_yet_says_so_then_works(
    outbox: None, queue_name: str
) -> None:
    with pytest.raises(SimulatedCrash), transaction.atomic():
        crash_after_commit()
        job = sample.add.using(queue=queue_name).enqueue(1, b=1)
    assert isinstance(job, PendingEnqueue)
    with pytest.raises(NotEnqueuedError, match="commit stopped before"):
        job.wait(timeout=1)  # the commit stopped before the move: nothing in Redis yet
    burst(queue_name)  # runworker relays the row under the id given in advance, and runs it
    assert job.wait(timeout=10) == 2


def enqueue_view(request: HttpRequest) -> JsonResponse:
    """The README's quick start in a view: under ATOMIC_REQUESTS the view runs in atomic()."""
    job = sample.add.using(queue=request.GET["queue"]).enqueue(40, b=2)
    try:
        job.wait(timeout=1)
        waited = "ran"
    except NotEnqueuedError as exc:
        waited = exc.reason
    return JsonResponse(
        {"id": job.id, "waited": waited, "pending": isinstance(job, PendingEnqueue)}
    )


urlpatterns = [path("enqueue/", enqueue_view)]


@pytest.fixture
def atomic_requests(settings: Any) -> Iterator[None]:
    """``DATABASES["default"]["ATOMIC_REQUESTS"] = True`` and this module as the URLconf."""
    settings.ROOT_URLCONF = __name__
    conn = connections["default"]
    conn.settings_dict["ATOMIC_REQUESTS"] = True
    try:
        yield
    finally:
        conn.settings_dict["ATOMIC_REQUESTS"] = False


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_readme_quick_start_under_atomic_requests(
    atomic_requests: None, client: Client, queue_name: str
) -> None:
    body = client.get("/enqueue/", {"queue": queue_name}).json()
    assert body["pending"] is True and body["waited"] == "pending"  # in the view: not yet
    burst(queue_name)  # the response went out, the request's transaction committed
    assert get_queue(queue_name).wait_until_finished(body["id"], timeout=10) == ("completed", 42)


@pytest.mark.django_db(transaction=True, databases=BOTH)
@pytest.mark.parametrize("through_outbox", [False, True])
def test_pending_enqueue_absorbed_by_deduplication_takes_the_owners_id(
    settings: Any, queue_name: str, *, through_outbox: bool
) -> None:
    """Found by a fresh-user trial: an add absorbed by a deduplication id left ``id`` on the
    UUID given in advance, an id no job ever had. After the commit it is the owner's."""
    settings.BULLQ = {**settings.BULLQ, "OUTBOX": {"ENABLED": through_outbox}}
    dedup = sample.add.using(queue=queue_name, deduplication={"id": f"d-{queue_name}"})
    owner = dedup.enqueue(1)
    assert isinstance(owner, Job)
    with transaction.atomic():
        again = dedup.enqueue(2)
        assert isinstance(again, PendingEnqueue) and not again.deduplicated
    assert again.deduplicated and again.id == owner.id
    assert again.job is not None and again.job.id == owner.id
    assert get_queue(queue_name).get_job(again.id) is not None


@pytest.mark.django_db(transaction=True, databases=BOTH)
def test_pending_enqueue_sees_the_relay_and_has_the_quick_starts_get_state(
    outbox: None, queue_name: str
) -> None:
    """Found by a fresh-user trial: after runworker relayed an outbox row, ``state`` stayed
    ``"outbox"`` and ``job`` None; and the quick start's ``job.get_state()`` did not exist."""
    with pytest.raises(SimulatedCrash), transaction.atomic():
        crash_after_commit()
        job = sample.add.using(queue=queue_name).enqueue(1, b=1)
        with pytest.raises(NotEnqueuedError, match="has not committed yet"):
            job.get_state()
    assert isinstance(job, PendingEnqueue) and job.job is None
    burst(queue_name)  # the relay adds it under the id given in advance, and runs it
    assert job.state == "done" and job.job is not None and job.job.id == job.id
    assert job.get_state() == "completed" and job.wait(timeout=10) == 2
