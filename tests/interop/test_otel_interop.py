"""OpenTelemetry across Node and Python: real ``bullmq-otel`` 2.0.1 on Node ``bullmq`` 6.7
(``node/otel.mjs``, its spans from an in-memory exporter) and ours (the SDK's in-memory
exporter). The context travels in job option ``tm``; a trace started on one side continues on
the other, and one trace runs Django view -> our producer -> Node worker -> Node producer ->
our worker."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from django.http import HttpRequest, JsonResponse
from django.test import RequestFactory, override_settings
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from django_bullq import Queue
from django_bullq.conf import get_queue
from django_bullq.core import telemetry
from django_bullq.core.telemetry.tracing import OpenTelemetry, carrier_of
from django_bullq.core.worker import Worker, WorkerOptions
from tests.interop.helpers import Node
from tests.support.helpers_django import burst
from tests.support.workerkit import FAST, run_until
from tests.testapp import tasks as sample

pytestmark = pytest.mark.interop

#: Node's SpanKind enum (@opentelemetry/api): PRODUCER 3, CONSUMER 4.
NODE_PRODUCER, NODE_CONSUMER = 3, 4


class Ours:
    """Our OpenTelemetry instrumentation on an in-memory exporter, enabled for the process."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        #: registered as BULLQ["TELEMETRY"] registers it (a later enable() keeps this one)
        self.instrumentation: OpenTelemetry = telemetry.enable(
            tracer_provider=self.provider, metrics=False
        )
        self.tracer = self.provider.get_tracer("django-view")

    def spans(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]

    def span(self, name: str) -> ReadableSpan:
        (found,) = self.spans(name)
        return found


@pytest.fixture
def ours() -> Iterator[Ours]:
    yield Ours()
    telemetry.disable()


def node_span(report: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [s for s in report["spans"] if s["name"] == name]
    return found


def hex_ids(span: ReadableSpan) -> tuple[str, str]:
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def worker_of(queue: Queue, processor: Any) -> Worker:
    return Worker(queue, processor, WorkerOptions(**FAST))


async def test_node_producer_trace_continues_in_our_worker(
    queue: Queue, node: Node, ours: Ours
) -> None:
    report = await node.arun("otel", {"add": [{"name": "mail", "data": {"to": "a"}}]})
    root = node_span(report, "node request")
    add = node_span(report, f"add {queue.name}.mail")
    assert add["kind"] == NODE_PRODUCER and add["parentSpanId"] == root["spanId"]
    (job_id,) = report["ids"]
    # bullmq-otel's carrier, read as ours reads it
    stored = queue.get_job(str(job_id))
    assert stored is not None
    assert carrier_of(stored.opts) == {"traceparent": f"00-{add['traceId']}-{add['spanId']}-01"}
    await run_until(
        worker_of(queue, lambda job: 1), lambda: bool(ours.spans(f"process {queue.name}"))
    )
    process = ours.span(f"process {queue.name}")
    assert process.kind is SpanKind.CONSUMER
    assert hex_ids(process)[0] == add["traceId"] == root["traceId"]
    assert process.parent is not None and f"{process.parent.span_id:016x}" == add["spanId"]


async def test_our_producer_trace_continues_in_a_node_worker(
    queue: Queue, node: Node, ours: Ours
) -> None:
    with ours.tracer.start_as_current_span("GET /orders"):
        job = queue.add("mail", {"to": "a"})
    add = ours.span(f"add {queue.name}.mail")
    report = await node.arun("otel", {"work": 1})
    assert report["ids"] == [job.id] and not report["timedOut"]
    process = node_span(report, f"process {queue.name}")
    assert process["kind"] == NODE_CONSUMER
    assert (process["traceId"], process["parentSpanId"]) == hex_ids(add)
    assert process["attributes"]["bullmq.job.id"] == job.id
    complete = node_span(report, f"complete {queue.name}")
    assert complete["parentSpanId"] == process["spanId"]


async def test_one_trace_django_view_node_and_back(
    queue: Queue, node: Node, ours: Ours, settings: Any
) -> None:
    """A Django view enqueues a task (queue A) -> a Node worker runs it and adds ``email`` to
    queue B -> ``runworker``'s dispatcher runs the ``email`` task: one trace id throughout."""
    back = get_queue(queue.name + "-back")

    def view(request: HttpRequest) -> JsonResponse:
        # the request's span, as opentelemetry-instrumentation-django opens it
        with ours.tracer.start_as_current_span(f"{request.method} {request.path}"):
            job = sample.add.using(queue=queue.name).enqueue(2, b=3)
        return JsonResponse({"job": job.id})

    with override_settings(BULLQ={**settings.BULLQ, "TELEMETRY": True}):
        assert telemetry.enabled() is ours.instrumentation  # the one BULLQ["TELEMETRY"] keeps
        response = view(RequestFactory().post("/checkout"))
        assert response.status_code == 200
        then_add = {"queue": back.name, "name": "email", "data": {"to": "a@example.com"}}
        worker = node.start("otel", {"work": 1, "then_add": then_add})
        worker.wait_ready()
        report = await asyncio.to_thread(worker.result, 30.0)
        assert not report["timedOut"]
        await asyncio.to_thread(burst, back.name)
    (emailed,) = back.get_jobs("completed")
    assert emailed.returnvalue == {"to": "a@example.com", "job_id": emailed.id}

    django_view = ours.span("POST /checkout")
    our_add = ours.span(f"add {queue.name}.tests.testapp.tasks.add")
    node_process = node_span(report, f"process {queue.name}")
    node_add = node_span(report, f"add {back.name}.email")
    our_process = ours.span(f"process {back.name}")
    trace_id = hex_ids(django_view)[0]
    chain = [
        hex_ids(our_add),
        (node_process["traceId"], node_process["spanId"]),
        (node_add["traceId"], node_add["spanId"]),
        hex_ids(our_process),
    ]
    assert {t for t, _ in chain} == {trace_id}  # one trace id, Django -> Node -> Django
    # each hop the child of the one before
    assert our_add.parent is not None and our_add.parent.span_id == django_view.context.span_id
    assert node_process["parentSpanId"] == hex_ids(our_add)[1]
    assert node_add["parentSpanId"] == node_process["spanId"]
    assert our_process.parent is not None
    assert f"{our_process.parent.span_id:016x}" == node_add["spanId"]
    names = ["POST /checkout", our_add.name, node_process["name"], node_add["name"]]
    print(f"one trace {trace_id}: " + " -> ".join([*names, our_process.name]))
