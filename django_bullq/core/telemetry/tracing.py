"""OpenTelemetry traces and metrics for django_bullq, as Node ``bullmq`` 6 with ``bullmq-otel``
makes them, so one trace runs through Node and Python producers and workers.

Spans (names as BullMQ's ``trace()``: ``{operation} {destination}``):

* ``add {queue}.{job name}``, ``addBulk {queue}`` (PRODUCER), ``addFlow {queue}`` (PRODUCER)
  with one ``addNode {queue}`` (PRODUCER) per node; the child of the current span.
* ``process {queue}`` (CONSUMER), one per attempt, the child of the producer's span when the
  job carries its context (``opts.tm``), and linked to it; else the child of the current span.
  It is current while the job runs, so what the job adds continues the trace.
* ``complete {queue}`` / ``fail`` / ``retry`` / ``delay`` (INTERNAL): writing the attempt's end.

The carrier: each added job's ``opts.tm`` is the JSON text of the W3C propagation carrier of
its add span (``propagate.inject``: ``traceparent``, and ``tracestate`` / ``baggage`` when
set), as ``bullmq-otel``'s ``getMetadata`` writes it; ``opts.omc`` true (omit context) writes
none; a ``tm`` already in the options is kept. Metrics: :mod:`.meters`.

Imported only when telemetry is enabled: it needs ``opentelemetry-api``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from .. import instrument
from ..job import Job
from . import attributes as a
from .meters import Meters

#: An attempt outcome -> the operation of its INTERNAL span (BullMQ's).
_SETTLE_OPERATIONS = {
    instrument.COMPLETED: "complete",
    instrument.FAILED: "fail",
    instrument.RETRY: "retry",
    instrument.DELAY: "delay",
}
_NODE = "addNode"


@dataclass(slots=True)
class AddSpans:
    """One add's spans (an :class:`OpenTelemetry` hook's state): the operation's, and for a
    flow one per node; ``names``: the job names seen."""

    operation: str
    span: Any
    nodes: list[Any] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


@dataclass(slots=True)
class AttemptSpans:
    """One attempt's spans (an :class:`OpenTelemetry` hook's state): its ``process`` span, the
    token of its attached context, its start (monotonic s) and its outcome's span."""

    span: Any
    token: Any
    started_s: float
    settle: Any = None


def carrier_of(opts: dict[str, Any]) -> dict[str, str] | None:
    """The propagation carrier in a job's ``opts.tm`` (a JSON object as text, or an object);
    None when absent or unreadable (bad input never fails a job)."""
    raw = opts.get(a.CARRIER_KEY)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(raw, dict):
        return None
    return {str(k): v for k, v in raw.items() if isinstance(v, str)}


