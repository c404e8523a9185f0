"""The job page and job lists read like an operator's page (issue 15, item 6): local times with
UTC on hover, durations in units, waited vs ran, progress only when reported, earlier failures
as attempt history, the exception type beside the failed reason."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from django_bullq import task
from django_bullq.admin import display
from django_bullq.conf import get_connection, get_queue
from django_bullq.failures import parse_trace
from tests.support.admin_users import staff_client
from tests.support.helpers_django import burst

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
EVENTS_JS = ROOT / "django_bullq" / "static" / "django_bullq" / "js" / "bullq-events.js"
#: 2026-03-01 12:00:00.250 UTC, in epoch ms
NOON_MS = 1_772_366_400_250

PYTHON_TRACE = """Traceback (most recent call last):
  File "/app/tasks.py", line 3, in fetch
    raise ConnectionError("feed <b>down</b>")
ConnectionError: feed <b>down</b>
"""
NODE_TRACE = """TypeError: Cannot read properties of undefined (reading 'x')
    at Worker.processor (/app/worker.js:10:5)
    at async Worker.processJob (/app/node_modules/bullmq/dist/worker.js:1:1)"""


@task(name="tests.admin_job_page.fails_once", attempts=2)
def fails_once(key: str) -> str:
    """Raises ``ValueError`` on its first run, returns ``"ok"`` on the retry."""
    if int(get_connection("default").sync_client().incr(key)) == 1:
        raise ValueError("first try <i>fails</i>")
    return "ok"


@pytest.fixture
def client() -> Client:
    return staff_client(every=True)


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"jp-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


def jurl(name: str, job_id: str) -> str:
    return reverse("admin:django_bullq_job", kwargs={"queue": name, "job_id": job_id})


def qurl(name: str, state: str) -> str:
    return reverse("admin:django_bullq_queue", kwargs={"queue": name}) + f"?state={state}"


def finished_job(qname: str, **fields: Any) -> str:
    """A job added at NOON_MS, processed 10.25 s later and finished 63 s after that."""
    q = get_queue(qname)
    job = q.add("report", {"n": 1})
    q.client.hset(
        q.keys.job(job.id),
        mapping={
            "timestamp": NOON_MS,
            "processedOn": NOON_MS + 10_250,
            "finishedOn": NOON_MS + 10_250 + 63_000,
            **fields,
        },
    )
    return job.id


# --- durations and times --------------------------------------------------------------------


@pytest.mark.parametrize(
    "ms, text",
    [
        (0, "0 ms"),
        (250, "250 ms"),
        (999, "999 ms"),
        (1000, "1 s"),
        (1500, "1.5 s"),
        (10_250, "10.25 s"),
        (59_994, "59.99 s"),
        (59_995, "1 min"),
        (63_000, "1 min 3 s"),
        (3_600_000, "1 h"),
        (7_500_000, "2 h 5 min"),
        (90_061_000, "1 d 1 h"),
        (None, "–"),
        (-5, "–"),
    ],
)
def test_durations_read_in_units(ms: int | None, text: str) -> None:
    assert display.duration_text(ms) == text


def test_durations_use_the_locales_decimal_separator(settings: Any) -> None:
    from django.utils import translation

    with translation.override("de"):
        assert display.duration_text(10_250) == "10,25 s"


def test_times_are_local_with_utc_on_hover(settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Vienna"
    shown = display.time_html(NOON_MS, field="processedOn")
    assert shown == (
        '<time datetime="2026-03-01T12:00:00.250Z" title="2026-03-01 12:00:00.250 UTC"'
        ' data-bullq-field="processedOn" data-bullq-format="time">'
        "2026-03-01 13:00:00 UTC+01:00</time>"
    )
    settings.TIME_ZONE = "UTC"
    assert ">2026-03-01 12:00:00 UTC</time>" in display.time_html(NOON_MS)
    assert display.time_html(None).endswith(">–</time>")


def test_js_formats_times_and_durations_as_the_server_does(settings: Any) -> None:
    """The live page re-renders times and durations from snapshots: the same text as Python."""
    node = shutil.which("node")
    assert node, "node is needed (make test installs it for the interop tests)"
    durations = [0, 250, 999, 1000, 1500, 10_250, 59_994, 59_995, 63_000, 7_500_000, 90_061_000]
    zones = ["UTC", "Europe/Vienna", "America/New_York", "Asia/Kolkata"]
    script = (
        "const vm = require('node:vm'); const fs = require('node:fs');"
        "const win = {}; win.window = win;"
        f"vm.runInNewContext(fs.readFileSync({json.dumps(str(EVENTS_JS))}, 'utf8'), win);"
        "const f = win.BullqEvents.format;"
        f"const out = {{durations: {json.dumps(durations)}.map((ms) => f.duration(ms, '.')),"
        f" times: {json.dumps(zones)}.map((tz) => f.time({NOON_MS}, tz))}};"
        "console.log(JSON.stringify(out));"
    )
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["durations"] == [display.duration_text(ms) for ms in durations]
    expected = []
    for zone in zones:
        settings.TIME_ZONE = zone
        expected.append([display.local_text(NOON_MS), display.utc_text(NOON_MS)])
    assert got["times"] == expected


def test_job_page_shows_readable_times_and_waited_vs_ran(client: Client, qname: str) -> None:
    job_id = finished_job(qname)
    body = client.get(jurl(qname, job_id)).content.decode()
    text = re.sub(r"<[^>]+>", " ", body)
    for raw in (NOON_MS, NOON_MS + 10_250, NOON_MS + 73_250):
        assert str(raw) not in text  # no epoch milliseconds as text
    assert "2026-03-01 12:00:10 UTC" in text and "2026-03-01 12:01:13 UTC" in text
    assert 'title="2026-03-01 12:00:10.500 UTC"' in body
    assert re.search(r'data-bullq-field="waited"[^>]*>10\.25 s<', body)
    assert re.search(r'data-bullq-field="ran"[^>]*>1 min 3 s<', body)


def test_list_and_overview_durations_read_in_units(client: Client, qname: str) -> None:
    q = get_queue(qname)
    job = q.add("old", {})
    q.client.hset(q.keys.job(job.id), "timestamp", NOON_MS)
    body = client.get(qurl(qname, "waiting")).content.decode()
    # the live page rewrites what is inside [data-bullq-latency]
    assert re.search(
        # "N d" alone when the hours are 0 (the hour after noon UTC: the job is from noon)
        r"oldest waiting job: <span data-bullq-latency[^>]*><span[^>]*>\d+ d( \d+ h)?<",
        body,
    )
    assert "2026-03-01 12:00:00 UTC" in body
    overview = client.get(reverse("admin:django_bullq_bullqqueue_changelist")).content.decode()
    assert " ms</td>" not in overview


# --- progress -------------------------------------------------------------------------------


def test_progress_shows_only_when_the_job_reported_it(client: Client, qname: str) -> None:
    silent = finished_job(qname)
    body = client.get(jurl(qname, silent)).content.decode()
    row = re.search(r'<tr data-bullq-section="progress"[^>]*>', body)
    assert row and "hidden" in row.group(0)  # no 0 % bar: the row waits for a progress event
    q = get_queue(qname)
    reported = q.add("r", {})
    reported.update_progress(0)
    body = client.get(jurl(qname, reported.id)).content.decode()
    row = re.search(r'<tr data-bullq-section="progress"[^>]*>', body)
    assert row and "hidden" not in row.group(0)
    assert '<progress max="100" value="0">' in body
    listed = client.get(qurl(qname, "waiting")).content.decode()
    cells = dict(
        re.findall(
            r'<tr data-job-id="([^"]+)">.*?data-bullq-field="progress">([^<]*)<', listed, re.S
        )
    )
    assert cells == {silent: "", reported.id: "0"}  # no 0 for the job that never reported


# --- failures -------------------------------------------------------------------------------


def test_traces_give_the_exception_type_and_message() -> None:
    assert parse_trace(PYTHON_TRACE) == ("ConnectionError", "feed <b>down</b>")
    assert parse_trace(NODE_TRACE) == (
        "TypeError",
        "Cannot read properties of undefined (reading 'x')",
    )
    assert parse_trace("just text") == (None, "just text")
    assert parse_trace('  File "x.py", line 1\nKeyboardInterrupt\n') == ("KeyboardInterrupt", "")


def test_a_failed_job_shows_its_reason_with_the_exception_type(client: Client, qname: str) -> None:
    job_id = finished_job(
        qname,
        failedReason="feed <b>down</b>",
        stacktrace=json.dumps([PYTHON_TRACE]),
        atm=1,
    )
    q = get_queue(qname)
    q.client.lrem(q.keys["wait"], 0, job_id)
    q.client.zadd(q.keys["failed"], {job_id: NOON_MS})
    body = client.get(jurl(qname, job_id)).content.decode()
    section = re.search(r'<div data-bullq-section="failedReason"[^>]*>(.*?)</div>', body, re.S)
    assert section and "hidden" not in section.group(0).split(">")[0]
    assert "ConnectionError" in section.group(1)
    assert "feed &lt;b&gt;down&lt;/b&gt;" in section.group(1) and "<b>down" not in body
    listed = client.get(qurl(qname, "failed")).content.decode()
    assert "ConnectionError: feed &lt;b&gt;down&lt;/b&gt;" in listed


def test_a_job_retried_then_completed_shows_its_failure_as_history(
    client: Client, qname: str
) -> None:
    key = f"jp:calls:{uuid.uuid4().hex}"
    job: Any = fails_once.using(queue=qname, on_commit=False).enqueue(key)
    burst(qname)
    job.refresh()
    assert job.get_state() == "completed" and job.failed_reason  # BullMQ keeps the field
    resp = client.get(jurl(qname, job.id))
    body = resp.content.decode()
    section = re.search(r'<div data-bullq-section="failedReason"[^>]*>', body)
    assert section and "hidden" in section.group(0)  # not shown as the job's current failure
    history = resp.context["attempts"]
    assert [(a.number, a.outcome, a.type, a.message) for a in history] == [
        (1, "failed", "ValueError", "first try <i>fails</i>"),
        (2, "completed", None, ""),
    ]
    block = body.split('id="bullq-attempts"', 1)[1]
    assert "ValueError" in block and "first try &lt;i&gt;fails&lt;/i&gt;" in block
    listed = client.get(qurl(qname, "completed")).content.decode()
    assert "first try" not in listed  # the completed list shows no old failure


def test_short_ids_do_not_wrap_in_lists(client: Client, qname: str) -> None:
    q = get_queue(qname)
    job = q.add("a", {})
    body = client.get(qurl(qname, "waiting")).content.decode()
    assert re.search(rf'<td class="bullq-id"><a [^>]*>{job.id}</a></td>', body)
    css = (ROOT / "django_bullq/static/django_bullq/css/bullq-admin.css").read_text()
    assert re.search(r"#result_list td\.bullq-id \{[^}]*white-space: nowrap", css)
