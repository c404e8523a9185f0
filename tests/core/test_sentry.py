"""The Sentry integration (django_bullq.core.sentry) against a real Redis and the real
``sentry_sdk``, its envelopes captured in memory by a transport of the test's (issue 16 item 3).

What Sentry's Queues module reads: a ``queue.publish`` span in the producer's transaction, a
``queue.process`` transaction per attempt that continues the producer's trace, with the
message id, destination, body size, receive latency and retry count; errors only for a job's
final failure (the attempts before it are breadcrumbs); job schedulers as Crons monitors.
"""

from __future__ import annotations

from typing import Any

import pytest
import sentry_sdk

from django_bullq import Job, JobOptions, Queue
from django_bullq.core import instrument
from django_bullq.core import sentry as bullq_sentry
from tests.support.sentry_capture import Capture, sentry
from tests.support.workerkit import make_worker, run_until

__all__ = ["sentry"]  # the fixture


def _span_data(span: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = span.get("data", {})
    return data


async def test_sentry_publish_span_carries_the_trace_and_the_worker_continues_it(
    queue: Queue, sentry: Capture
) -> None:
    with sentry_sdk.start_transaction(op="http.server", name="POST /orders") as view:
        job = queue.add("send-mail", {"to": "ana@example.com"})
    stored = queue.get_job(job.id)
    assert stored is not None
    headers = stored.opts[bullq_sentry.CARRIER]
    assert headers["sentry-trace"].startswith(view.trace_id)
    assert "sentry-trace_id=" + view.trace_id in headers["baggage"]

    worker = make_worker(queue, _ok)
    await run_until(worker, lambda: worker.processed == 1)
    (producer,) = [t for t in sentry.items("transaction") if t["transaction"] == "POST /orders"]
    (publish,) = [s for s in producer["spans"] if s["op"] == "queue.publish"]
    assert _span_data(publish)["messaging.message.id"] == job.id
    assert _span_data(publish)["messaging.destination.name"] == queue.name
    assert _span_data(publish)["messaging.message.body.size"] == len('{"to":"ana@example.com"}')
    (process,) = sentry.transactions("queue.process")
    trace = process["contexts"]["trace"]
    assert trace["trace_id"] == view.trace_id  # one trace from the view to the worker
    assert trace["parent_span_id"] == publish["span_id"]
    assert process["transaction"] == "send-mail"
    assert trace["status"] == "ok"
    data = trace["data"]
    assert data["messaging.message.id"] == job.id
    assert data["messaging.destination.name"] == queue.name
    assert data["messaging.message.body.size"] == len('{"to":"ana@example.com"}')
    assert data["messaging.message.retry.count"] == 0
    assert data["messaging.system"] == "bullmq"
    assert isinstance(data["messaging.message.receive.latency"], int)
    assert data["messaging.message.receive.latency"] >= 0
    assert sentry.items("event") == []


async def test_sentry_bulk_add_is_one_publish_span_counting_its_jobs(
    queue: Queue, sentry: Capture
) -> None:
    with sentry_sdk.start_transaction(op="task", name="import") as outer:
        jobs = queue.add_bulk([("row", {"n": n}) for n in range(5)])
    (producer,) = [t for t in sentry.items("transaction") if t["transaction"] == "import"]
    (publish,) = [s for s in producer["spans"] if s["op"] == "queue.publish"]
    assert _span_data(publish)["messaging.batch.message_count"] == 5
    for job in jobs:
        stored = queue.get_job(job.id)
        assert stored is not None
        assert stored.opts[bullq_sentry.CARRIER]["sentry-trace"].startswith(outer.trace_id)


async def test_sentry_reports_only_the_final_failure_and_the_attempts_before_as_breadcrumbs(
    queue: Queue, sentry: Capture
) -> None:
    job = queue.add("charge", {"order": 7}, JobOptions(attempts=3))

    def fail(job: Job) -> None:
        raise ValueError(f"card declined (attempt {job.attempts_made + 1})")

    worker = make_worker(queue, fail)
    await run_until(worker, lambda: worker.failed == 1)
    (event,) = sentry.items("event")  # one error: the last attempt's
    (exception,) = event["exception"]["values"]
    assert exception["type"] == "ValueError"
    assert exception["value"] == "card declined (attempt 3)"
    assert event["tags"]["bullmq.queue"] == queue.name
    assert event["tags"]["bullmq.job.name"] == "charge"
    assert event["contexts"]["bullmq job"]["id"] == job.id
    assert event["contexts"]["bullmq job"]["attempt"] == 3
    crumbs = [c["message"] for c in event["breadcrumbs"]["values"] if c["category"] == "bullmq"]
    assert crumbs == [  # the attempts before, as their stored traces end
        f"attempt 1 of 3 of job {job.id} failed: ValueError: card declined (attempt 1)",
        f"attempt 2 of 3 of job {job.id} failed: ValueError: card declined (attempt 2)",
    ]
    processes = sentry.transactions("queue.process")
    assert [t["contexts"]["trace"]["status"] for t in processes] == ["internal_error"] * 3
    reasons = [t["contexts"]["trace"]["data"]["bullmq.job.failed_reason"] for t in processes]
    assert reasons == [f"ValueError: card declined (attempt {n})" for n in (1, 2, 3)]
    retries = [t["contexts"]["trace"]["data"]["messaging.message.retry.count"] for t in processes]
    assert retries == [0, 1, 2]


async def test_sentry_checks_in_a_job_scheduler_as_a_cron_monitor(
    queue: Queue, sentry: Capture
) -> None:
    queue.upsert_job_scheduler(
        "nightly-report", {"pattern": "0 3 * * *", "tz": "Europe/Vienna"}, {"name": "report"}
    )
    queue.upsert_job_scheduler("every-minute", {"every": 60_000}, {"name": "tick"})
    for job in queue.get_jobs("delayed"):
        job.promote()

    worker = make_worker(queue, _ok)
    await run_until(worker, lambda: worker.processed >= 2)
    check_ins = sentry.items("check_in")
    by_slug: dict[str, list[dict[str, Any]]] = {}
    for check_in in check_ins:
        by_slug.setdefault(check_in["monitor_slug"], []).append(check_in)
    nightly, minute = by_slug["nightly-report"], by_slug["every-minute"]
    assert [c["status"] for c in nightly] == ["in_progress", "ok"]
    assert nightly[0]["check_in_id"] == nightly[1]["check_in_id"]
    assert nightly[0]["monitor_config"]["schedule"] == {"type": "crontab", "value": "0 3 * * *"}
    assert nightly[0]["monitor_config"]["timezone"] == "Europe/Vienna"
    assert minute[0]["monitor_config"]["schedule"] == {
        "type": "interval",
        "value": 1,
        "unit": "minute",
    }
    assert nightly[1]["duration"] >= 0


@pytest.mark.parametrize("sentry", [{"monitor_job_schedulers": False}], indirect=True)
async def test_sentry_cron_check_ins_can_be_turned_off(queue: Queue, sentry: Capture) -> None:
    queue.upsert_job_scheduler("quiet", {"every": 60_000}, {"name": "tick"})
    for job in queue.get_jobs("delayed"):
        job.promote()
    worker = make_worker(queue, _ok)
    await run_until(worker, lambda: worker.processed >= 1)
    assert sentry.items("check_in") == []
    assert len(sentry.transactions("queue.process")) == 1


async def test_without_sentry_initialised_the_integration_adds_nothing(queue: Queue) -> None:
    instrument.register(bullq_sentry.INSTRUMENTATION)  # as after an init, then a client without
    try:
        job = queue.add("plain", {})
        stored = queue.get_job(job.id)
        assert stored is not None and bullq_sentry.CARRIER not in stored.opts
        worker = make_worker(queue, _ok)
        await run_until(worker, lambda: worker.processed == 1)
    finally:
        instrument.unregister(bullq_sentry.INSTRUMENTATION)


async def _ok(job: Job) -> str:
    return "done"
