"""The instrumentation hooks (django_bullq.core.instrument): what a registered instrumentation
sees of adds and attempts, against a real Redis; and that with none registered none runs."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from django_bullq import Job, Queue, UnrecoverableError
from django_bullq.core import instrument
from django_bullq.core.errors import RateLimitError
from django_bullq.core.flow import FlowProducer
from django_bullq.core.worker import Worker, WorkerOptions
from tests.support.workerkit import FAST, run_until

CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("current", default="")


class Recorder(instrument.Instrumentation):
    """Records every hook call; puts a marker into each job's opts and a context variable."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def add_started(self, operation: str, queue_name: str, count: int) -> Any:
        self.events.append(("add_started", operation, queue_name, count))
        return {"op": operation}

    def job_adding(self, state: Any, queue_name: str, name: str, opts: dict[str, Any]) -> None:
        self.events.append(("job_adding", state["op"], queue_name, name))
        opts["tm"] = '{"traceparent":"marker-' + name + '"}'

    def add_ended(self, state: Any, jobs: Sequence[Job], error: BaseException | None) -> None:
        self.events.append(("add_ended", state["op"], [j.name for j in jobs], error))

    def attempt_started(self, worker: Any, job: Job) -> Any:
        self.events.append(("attempt_started", job.id, job.name))
        return CURRENT.set(f"attempt of {job.id}")

    def attempt_settling(self, state: Any, worker: Any, job: Job, outcome: str) -> None:
        self.events.append(("attempt_settling", job.id, outcome))

    def attempt_ended(
        self, state: Any, worker: Any, job: Job, outcome: str, error: BaseException | None
    ) -> None:
        CURRENT.reset(state)
        self.events.append(("attempt_ended", job.id, outcome, type(error).__name__))

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [e for e in self.events if e[0] == kind]


class Exploding(instrument.Instrumentation):
    def add_started(self, operation: str, queue_name: str, count: int) -> Any:
        raise RuntimeError("broken instrumentation")

    def attempt_started(self, worker: Any, job: Job) -> Any:
        raise RuntimeError("broken instrumentation")


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    found = Recorder()
    instrument.register(found)
    yield found
    instrument.unregister(found)


def worker_of(queue: Queue, processor: Any, **options: Any) -> Worker:
    return Worker(queue, processor, WorkerOptions(**{**FAST, **options}))


def test_add_is_seen_before_and_after_its_write(queue: Queue, recorder: Recorder) -> None:
    job = queue.add("mail", {"to": "a"})
    assert recorder.events == [
        ("add_started", "add", queue.name, 1),
        ("job_adding", "add", queue.name, "mail"),
        ("add_ended", "add", ["mail"], None),
    ]
    # what job_adding put into opts was written with the job
    assert queue.get_job(job.id).opts["tm"] == '{"traceparent":"marker-mail"}'
    assert job.opts["tm"] == '{"traceparent":"marker-mail"}'


async def test_aadd_is_seen_too(queue: Queue, recorder: Recorder) -> None:
    job = await queue.aadd("mail", {})
    assert [e[0] for e in recorder.events] == ["add_started", "job_adding", "add_ended"]
    assert (await queue.aget_job(job.id)).opts["tm"] == '{"traceparent":"marker-mail"}'


def test_failed_add_ends_with_its_error(queue: Queue, recorder: Recorder) -> None:
    with pytest.raises(ValueError, match="priority"):
        queue.add("mail", {}, priority=-1)
    assert recorder.events[0] == ("add_started", "add", queue.name, 1)
    assert recorder.events[-1][:3] == ("add_ended", "add", [])
    assert isinstance(recorder.events[-1][3], ValueError)


def test_add_bulk_each_job_gets_its_own_opts(queue: Queue, recorder: Recorder) -> None:
    jobs = queue.add_bulk([("a", {}), ("b", {}), ("c", {}, {"attempts": 2})])
    assert recorder.of("add_started") == [("add_started", "addBulk", queue.name, 3)]
    assert [e[3] for e in recorder.of("job_adding")] == ["a", "b", "c"]
    assert recorder.of("add_ended") == [("add_ended", "addBulk", ["a", "b", "c"], None)]
    stored = [queue.get_job(j.id).opts["tm"] for j in jobs]
    assert stored == [f'{{"traceparent":"marker-{n}"}}' for n in "abc"]


def test_flow_nodes_are_seen_parents_first(queue: Queue, recorder: Recorder) -> None:
    producer = FlowProducer(queue.connection)
    node = producer.add(
        {
            "name": "root",
            "queue_name": queue.name,
            "children": [
                {"name": "left", "queue_name": queue.name},
                {"name": "right", "queue_name": queue.name},
            ],
        }
    )
    assert recorder.of("add_started") == [("add_started", "addFlow", queue.name, 1)]
    assert [e[3] for e in recorder.of("job_adding")] == ["root", "left", "right"]
    assert recorder.of("add_ended") == [("add_ended", "addFlow", ["root", "left", "right"], None)]
    assert queue.get_job(node.children[0].job.id).opts["tm"] == '{"traceparent":"marker-left"}'