class OpenTelemetry(instrument.Instrumentation):
    """The OpenTelemetry instrumentation (register it with
    :func:`django_bullq.core.telemetry.enable`, or on one queue or worker).

    Args:
        tracer_provider: where spans go; the global one (``trace.set_tracer_provider``) by
            default.
        meter_provider: where metrics go (:class:`.meters.Meters`); the global one by default.
        metrics: record metrics too (False: spans only).
    """

    def __init__(
        self, *, tracer_provider: Any = None, meter_provider: Any = None, metrics: bool = True
    ) -> None:
        self.tracer = trace.get_tracer(a.SCOPE, tracer_provider=tracer_provider)
        self.meters = Meters(meter_provider) if metrics else None

    # --- producer ----------------------------------------------------------------------------

    def current_carrier(self) -> str | None:
        """The current context as ``opts.tm`` text (a job added later, elsewhere, continues
        it: the outbox relay); None when there is no current span."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return json.dumps(carrier, separators=(",", ":")) if carrier else None

    def add_started(self, operation: str, queue_name: str, count: int) -> AddSpans:
        span = self.tracer.start_span(
            f"{operation} {queue_name}",
            kind=SpanKind.PRODUCER,
            attributes=_producer_attributes(operation, queue_name),
        )
        if operation == instrument.ADD_BULK:
            span.set_attributes({a.BULK_COUNT: count, a.MESSAGING_BATCH_COUNT: count})
        return AddSpans(operation, span)

    def job_adding(self, state: AddSpans, queue_name: str, name: str, opts: dict[str, Any]) -> None:
        state.names.append(name)
        carrier_span = state.span
        if state.operation == instrument.ADD:
            state.span.update_name(f"add {queue_name}.{name}")
            state.span.set_attribute(a.JOB_NAME, name)
        elif state.operation == instrument.ADD_FLOW:
            if not state.nodes:
                state.span.set_attribute(a.FLOW_NAME, name)
            carrier_span = self.tracer.start_span(
                f"{_NODE} {queue_name}",
                context=trace.set_span_in_context(state.span),
                kind=SpanKind.PRODUCER,
                attributes={**_producer_attributes(_NODE, queue_name), a.JOB_NAME: name},
            )
            state.nodes.append(carrier_span)
        if opts.get(a.OMIT_CONTEXT_KEY) or a.CARRIER_KEY in opts:
            return
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(carrier_span))
        if carrier:
            opts[a.CARRIER_KEY] = json.dumps(carrier, separators=(",", ":"))

    def add_ended(self, state: AddSpans, jobs: Sequence[Job], error: BaseException | None) -> None:
        if state.operation == instrument.ADD_BULK:
            state.span.set_attribute(a.BULK_NAMES, state.names)
        elif state.operation == instrument.ADD and jobs:
            state.span.set_attributes({a.JOB_ID: jobs[0].id, a.MESSAGING_MESSAGE_ID: jobs[0].id})
        for node, job in zip(state.nodes, jobs, strict=False):
            node.set_attributes({a.JOB_ID: job.id, a.MESSAGING_MESSAGE_ID: job.id})
        for span in (*state.nodes, state.span):
            if error is not None:
                _record_error(span, error)
            span.end()

    # --- worker ------------------------------------------------------------------------------

    def attempt_started(self, worker: Any, job: Job) -> AttemptSpans:
        queue_name = worker.queue.name
        carrier = carrier_of(job.opts)
        parent = propagate.extract(carrier) if carrier else None
        producer = trace.get_current_span(parent).get_span_context() if parent else None
        span = self.tracer.start_span(
            f"process {queue_name}",
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes=_consumer_attributes(worker, job),
            # the child of the producer's span, as bullmq-otel makes it; and linked to it, as
            # the messaging conventions ask of a consumer span
            links=[Link(producer)] if producer is not None and producer.is_valid else None,
        )
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        return AttemptSpans(span, token, time.monotonic())

    def attempt_settling(self, state: AttemptSpans, worker: Any, job: Job, outcome: str) -> None:
        operation = _SETTLE_OPERATIONS.get(outcome, outcome)
        state.settle = self.tracer.start_span(
            f"{operation} {worker.queue.name}",
            context=trace.set_span_in_context(state.span),
            kind=SpanKind.INTERNAL,
            attributes={
                a.QUEUE_NAME: worker.queue.name,
                a.QUEUE_OPERATION: operation,
                a.JOB_NAME: job.name,
                a.JOB_ID: job.id,
            },
        )

    def attempt_ended(
        self,
        state: AttemptSpans,
        worker: Any,
        job: Job,
        outcome: str,
        error: BaseException | None,
    ) -> None:
        span = state.span
        ran_s = time.monotonic() - state.started_s
        if state.settle is not None:
            state.settle.end()
        span.set_attributes(
            {
                a.JOB_ATTEMPTS_MADE: job.attempts_made + 1,
                a.JOB_FINISHED_TIMESTAMP: int(time.time() * 1000),
                a.JOB_PROCESSED_TIMESTAMP: job.processed_on or 0,
                a.JOB_STATE: outcome,
            }
        )
        if outcome == instrument.COMPLETED:
            span.add_event("job completed")
        elif outcome != instrument.LOST:
            reason = str(error) if error is not None else (job.failed_reason or "")
            span.add_event("job failed", {a.JOB_FAILED_REASON: reason})
        if error is not None and outcome != instrument.RATE_LIMITED:
            _record_error(span, error, final=outcome == instrument.FAILED)
        span.end()
        otel_context.detach(state.token)  # logs, does not raise, from another context
        if self.meters is not None:
            self.meters.attempt(worker.queue.name, job, outcome, ran_s, error)


def _producer_attributes(operation: str, queue_name: str) -> dict[str, Any]:
    return {
        a.QUEUE_NAME: queue_name,
        a.QUEUE_OPERATION: operation,
        a.MESSAGING_SYSTEM: a.SYSTEM,
        a.MESSAGING_OPERATION_NAME: operation,
        a.MESSAGING_OPERATION_TYPE: "send",
        a.MESSAGING_DESTINATION: queue_name,
    }


def _consumer_attributes(worker: Any, job: Job) -> dict[str, Any]:
    found: dict[str, Any] = {
        a.QUEUE_NAME: worker.queue.name,
        a.QUEUE_OPERATION: "process",
        a.WORKER_ID: worker.id,
        a.JOB_ID: job.id,
        a.JOB_NAME: job.name,
        a.JOB_KEY: f"{worker.queue.keys.key_prefix}{job.id}",
        a.JOB_ATTEMPTS_MADE: job.attempts_made,
        a.MESSAGING_SYSTEM: a.SYSTEM,
        a.MESSAGING_OPERATION_NAME: "process",
        a.MESSAGING_OPERATION_TYPE: "process",
        a.MESSAGING_DESTINATION: worker.queue.name,
        a.MESSAGING_MESSAGE_ID: job.id,
    }
    if worker.opts.name:
        found[a.WORKER_NAME] = worker.opts.name
        found[a.MESSAGING_CONSUMER_GROUP] = worker.opts.name
    return found


def _record_error(span: Span, error: BaseException, *, final: bool = True) -> None:
    span.record_exception(error)
    span.set_attribute(a.ERROR_TYPE, type(error).__qualname__)
    if final:
        span.set_status(Status(StatusCode.ERROR, str(error)[:500]))
