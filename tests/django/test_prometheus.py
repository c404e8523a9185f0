"""The Prometheus metrics view and ``manage.py bullq metrics`` (issue 16 item 2): a real
Django worker runs real jobs (completed, failed, retried, one stalled), then the view is
scraped through the test client and parsed with ``prometheus_client``'s parser."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command
from django.test import Client, override_settings
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from django_bullq.checks import check_prometheus
from django_bullq.conf import get_config, get_queue
from django_bullq.core.metrics.histogram import bucket
from django_bullq.core.queue import Queue
from django_bullq.prometheus.buckets import BOUNDS_MS
from django_bullq.prometheus.collector import BullqCollector
from django_bullq.worker.group import build_worker
from tests.support.admin_users import staff_client
from tests.support.helpers_django import burst
from tests.support.redis_server import free_port
from tests.support.workerkit import dead_worker_fetch, run_until

pytestmark = pytest.mark.django_db(transaction=True)

ADD = "tests.testapp.tasks.add"
FAILS = "tests.testapp.tasks.always_fails"
TOKEN = "s3cret-scrape-token-0123456789"
URL = "/bullq/metrics"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"prom-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


@pytest.fixture
def token() -> Iterator[str]:
    bullq = {**get_config(), "PROMETHEUS": {"TOKEN": TOKEN}}
    with override_settings(BULLQ=bullq):
        yield TOKEN


def scrape(client: Client | None = None, **headers: str) -> tuple[int, str, str]:
    reply = (client or Client()).get(URL, headers=headers)
    return reply.status_code, reply.get("Content-Type", ""), reply.content.decode()


def samples(text: str, queue: str) -> Samples:
    """``(sample name, labels) -> value`` of one queue's samples (labels without ``queue``)."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("queue") == queue:
                labels = frozenset((k, v) for k, v in s.labels.items() if k != "queue")
                found[(s.name, labels)] = s.value
    return found


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


def run_real_jobs(queue: Queue) -> None:
    """One job stalls (a worker that died holding it), then 3 adds complete, 2 failing jobs
    fail at once and one fails, is retried, and fails again; a real Django worker (stalled
    check every 200 ms) recovers the stalled add and runs everything, then stops (flush)."""
    stalled = queue.add(ADD, {"args": [0, 0], "kwargs": {}})
    dead_worker_fetch(queue, lock_ms=50)
    for i in range(3):
        queue.add(ADD, {"args": [i, 1], "kwargs": {}})
    key_ = f"prom-calls-{uuid.uuid4().hex[:6]}"
    queue.add(FAILS, {"args": [key_], "kwargs": {}})
    queue.add(FAILS, {"args": [key_], "kwargs": {}})
    queue.add(FAILS, {"args": [key_], "kwargs": {}}, attempts=2)
    time.sleep(0.1)  # the dead worker's lock expires
    worker = build_worker(queue.name, stalled_interval=200, drain_delay=0.2)

    def done() -> bool:
        counts = queue.get_job_counts("completed", "failed")
        return counts == {"completed": 4, "failed": 3}

    asyncio.run(run_until(worker, done, timeout=20))
    assert queue.get_job(stalled.id).stalled_counter == 1  # type: ignore[union-attr]


def run_ms(queue: Queue) -> list[int]:
    """finishedOn - processedOn of each completed job (its one counted attempt), ms."""
    found = []
    for job_id in queue.get_job_ids("completed"):
        job = queue.get_job(job_id)
        assert job is not None and job.finished_on and job.processed_on
        found.append(job.finished_on - job.processed_on)
    return found


def test_scrape_after_a_real_worker_gives_exact_counts_and_histograms(
    qname: str, token: str
) -> None:
    queue = get_queue(qname)
    run_real_jobs(queue)
    status, content_type, text = scrape(Authorization=f"Bearer {token}")
    assert status == 200 and content_type.startswith("text/plain; version=")
    got = samples(text, qname)

    jobs = {state: got[key("bullq_jobs", state=state)] for state in ("completed", "failed")}
    assert jobs == {"completed": 4, "failed": 3}
    for state in ("waiting", "active", "delayed", "prioritized", "waiting-children"):
        assert got[key("bullq_jobs", state=state)] == 0
    assert got[key("bullq_jobs_completed_total", task=ADD)] == 4
    assert got[key("bullq_jobs_failed_total", task=ADD)] == 0
    assert got[key("bullq_jobs_completed_total", task=FAILS)] == 0
    assert got[key("bullq_jobs_failed_total", task=FAILS)] == 3
    assert got[key("bullq_jobs_retried_total", task=FAILS)] == 1
    assert got[key("bullq_jobs_retried_total", task=ADD)] == 0
    assert got[key("bullq_jobs_stalled_total")] == 1
    assert got[key("bullq_queue_latency_seconds")] == 0  # nothing waits
    assert got[key("bullq_workers")] == 0  # the worker has stopped
    assert got[key("bullq_queue_paused")] == 0 and got[key("bullq_queue_up")] == 1

    # run time: every counted attempt (4 adds; 3 failed + 1 retried attempt of the failing task)
    assert got[key("bullq_job_duration_seconds_count", task=ADD)] == 4
    assert got[key("bullq_job_duration_seconds_count", task=FAILS)] == 4
    # wait: first attempts only (the stalled add's first counted attempt is its real one)
    assert got[key("bullq_job_wait_seconds_count", task=ADD)] == 4
    assert got[key("bullq_job_wait_seconds_count", task=FAILS)] == 3
    # the adds' sum and buckets are exactly those of the durations their hashes store
    durations = run_ms(queue)
    assert got[key("bullq_job_duration_seconds_sum", task=ADD)] == pytest.approx(
        sum(durations) / 1000
    )
    for bound in BOUNDS_MS:
        le = repr(bound / 1000)
        below = sum(1 for ms in durations if bucket(ms) < bucket(bound))
        assert got[key("bullq_job_duration_seconds_bucket", task=ADD, le=le)] == below
    assert got[key("bullq_job_duration_seconds_bucket", task=ADD, le="+Inf")] == 4


