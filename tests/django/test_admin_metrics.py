"""The admin's Metrics page (issue 15 item 5): what a real worker recorded, drawn as SVG on
the server, escaped, under the strict CSP; the queue page and overview read the same store."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from django_bullq.conf import get_queue
from tests.django.test_admin_csp import Tags, csp_settings  # noqa: F401 - a fixture
from tests.support.admin_users import staff_client
from tests.support.helpers_django import burst

pytestmark = pytest.mark.django_db(transaction=True)

ADD = "tests.testapp.tasks.add"
FAILS = "tests.testapp.tasks.always_fails"
#: A job name from any producer: markup and quotes that must come out as text.
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&"\''


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"met-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


@pytest.fixture
def viewer() -> Client:
    return staff_client("view_bullqqueue")


def metrics_url(queue_name: str, **query: str) -> str:
    url = reverse("admin:django_bullq_metrics", kwargs={"queue": queue_name})
    return url + ("?" + urlencode(query) if query else "")


def run_jobs(name: str) -> None:
    """Enqueue 6 adds, 2 failing tasks and a job of a hostile name (no such task: it fails),
    then run a real Django worker until the queue is idle (it flushes as it stops)."""
    q = get_queue(name)
    for i in range(6):
        q.add(ADD, {"args": [i, 1], "kwargs": {}})
    q.add(FAILS, {"args": ["k"], "kwargs": {}})
    q.add(FAILS, {"args": ["k"], "kwargs": {}})
    q.add(HOSTILE, {"args": [], "kwargs": {}})
    burst(name)


def test_metrics_page_shows_what_a_real_worker_recorded(qname: str, viewer: Client) -> None:
    run_jobs(qname)
    page = viewer.get(metrics_url(qname))
    assert page.status_code == 200
    text = page.content.decode()
    rows = dict(re.findall(r'<tr data-name="([^"]*)"[^>]*>(.*?)</tr>', text, re.S))
    add_row = re.findall(r"<td>(\d+)</td>", rows[ADD])
    assert add_row[:3] == ["6", "0", "0"]  # completed, failed, retried
    assert re.findall(r"<td>(\d+)</td>", rows[FAILS])[:3] == ["0", "2", "0"]
    assert text.count('<svg class="bullq-metrics-chart"') == 3  # counts, run, wait
    assert "<rect" in text and "<polyline" in text
    assert 'id="bullq-oldest-waiting">none<' in text  # nothing waits any more
    one = viewer.get(metrics_url(qname, window="72h", name=ADD)).content.decode()
    assert 'id="bullq-metrics-name">tests.testapp.tasks.add<' in one
    assert 'class="selected">last 72h<' in one


def test_metrics_page_escapes_a_hostile_job_name(qname: str, viewer: Client) -> None:
    run_jobs(qname)
    text = viewer.get(metrics_url(qname)).content.decode()
    assert HOSTILE not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x" in text
    assert "name=%3Cscript%3Ealert%28%22x%22%29" in text  # its filter link is URL-encoded
    only = viewer.get(metrics_url(qname, name="<script>alert(1)</script>"))
    assert only.status_code == 200 and b"<script>alert(1)" not in only.content


@pytest.mark.usefixtures("csp_settings")
def test_metrics_page_keeps_to_the_strict_csp(qname: str, viewer: Client) -> None:
    run_jobs(qname)
    response = viewer.get(metrics_url(qname))
    parsed = Tags()
    parsed.feed(response.content.decode())
    assert parsed.inline == []
    for tag, attrs in parsed.tags:
        assert "style" not in attrs and not [a for a in attrs if a.startswith("on")], tag
        assert tag != "script" or attrs.get("src"), tag
    assert b"django_bullq/css/bullq-metrics.css" in response.content


def test_a_bad_window_shows_the_last_hour_and_an_unknown_queue_is_404(
    qname: str, viewer: Client
) -> None:
    page = viewer.get(metrics_url(qname, window="1y"), follow=True)
    assert page.status_code == 200
    assert b"Showing the last hour" in page.content
    assert b'class="selected">last 1h<' in page.content
    assert viewer.get(metrics_url("bad:name")).status_code == 404
    assert staff_client().get(metrics_url(qname)).status_code == 403  # no view permission


def test_queue_page_and_overview_show_throughput_by_default(qname: str, viewer: Client) -> None:
    """The complaint: the throughput chart was empty unless METRICS_MAX_DATA_POINTS was set."""
    run_jobs(qname)
    q = get_queue(qname)
    assert q.client.exists(q.keys["metrics:completed"]) == 0  # BullMQ's metrics are off
    queue_page = viewer.get(reverse("admin:django_bullq_queue", kwargs={"queue": qname}))
    text = queue_page.content.decode()
    assert '<svg class="bullq-chart"' in text and "completed: 6" in text
    assert metrics_url(qname) in text
    overview = viewer.get(reverse("admin:django_bullq_bullqqueue_changelist")).content.decode()
    row = re.search(rf'<tr data-queue="{qname}">(.*?)</tr>', overview, re.S)
    assert row is not None and "<polyline points=" in row.group(1)
    assert metrics_url(qname) in row.group(1)


def test_queue_page_takes_bullmq_metrics_where_they_are_larger(
    qname: str, viewer: Client, settings: Any
) -> None:
    """A Node worker writes only BullMQ's metrics: the chart shows them."""
    q = get_queue(qname)
    q.client.hset(q.keys["metrics:completed"], mapping={"count": 9, "prevTS": 0, "prevCount": 9})
    q.client.lpush(q.keys["metrics:completed"] + ":data", 9)
    text = viewer.get(reverse("admin:django_bullq_queue", kwargs={"queue": qname})).content
    assert b"completed: 9" in text
    assert not q.client.keys(q.keys["bullq:metrics:*"])  # none of ours: BullMQ's alone