def test_queue_own_instrumentation_sees_only_its_queue(redis_url: str, queue: Queue) -> None:
    own = Recorder()
    queue.add_instrumentation(own)
    other = Queue(queue.name + "-other", redis_url)
    other.add("x", {})
    queue.add("y", {})
    assert own.of("add_started") == [("add_started", "add", queue.name, 1)]


async def test_attempt_outcomes_are_seen_with_their_job(queue: Queue, recorder: Recorder) -> None:
    seen_inside: dict[str, str] = {}

    def work(job: Job) -> Any:
        seen_inside[job.id] = CURRENT.get()  # the attempt's context reaches the job thread
        if job.name == "fails":
            raise UnrecoverableError("no")
        if job.name in ("retries", "delays"):
            raise ValueError("again")
        return 1

    done = queue.add("done", {})
    fails = queue.add("fails", {})
    retries = queue.add("retries", {}, attempts=2)
    delays = queue.add("delays", {}, attempts=2, backoff=60_000)
    del recorder.events[:]
    worker = worker_of(queue, work)
    await run_until(
        worker,
        lambda: len(recorder.of("attempt_ended")) == 5,  # retries: a 2nd attempt
    )
    ended = {(e[1], e[2], e[3]) for e in recorder.of("attempt_ended")}
    assert ended == {
        (done.id, "completed", "NoneType"),
        (fails.id, "failed", "UnrecoverableError"),
        (retries.id, "retry", "ValueError"),
        (retries.id, "failed", "ValueError"),
        (delays.id, "delay", "ValueError"),
    }
    settling = {(e[1], e[2]) for e in recorder.of("attempt_settling")}
    assert settling == {(e[0], e[1]) for e in ended}
    for job_id, outcome, _ in ended:  # settling comes before the end of the same attempt
        order = [e[0] for e in recorder.events if e[1:3] == (job_id, outcome)]
        assert order == ["attempt_settling", "attempt_ended"]
    started = [e[1] for e in recorder.of("attempt_started")]
    assert sorted(started) == sorted([done.id, fails.id, retries.id, retries.id, delays.id])
    assert seen_inside[done.id] == f"attempt of {done.id}"
    assert await queue.aget_job_state(delays.id) == "delayed"


async def test_async_job_runs_in_the_attempts_context(queue: Queue, recorder: Recorder) -> None:
    seen: list[str] = []

    async def work(job: Job) -> None:
        await asyncio.sleep(0)
        seen.append(CURRENT.get())

    job = queue.add("a", {})
    await run_until(worker_of(queue, work), lambda: len(recorder.of("attempt_ended")) == 1)
    assert seen == [f"attempt of {job.id}"]
    assert CURRENT.get() == ""


async def test_rate_limited_and_refused_attempts(queue: Queue, recorder: Recorder) -> None:
    calls = []

    def work(job: Job) -> None:
        calls.append(job.id)
        if len(calls) == 1:
            raise RateLimitError()

    limited = queue.add("limited", {})
    big = queue.add("big", "x" * 200)
    worker = worker_of(queue, work, max_data_bytes=100)
    await run_until(worker, lambda: len(recorder.of("attempt_ended")) == 3, timeout=15)
    ended = [(e[1], e[2]) for e in recorder.of("attempt_ended")]
    assert (limited.id, "rate-limited") in ended
    assert (limited.id, "completed") in ended
    assert (big.id, "failed") in ended
    # a rate-limited attempt writes no end of its own: nothing settles
    assert ("attempt_settling", limited.id, "rate-limited") not in recorder.events


async def test_worker_own_instrumentation(queue: Queue) -> None:
    own = Recorder()
    job = queue.add("a", {})
    worker = Worker(queue, lambda job: None, WorkerOptions(**FAST), instrumentations=[own])
    await run_until(worker, lambda: len(own.of("attempt_ended")) == 1)
    assert own.of("attempt_ended") == [("attempt_ended", job.id, "completed", "NoneType")]


async def test_a_broken_instrumentation_fails_nothing(
    queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    broken = Exploding()
    instrument.register(broken)
    try:
        job = queue.add("a", {})
        worker = worker_of(queue, lambda job: 7)
        await run_until(worker, lambda: queue.get_job_state(job.id) == "completed")
    finally:
        instrument.unregister(broken)
    assert queue.get_job(job.id).returnvalue == 7
    assert "instrumentation hook" in caplog.text


async def test_with_none_registered_no_hook_runs(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an instrumentation object was made with none registered")

    monkeypatch.setattr(instrument, "Attempt", forbidden)
    monkeypatch.setattr(instrument, "Producing", forbidden)
    assert instrument.GLOBAL.hooks == ()
    job = queue.add("a", {})
    queue.add_bulk([("b", {})])
    FlowProducer(queue.connection).add({"name": "c", "queue_name": queue.name})
    worker = worker_of(queue, lambda job: None)
    await run_until(worker, lambda: worker.processed == 3)
    assert "tm" not in queue.get_job(job.id).opts


def test_register_is_idempotent_and_active_orders_own_first() -> None:
    first, second = Recorder(), Recorder()
    instrument.register(first)
    instrument.register(first)
    try:
        assert instrument.GLOBAL.hooks == (first,)
        assert instrument.active((second,)) == (second, first)
        assert instrument.active((first,)) == (first,)
    finally:
        instrument.unregister(first)
    assert instrument.GLOBAL.hooks == ()