def test_queue_latency_is_the_age_of_the_oldest_waiting_job(qname: str, token: str) -> None:
    queue = get_queue(qname)
    old = queue.add(ADD, {"args": [1, 1], "kwargs": {}})
    queue.add(ADD, {"args": [2, 1], "kwargs": {}})
    queue.client.hset(queue.keys.job(old.id), "timestamp", int(time.time() * 1000) - 90_000)
    got = samples(scrape(Authorization=f"Bearer {token}")[2], qname)
    assert got[key("bullq_jobs", state="waiting")] == 2
    assert 90 <= got[key("bullq_queue_latency_seconds")] < 120
    # back in wait after an attempt that started 30 s ago (retried, stalled): from that start
    queue.client.hset(queue.keys.job(old.id), "processedOn", int(time.time() * 1000) - 30_000)
    got = samples(scrape(Authorization=f"Bearer {token}")[2], qname)
    assert 30 <= got[key("bullq_queue_latency_seconds")] < 60
    queue.pause()
    assert (
        samples(scrape(Authorization=f"Bearer {token}")[2], qname)[key("bullq_queue_paused")] == 1
    )


def test_workers_gauge_counts_connections_named_as_workers(
    qname: str, token: str, redis_url: str
) -> None:
    queue = get_queue(qname)
    queue.add(ADD, {"args": [1, 1], "kwargs": {}})
    base = f"{queue.prefix}:{base64.b64encode(qname.encode()).decode()}"
    connections = [redis.Redis.from_url(redis_url) for _ in range(3)]
    try:
        for name, conn in zip(
            (base, f"{base}:w:one", f"{base}x:w:other"), connections, strict=True
        ):
            conn.client_setname(name)
        got = samples(scrape(Authorization=f"Bearer {token}")[2], qname)
        assert got[key("bullq_workers")] == 2  # the third is another queue's name
    finally:
        for conn in connections:
            conn.close()


def test_metrics_view_refuses_without_token_or_permission(qname: str, token: str) -> None:
    get_queue(qname).add(ADD, {"args": [1, 1], "kwargs": {}})
    assert scrape()[0] == 403
    assert scrape(Authorization="Bearer wrong")[0] == 403
    assert scrape(Authorization=f"Basic {token}")[0] == 403
    assert scrape(staff_client())[0] == 403  # logged in, without the permission
    status, _, text = scrape(staff_client("view_bullqqueue"))
    assert status == 200 and samples(text, qname)[key("bullq_jobs", state="waiting")] == 1
    assert Client().post(URL, headers={"Authorization": f"Bearer {token}"}).status_code == 405


def test_metrics_view_without_a_token_serves_permitted_users_only(qname: str) -> None:
    get_queue(qname).add(ADD, {"args": [1, 1], "kwargs": {}})
    assert scrape(Authorization="Bearer ")[0] == 403  # no TOKEN set: no token opens it
    assert scrape(staff_client("view_bullqqueue"))[0] == 200
    bullq: dict[str, Any] = {**get_config(), "PROMETHEUS": {"PERMISSION": None}}
    with override_settings(BULLQ=bullq):
        assert scrape(staff_client(every=True))[0] == 403


def test_bullq_metrics_command_prints_the_same_exposition(qname: str) -> None:
    get_queue(qname).add(ADD, {"args": [1, 1], "kwargs": {}})
    out = io.StringIO()
    call_command("bullq", "metrics", stdout=out)
    got = samples(out.getvalue(), qname)
    assert got[key("bullq_jobs", state="waiting")] == 1
    assert got[key("bullq_queue_up")] == 1


