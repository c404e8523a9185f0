"""Tasks of the weather app (django_bullq autodiscovers this module).

All run on the ``weather`` queue: ``manage.py runworker weather``. The job names are the
import paths (``weather.tasks.import_chunk`` ...), the data ``{"args": [...], "kwargs": {}}``.
"""

from __future__ import annotations

from typing import Any

from django_bullq import task

from . import work

QUEUE = "weather"


@task(queue=QUEUE)
def import_chunk(start: int, stop: int) -> dict[str, int]:
    """Import CSV rows ``[start, stop)`` (one job a chunk; repeating a chunk is harmless)."""
    return {"start": start, "stop": stop, "rows": work.import_rows(start, stop)}


@task(queue=QUEUE)
def aggregate_weather() -> dict[str, int]:
    """Recompute the monthly and yearly aggregates over all imported days."""
    return work.aggregate()


@task(queue=QUEUE)
def email_report(report_id: int) -> dict[str, Any]:
    """Email the report (the example project's backend writes it to ``sent_emails/``)."""
    return work.email_report(report_id)


@task(queue=QUEUE, attempts=3, backoff={"type": "exponential", "delay": 500})
def publish_report(report_id: int) -> dict[str, Any]:
    """The flaky step: fails on its first attempt, succeeds when BullMQ retries it."""
    return work.publish_report(report_id)
