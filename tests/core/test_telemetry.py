"""OpenTelemetry (django_bullq.core.telemetry) against a real Redis, read back from the SDK's
in-memory exporter and metric reader: BullMQ's span names, kinds, parents and attributes, and
the ``tm`` carrier as bullmq-otel writes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from django_bullq import Job, Queue, UnrecoverableError
from django_bullq.core import instrument, telemetry
from django_bullq.core.flow import FlowProducer
from django_bullq.core.options import JobOptions
from django_bullq.core.telemetry.tracing import OpenTelemetry, carrier_of
from django_bullq.core.worker import Worker, WorkerOptions
from tests.support.workerkit import FAST, run_until


class Otel:
    """An OpenTelemetry instrumentation on in-memory providers, registered globally."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.instrumentation = OpenTelemetry(
            tracer_provider=self.provider,
            meter_provider=MeterProvider(metric_readers=[self.reader]),
        )
        self.tracer = self.provider.get_tracer("test")

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        found = list(self.exporter.get_finished_spans())
        return [s for s in found if name is None or s.name == name]

    def span(self, name: str) -> ReadableSpan:
        (found,) = self.spans(name)
        return found

    def metric_points(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        points: dict[str, list[Any]] = {}
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points.setdefault(metric.name, []).extend(metric.data.data_points)
        return points


@pytest.fixture
def otel() -> Iterator[Otel]:
    found = Otel()
    instrument.register(found.instrumentation)
    yield found
    instrument.unregister(found.instrumentation)


def traceparent(span: ReadableSpan) -> str:
    assert span.context is not None
    found = span.context
    return f"00-{found.trace_id:032x}-{found.span_id:016x}-{int(found.trace_flags):02x}"


def worker_of(queue: Queue, processor: Any, **options: Any) -> Worker:
    return Worker(queue, processor, WorkerOptions(**{**FAST, **options}))


def test_add_span_and_its_carrier_in_tm(queue: Queue, otel: Otel) -> None:
    with otel.tracer.start_as_current_span("view") as view:
        job = queue.add("mail", {"to": "a"})
    span = otel.span(f"add {queue.name}.mail")
    assert span.kind is SpanKind.PRODUCER
    assert span.parent is not None and span.parent.span_id == view.get_span_context().span_id
    assert dict(span.attributes or {}) == {
        "bullmq.queue.name": queue.name,
        "bullmq.queue.operation": "add",
        "bullmq.job.name": "mail",
        "bullmq.job.id": job.id,
        "messaging.system": "bullmq",
        "messaging.operation.name": "add",
        "messaging.operation.type": "send",
        "messaging.destination.name": queue.name,
        "messaging.message.id": job.id,
    }
    # bullmq-otel's getMetadata: JSON.stringify of the propagation carrier, a string in opts
    stored = queue.get_job(job.id).opts["tm"]
    assert stored == json.dumps({"traceparent": traceparent(span)}, separators=(",", ":"))


def test_omc_writes_no_carrier_and_a_given_tm_is_kept(queue: Queue, otel: Otel) -> None:
    omitted = queue.add("a", {}, extra={"omc": True})
    kept = queue.add("b", {}, extra={"tm": '{"traceparent":"given"}'})
    assert "tm" not in queue.get_job(omitted.id).opts
    assert queue.get_job(omitted.id).opts["omc"] is True
    assert queue.get_job(kept.id).opts["tm"] == '{"traceparent":"given"}'


async def test_add_bulk_one_span_one_carrier(queue: Queue, otel: Otel) -> None:
    jobs = await queue.aadd_bulk([("a", {}), ("b", {})])
    span = otel.span(f"addBulk {queue.name}")
    assert span.kind is SpanKind.PRODUCER
    attributes = dict(span.attributes or {})
    assert attributes["bullmq.job.bulk.count"] == 2
    assert attributes["messaging.batch.message_count"] == 2
    assert list(attributes["bullmq.job.bulk.names"]) == ["a", "b"]  # type: ignore[arg-type]
    carriers = {(await queue.aget_job(j.id)).opts["tm"] for j in jobs}
    assert carriers == {json.dumps({"traceparent": traceparent(span)}, separators=(",", ":"))}


def test_flow_span_and_a_node_span_per_job(queue: Queue, otel: Otel) -> None:
    node = FlowProducer(queue.connection).add(
        {
            "name": "root",
            "queue_name": queue.name,
            "children": [{"name": "leaf", "queue_name": queue.name}],
        }
    )
    flow = otel.span(f"addFlow {queue.name}")
    assert flow.kind is SpanKind.PRODUCER
    assert (flow.attributes or {})["bullmq.flow.name"] == "root"
    nodes = otel.spans(f"addNode {queue.name}")
    assert [(s.attributes or {})["bullmq.job.name"] for s in nodes] == ["root", "leaf"]
    assert all(s.parent is not None and s.parent.span_id == flow.context.span_id for s in nodes)
    leaf = node.children[0].job
    assert (nodes[1].attributes or {})["bullmq.job.id"] == leaf.id
    assert carrier_of(queue.get_job(leaf.id).opts) == {"traceparent": traceparent(nodes[1])}


async def test_process_span_continues_the_producers_trace(queue: Queue, otel: Otel) -> None:
    inside: list[Any] = []

    def work(job: Job) -> str:
        inside.append(trace.get_current_span().get_span_context())
        if job.name == "first":
            queue.add("second", {})  # what a job adds continues its trace
        return "ok"

    with otel.tracer.start_as_current_span("view"):
        job = queue.add("first", {})
    worker = worker_of(queue, work, name="w1")
    await run_until(worker, lambda: len(otel.spans(f"process {queue.name}")) == 2)
    add = otel.span(f"add {queue.name}.first")
    first, second = sorted(otel.spans(f"process {queue.name}"), key=lambda s: s.start_time or 0)
    assert first.kind is SpanKind.CONSUMER
    assert first.parent is not None and first.parent.span_id == add.context.span_id
    assert [link.context.span_id for link in first.links] == [add.context.span_id]
    assert {s.context.trace_id for s in otel.spans()} == {add.context.trace_id}
    assert inside[0].span_id == first.context.span_id
    second_add = otel.span(f"add {queue.name}.second")
    assert second_add.parent is not None and second_add.parent.span_id == first.context.span_id
    attributes = dict(first.attributes or {})
    assert attributes["bullmq.job.id"] == job.id
    assert attributes["bullmq.job.name"] == "first"
    assert attributes["bullmq.worker.id"] == worker.id
    assert attributes["bullmq.worker.name"] == "w1"
    assert attributes["bullmq.job.attempts.made"] == 1
    assert attributes["messaging.operation.type"] == "process"
    assert attributes["messaging.destination.name"] == queue.name
    assert [e.name for e in first.events] == ["job completed"]
    complete = [s for s in otel.spans(f"complete {queue.name}") if s.parent == first.context]
    assert len(complete) == 1 and complete[0].kind is SpanKind.INTERNAL


async def test_async_job_sees_its_process_span(queue: Queue, otel: Otel) -> None:
    inside: list[Any] = []

    async def work(job: Job) -> None:
        inside.append(trace.get_current_span().get_span_context())

    queue.add("a", {})
    await run_until(worker_of(queue, work), lambda: bool(otel.spans(f"process {queue.name}")))
    assert inside[0].span_id == otel.span(f"process {queue.name}").context.span_id
    assert not trace.get_current_span().get_span_context().is_valid


async def test_retry_delay_and_fail_spans(queue: Queue, otel: Otel) -> None:
    def work(job: Job) -> None:
        if job.name == "final":
            raise UnrecoverableError("given up")
        raise ValueError("again")

    queue.add("retried", {}, attempts=2)
    queue.add("delayed", {}, attempts=2, backoff=60_000)
    queue.add("final", {})
    await run_until(worker_of(queue, work), lambda: len(otel.spans(f"process {queue.name}")) == 4)
    assert len(otel.spans(f"retry {queue.name}")) == 1
    assert len(otel.spans(f"delay {queue.name}")) == 1
    assert len(otel.spans(f"fail {queue.name}")) == 2  # retried's 2nd attempt, and final
    processes = otel.spans(f"process {queue.name}")
    failed = [s for s in processes if s.status.status_code is StatusCode.ERROR]
    assert sorted((s.attributes or {})["error.type"] for s in failed) == [
        "UnrecoverableError",
        "ValueError",
    ]
    event = next(e for s in failed for e in s.events if e.name == "job failed")
    assert (event.attributes or {})["bullmq.job.failed.reason"] in ("again", "given up")
    # an attempt that is retried records its exception, but is no error span
    retried = [s for s in processes if (s.attributes or {})["bullmq.job.state"] == "retry"]
    assert retried[0].status.status_code is StatusCode.UNSET
    assert [e.name for e in retried[0].events] == ["job failed", "exception"]


async def test_unreadable_tm_starts_a_new_trace(queue: Queue, otel: Otel) -> None:
    instrument.unregister(otel.instrumentation)  # added without telemetry
    job = queue.add("a", {}, extra={"tm": "{not json"})
    other = queue.add("b", {}, extra={"tm": ["a", "list"]})
    instrument.register(otel.instrumentation)
    await run_until(
        worker_of(queue, lambda job: 1), lambda: queue.get_job_counts()["completed"] == 2
    )
    processes = otel.spans(f"process {queue.name}")
    assert len(processes) == 2 and all(s.parent is None and not s.links for s in processes)
    assert queue.get_job(job.id).returnvalue == 1
    assert queue.get_job(other.id).returnvalue == 1


async def test_metrics(queue: Queue, otel: Otel) -> None:
    def work(job: Job) -> None:
        if job.name == "bad":
            raise UnrecoverableError("no")

    queue.add("good", {})
    queue.add("good", {})
    queue.add("bad", {})
    queue.add("later", {}, delay=60_000)
    otel.instrumentation.meters.observe_queues([queue])  # type: ignore[union-attr]
    await run_until(worker_of(queue, work), lambda: queue.get_job_counts()["failed"] == 1)
    await run_until(worker_of(queue, work), lambda: queue.get_job_counts()["completed"] == 2)
    points = otel.metric_points()
    completed = points["bullmq.jobs.completed"]
    assert [(p.value, dict(p.attributes)) for p in completed] == [
        (
            2,
            {
                "bullmq.queue.name": queue.name,
                "bullmq.job.name": "good",
                "bullmq.job.state": "completed",
            },
        )
    ]
    assert [p.value for p in points["bullmq.jobs.failed"]] == [1]
    durations = {
        dict(p.attributes)["bullmq.job.name"]: p.count for p in points["bullmq.job.duration"]
    }
    assert durations == {"good": 2, "bad": 1}
    process = {
        dict(p.attributes).get("error.type"): p.count for p in points["messaging.process.duration"]
    }
    assert process == {None: 2, "UnrecoverableError": 1}
    by_state = {
        dict(p.attributes)["bullmq.queue.jobs.state"]: p.value for p in points["bullmq.queue.jobs"]
    }
    assert by_state["completed"] == 2 and by_state["failed"] == 1 and by_state["delayed"] == 1


def test_enable_registers_once_and_disable_undoes_it() -> None:
    assert telemetry.available()
    first = telemetry.enable(tracer_provider=TracerProvider(), metrics=False)
    try:
        assert telemetry.enable() is first
        assert telemetry.enabled() is first
        assert first in instrument.GLOBAL.hooks
        assert first.meters is None
    finally:
        telemetry.disable()
    assert telemetry.enabled() is None
    assert first not in instrument.GLOBAL.hooks


def test_job_options_carry_tm_through_from_stored() -> None:
    from django_bullq.core.options import options_from_stored

    opts = options_from_stored({"attempts": 1, "tm": '{"traceparent":"x"}', "omc": True})
    assert opts.extra == {"tm": '{"traceparent":"x"}', "omc": True}
    assert JobOptions(extra=opts.extra).to_stored(0)["tm"] == '{"traceparent":"x"}'
