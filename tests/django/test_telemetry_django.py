"""BULLQ["TELEMETRY"]: the one setting switches OpenTelemetry on and off, check E012 guards it,
and a task enqueued under a request's span runs in a worker as the same trace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core import checks
from django.test import override_settings
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from django_bullq import checks as bullq_checks
from django_bullq import telemetry as django_telemetry
from django_bullq.conf import get_queue
from django_bullq.core import instrument
from django_bullq.core import telemetry as core_telemetry
from django_bullq.core.telemetry.tracing import carrier_of
from django_bullq.producer import outbox, relay
from django_bullq.worker.group import build_worker
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample


def e012(bullq: dict[str, Any]) -> list[str]:
    with override_settings(BULLQ=bullq):
        found = checks.run_checks(tags=[bullq_checks.TAG])
    return [m.msg for m in found if m.id == "django_bullq.E012"]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """An in-memory exporter behind the instrumentation BULLQ["TELEMETRY"] turns on."""
    found = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(found))
    core_telemetry.enable(tracer_provider=provider)  # what configure() then keeps
    yield found
    core_telemetry.disable()


def test_off_by_default_nothing_is_registered() -> None:
    assert django_telemetry.wanted() is False
    assert core_telemetry.enabled() is None
    assert instrument.GLOBAL.hooks == ()


def test_the_setting_switches_it_on_and_off(settings: Any) -> None:
    with override_settings(BULLQ={**settings.BULLQ, "TELEMETRY": True}):
        on = core_telemetry.enabled()
        assert on is not None and on in instrument.GLOBAL.hooks
    assert core_telemetry.enabled() is None
    assert instrument.GLOBAL.hooks == ()


def test_e012_not_a_bool(settings: Any) -> None:
    assert e012({**settings.BULLQ, "TELEMETRY": "yes"}) == [
        "BULLQ['TELEMETRY'] must be True or False, not 'yes'"
    ]
    assert e012({**settings.BULLQ, "TELEMETRY": True}) == []
    assert e012({**settings.BULLQ, "TELEMETRY": False}) == []
    core_telemetry.disable()


def test_e012_on_without_opentelemetry(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core_telemetry, "available", lambda: False)
    with override_settings(BULLQ={**settings.BULLQ, "TELEMETRY": True}):
        assert core_telemetry.enabled() is None  # configure() left it off
        messages = [m.msg for m in checks.run_checks(tags=[bullq_checks.TAG])]
    assert "BULLQ['TELEMETRY'] is True but opentelemetry-api is not installed" in messages


def test_a_task_continues_the_requests_trace(
    settings: Any, queue_name: str, exporter: InMemorySpanExporter
) -> None:
    tracer = TracerProvider().get_tracer("view")  # the request's span, from another provider
    with override_settings(BULLQ={**settings.BULLQ, "TELEMETRY": True}):
        with tracer.start_as_current_span("GET /notes") as view:
            job = sample.add.using(queue=queue_name).enqueue(2, b=3)
        assert carrier_of(get_queue(queue_name).get_job(job.id).opts) is not None
        burst(queue_name)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    add = spans[f"add {queue_name}.tests.testapp.tasks.add"]
    process = spans[f"process {queue_name}"]
    trace_id = view.get_span_context().trace_id
    assert add.context.trace_id == process.context.trace_id == trace_id
    assert process.parent is not None and process.parent.span_id == add.context.span_id
    assert f"complete {queue_name}" in spans
    assert get_queue(queue_name).get_job(job.id).returnvalue == 5


def test_runworker_queues_report_their_job_counts(settings: Any, queue_name: str) -> None:
    reader = InMemoryMetricReader()
    core_telemetry.enable(
        tracer_provider=TracerProvider(), meter_provider=MeterProvider(metric_readers=[reader])
    )
    try:
        with override_settings(BULLQ={**settings.BULLQ, "TELEMETRY": True}):
            sample.add.using(queue=queue_name).enqueue(1)
            build_worker(queue_name)
            build_worker(queue_name)  # observed once
            data = reader.get_metrics_data()
    finally:
        core_telemetry.disable()
    assert data is not None
    points = [
        (dict(p.attributes), p.value)
        for r in data.resource_metrics
        for scope in r.scope_metrics
        for m in scope.metrics
        if m.name == "bullmq.queue.jobs"
        for p in m.data.data_points
    ]
    waiting = [v for attrs, v in points if attrs["bullmq.queue.jobs.state"] == "waiting"]
    assert waiting == [1]
    assert {attrs["bullmq.queue.name"] for attrs, _ in points} == {queue_name}


@pytest.mark.django_db(transaction=True)
def test_an_outbox_row_carries_the_requests_trace(
    settings: Any, queue_name: str, exporter: InMemorySpanExporter
) -> None:
    """The relay adds the job later, outside the request: the row keeps the request's context."""
    tracer = TracerProvider().get_tracer("view")
    with override_settings(BULLQ={**settings.BULLQ, "TELEMETRY": True}):
        with tracer.start_as_current_span("POST /orders") as view:
            outbox.write("default", queue_name, "tests.testapp.tasks.add", {"args": [1]}, {})
        assert relay.relay("default") == 1  # no current span here
        burst(queue_name)
    (process,) = [s for s in exporter.get_finished_spans() if s.name == f"process {queue_name}"]
    assert process.context.trace_id == view.get_span_context().trace_id
    assert process.parent is not None
    assert process.parent.span_id == view.get_span_context().span_id