@pytest.mark.parametrize(
    ("prometheus", "ids"),
    [
        ({"TOKEN": TOKEN}, []),
        ({}, []),
        ({"TOKEN": "short"}, ["django_bullq.W003"]),
        ({"PERMISSION": None}, ["django_bullq.W004"]),
        ({"TOKEN": 42}, ["django_bullq.E003"]),
        ({"PERMISSION": "nodot"}, ["django_bullq.E003"]),
        ({"MAX_TASKS": 101}, ["django_bullq.E003"]),
        ({"TOKN": TOKEN}, ["django_bullq.E002"]),
        ("token", ["django_bullq.E003"]),
    ],
)
def test_prometheus_settings_checks(prometheus: Any, ids: list[str]) -> None:
    with override_settings(BULLQ={"PROMETHEUS": prometheus}):
        assert [m.id for m in check_prometheus()] == ids


def test_dashboard_and_alert_rules_name_only_exported_metrics(qname: str, token: str) -> None:
    """docs/grafana/django_bullq.json and docs/prometheus/django_bullq_alerts.yml query
    nothing the view does not serve (a renamed metric breaks this test, not a dashboard)."""
    get_queue(qname).add(ADD, {"args": [1, 1], "kwargs": {}})
    burst(qname)  # a job of a task: its counters and histograms are served
    got = samples(scrape(Authorization=f"Bearer {token}")[2], qname)
    served = {name for name, _ in got}
    served |= {f"{n}_bucket" for n in ("bullq_job_duration_seconds", "bullq_job_wait_seconds")}
    docs = Path(__file__).resolve().parents[2] / "docs"
    dashboard = json.loads((docs / "grafana" / "django_bullq.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    rules = (docs / "prometheus" / "django_bullq_alerts.yml").read_text()  # (no PyYAML here)
    exprs.append(rules)
    used = {name for expr in exprs for name in re.findall(r"\bbullq_[a-z_]+", expr)}
    assert len(exprs) == 18 and rules.count("- alert: Bullq") == 5
    assert used - served == set()
    assert {"bullq_queue_latency_seconds", "bullq_jobs_failed_total", "bullq_workers"} <= used


def test_metrics_view_serves_openmetrics_when_the_scraper_asks(qname: str, token: str) -> None:
    get_queue(qname).add(ADD, {"args": [1, 1], "kwargs": {}})
    accept = "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5"
    status, content_type, text = scrape(Authorization=f"Bearer {token}", Accept=accept)
    assert status == 200 and content_type.startswith("application/openmetrics-text")
    assert text.endswith("# EOF\n")
    waiting = [
        s.value
        for family in openmetrics_families(text)
        for s in family.samples
        if s.name == "bullq_jobs" and s.labels == {"queue": qname, "state": "waiting"}
    ]
    assert waiting == [1]


def test_a_queue_whose_redis_is_down_is_reported_down_and_the_others_served(
    qname: str, token: str
) -> None:
    get_queue(qname).add(ADD, {"args": [1, 1], "kwargs": {}})
    config = get_config()
    bullq = {
        **config,
        "CONNECTIONS": {**config["CONNECTIONS"], "dead": f"redis://127.0.0.1:{free_port()}/0"},
        "QUEUES": {**config["QUEUES"], "gone": {"CONNECTION": "dead"}},
        "PROMETHEUS": {"TOKEN": token},
    }
    with override_settings(BULLQ=bullq):
        status, _, text = scrape(Authorization=f"Bearer {token}")
    assert status == 200
    assert samples(text, "gone") == {key("bullq_queue_up"): 0}
    assert samples(text, qname)[key("bullq_jobs", state="waiting")] == 1


def test_registering_the_collector_in_the_default_style_registry_reads_no_redis() -> None:
    def no_queues() -> list[Queue]:
        raise AssertionError("register() must not scrape")

    registry = CollectorRegistry(auto_describe=True)  # as prometheus_client.REGISTRY
    registry.register(BullqCollector(no_queues))
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        registry.register(BullqCollector(no_queues))  # its names are known without a scrape


def test_urls_naming_the_view_load_without_prometheus_client() -> None:
    # a worker or a management command loads urls.py too (Celery's Django fix-up does): a
    # project that mounts the view must not need the extra there
    script = (
        "import sys; sys.modules['prometheus_client'] = None\n"
        "import django; django.setup()\n"
        "import tests.urls\n"
        "from django.core.exceptions import ImproperlyConfigured\n"
        "from django.test import RequestFactory\n"
        "from django_bullq.prometheus.views import metrics\n"
        "request = RequestFactory().get('/bullq/metrics')\n"
        "user = {'is_authenticated': True, 'has_perm': lambda s, p: True}\n"
        "request.user = type('U', (), user)()\n"
        "try:\n"
        "    metrics(request)\n"
        "except ImproperlyConfigured as exc:\n"
        "    print('refused:', exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "django-bullq[prometheus]" in done.stdout
