"""django_bullq's core ``Queue`` and ``Worker`` with OpenTelemetry on (issue 16): the
:mod:`benchmarks.adapters.bullq` run with ``django_bullq.core.telemetry.enable`` on the SDK's
``TracerProvider`` (a batch span processor, as an application ships them, whose exporter drops
the spans) and ``MeterProvider`` (no reader). So the row is the cost of making every span and
metric, not of sending them anywhere."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from benchmarks.adapters import bullq, common
from django_bullq.core import eventloop, telemetry


def enable_telemetry() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Dropping(SpanExporter):  # type: ignore[misc]
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Dropping()))
    telemetry.enable(tracer_provider=tracer_provider, meter_provider=MeterProvider())


if __name__ == "__main__":
    common.count_round_trips()
    enable_telemetry()
    eventloop.run(bullq.main(common.spec_from_argv()), os.environ.get("BENCH_EVENT_LOOP", "auto"))
