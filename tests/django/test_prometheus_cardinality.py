"""The Prometheus exposition's series count is bounded (issue 16 item 2): 100 queues whose
workers saw 1,000 task names each give at most 12 series per queue plus 47 per ``task`` label,
and at most ``MAX_TASKS`` + 1 labels per queue, whatever the names."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from django_bullq.conf import get_config, get_queue
from django_bullq.core.job import Job
from django_bullq.core.metrics import MetricsRecorder, store
from django_bullq.prometheus.buckets import BOUNDS_MS

pytestmark = pytest.mark.django_db(transaction=True)

QUEUES = 100
NAMES = 1_000
#: Series of a queue's own: 7 job states, latency, workers, paused, up, stalled.
PER_QUEUE = 12
#: Series per task label: 3 counters, and 2 histograms of len(BOUNDS_MS) + 1 buckets, sum, count.
PER_TASK = 3 + 2 * (len(BOUNDS_MS) + 1 + 2)
MAX_TASKS = 20
#: The bound: every queue at its cap (MAX_TASKS names and "(other names)").
BOUND = QUEUES * (PER_QUEUE + (MAX_TASKS + 1) * PER_TASK)
TOKEN = "cardinality-token-0123456789abcdef"


@pytest.fixture
def queue_names() -> Iterator[list[str]]:
    tag = uuid.uuid4().hex[:6]
    names = [f"card-{tag}-{i:03d}" for i in range(QUEUES)]
    bullq = {
        **get_config(),
        "QUEUES": {name: {} for name in names},
        "PROMETHEUS": {"TOKEN": TOKEN, "MAX_TASKS": MAX_TASKS},
    }
    with override_settings(BULLQ=bullq):
        yield names
        for name in names:
            get_queue(name).obliterate(force=True)


async def record_every_name(queue_names: list[str]) -> None:
    """Each queue: 10 workers' recorders, each finishing one job of 100 names of its own
    (1,000 distinct names per queue), then flushing (the totals keep 100 names for good)."""
    now = int(time.time() * 1000)
    for name in queue_names:
        queue = get_queue(name)
        for worker in range(10):
            recorder = MetricsRecorder(queue.keys)
            for i in range(NAMES // 10):
                task = f"app.tasks.task_{worker * 100 + i:04d}"
                job = Job(None, "1", name=task, timestamp=now - 5, processed_on=now - i)
                recorder.record(job, store.COMPLETED, now)
            await recorder.aflush(queue, final=True)


def test_100_queues_of_1000_task_names_stay_under_the_series_bound(
    queue_names: list[str],
) -> None:
    assert (PER_TASK, BOUND) == (47, 99_900)
    asyncio.run(record_every_name(queue_names))
    reply = Client().get("/bullq/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 200
    series: Counter[str] = Counter()
    tasks: dict[str, set[str]] = {name: set() for name in queue_names}
    completed = dict.fromkeys(queue_names, 0.0)
    for family in text_string_to_metric_families(reply.content.decode()):
        for sample in family.samples:
            queue = sample.labels.get("queue", "")
            if queue not in tasks:
                continue  # another test's queue in the same Redis
            series[queue] += 1
            if "task" in sample.labels:
                tasks[queue].add(sample.labels["task"])
            if sample.name == "bullq_jobs_completed_total":
                completed[queue] += sample.value
    total = sum(series.values())
    print(f"series for {QUEUES} queues x {NAMES} task names: {total} (bound {BOUND})")
    assert total <= BOUND
    # every queue is at its cap: the bound is reached, not just respected
    assert total == BOUND
    for name in queue_names:
        assert len(tasks[name]) == MAX_TASKS + 1 and store.OTHER in tasks[name]
        assert completed[name] == NAMES  # every job counted once, named or under other
