"""The Sentry integration through the Django layer: a ``@task def`` enqueued in a view's
transaction runs in a worker thread inside its attempt's ``queue.process`` transaction, so what
the task reports to Sentry is tagged with its job and belongs to the view's trace."""

from __future__ import annotations

import sentry_sdk

from django_bullq import task
from tests.support.helpers_django import burst
from tests.support.sentry_capture import Capture, sentry

__all__ = ["sentry"]  # the fixture


@task
def report_to_sentry(note: str) -> str:
    """A ``def`` task (it runs in a worker thread) that sends Sentry a message."""
    sentry_sdk.capture_message(note)
    return note


def test_a_sync_task_reports_inside_its_attempt_on_the_trace_of_the_view(
    sentry: Capture, queue_name: str
) -> None:
    with sentry_sdk.start_transaction(op="http.server", name="POST /notes") as view:
        job = report_to_sentry.using(queue=queue_name, on_commit=False).enqueue("hello")
    burst(queue_name)
    (event,) = sentry.items("event")
    assert event["message"] == "hello"
    assert event["tags"]["bullmq.queue"] == queue_name
    assert event["tags"]["bullmq.job.name"] == report_to_sentry.name
    assert event["contexts"]["bullmq job"]["id"] == job.id
    (process,) = sentry.transactions("queue.process")
    assert event["contexts"]["trace"]["trace_id"] == view.trace_id
    assert event["contexts"]["trace"]["span_id"] == process["contexts"]["trace"]["span_id"]
    assert process["transaction"] == report_to_sentry.name
