"""The job index (issue 15 item 2): the recorder's batches, watermark and retention, runworker
recording, and the queue page's filters of finished jobs reading it (SQLite here; PostgreSQL
in test_job_index_postgres.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core import checks
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from django_bullq import Queue
from django_bullq import checks as bullq_checks
from django_bullq.conf import get_queue
from django_bullq.models import JobRecord
from django_bullq.recorder import OVERLAP_MS, Recorder, purge, searchable
from tests.support.admin_users import staff_client
from tests.support.helpers_django import burst
from tests.testapp import tasks as sample

pytestmark = pytest.mark.django_db(transaction=True)

SETTINGS = {
    "ENABLED": True,
    "DATABASE": "default",
    "RETENTION_S": 0,
    "POLL_INTERVAL": 1.0,
    "BATCH_SIZE": 10,
    "MAX_DATA_BYTES": 65_536,
    "MAX_TEXT_CHARS": 4096,
}


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"idx-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


@pytest.fixture
def index_on(settings: Any) -> None:
    settings.BULLQ = {**settings.BULLQ, "JOB_INDEX": {"ENABLED": True}}


def finish(q: Queue, state: str, name: str, data: Any, finished_ms: int) -> str:
    """A job moved to completed/failed by a raw pipeline, as a worker leaves it."""
    job = q.add(name, data)
    move(q, job.id, state, finished_ms)
    return job.id


def move(q: Queue, job_id: str, state: str, finished_ms: int) -> None:
    pipe = q.client.pipeline()
    for other in ("completed", "failed"):
        pipe.zrem(q.keys[other], job_id)
    pipe.lrem(q.keys["wait"], 0, job_id)
    pipe.zadd(q.keys[state], {job_id: finished_ms})
    fields: dict[str, Any] = {"finishedOn": finished_ms, "atm": 1}
    if state == "failed":
        fields["failedReason"] = "Boom <b>"
    pipe.hset(q.keys.job(job_id), mapping=fields)
    pipe.execute()


def inserts(ctx: CaptureQueriesContext) -> int:
    return sum(1 for q in ctx.captured_queries if q["sql"].startswith("INSERT"))


def test_the_recorder_writes_finished_jobs_in_batches(qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    done = [finish(q, "completed", "mail", {"To": "Ann", "n": n}, now + n) for n in range(25)]
    bad = [finish(q, "failed", "sms", {"n": n}, now + n) for n in range(5)]
    q.add("waiting", {})
    with CaptureQueriesContext(connection) as ctx:
        assert Recorder(q, SETTINGS).record() == 30
    assert inserts(ctx) == 3 + 1  # 10 + 10 + 5 completed, 5 failed: one upsert per batch
    rows = {r.job_id: r for r in JobRecord.objects.filter(queue=qname)}
    assert set(rows) == set(done + bad)
    first = rows[done[0]]
    assert (first.name, first.state, first.finished_on) == ("mail", "completed", now)
    assert first.data == {"To": "Ann", "n": 0} and first.text == '{"to":"ann","n":0}'
    assert rows[bad[0]].failed_reason == "Boom <b>" and rows[bad[0]].attempts_made == 1


def test_a_pass_writes_only_what_finished_since_the_last(qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    recorder = Recorder(q, SETTINGS)
    for n in range(12):
        finish(q, "completed", "t", {}, now + n)
    assert recorder.record() == 12
    with CaptureQueriesContext(connection) as ctx:
        assert recorder.record() == 0
    assert inserts(ctx) == 0
    for n in range(3):
        finish(q, "completed", "t", {}, now + 100 + n)
    assert recorder.record() == 3
    assert Recorder(q, SETTINGS).record() == 0  # a new recorder resumes from the index


def test_a_job_finishing_earlier_than_the_watermark_is_still_recorded(qname: str) -> None:
    """Workers' clocks differ: a job can finish "before" one already recorded."""
    q = get_queue(qname)
    now = int(time.time() * 1000)
    recorder = Recorder(q, SETTINGS)
    finish(q, "completed", "t", {}, now)
    recorder.record()
    late = finish(q, "completed", "t", {}, now - OVERLAP_MS // 2)
    assert recorder.record() == 1
    assert JobRecord.objects.filter(job_id=late).exists()


def test_many_jobs_finishing_in_the_same_ms_are_all_recorded(qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    ids = q.add_bulk([("t", {"n": n}) for n in range(35)])
    for job in ids:
        move(q, job.id, "completed", now)
    assert Recorder(q, SETTINGS).record() == 35
    assert JobRecord.objects.filter(queue=qname).count() == 35


def test_a_retried_jobs_row_follows_its_last_finish(qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    recorder = Recorder(q, SETTINGS)
    job_id = finish(q, "failed", "t", {}, now)
    recorder.record()
    move(q, job_id, "completed", now + 10)
    recorder.record()
    row = JobRecord.objects.get(queue=qname, job_id=job_id)
    assert (row.state, row.finished_on) == ("completed", now + 10)
    assert JobRecord.objects.filter(queue=qname).count() == 1


def test_retention_deletes_rows_older_than_retention_s(qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    old = finish(q, "completed", "t", {}, now - 7_200_000)
    new = finish(q, "completed", "t", {}, now - 60_000)
    Recorder(q, SETTINGS).record()
    assert purge(0, now_ms=now) == 0  # 0 keeps every row
    assert purge(3600, now_ms=now) == 1
    assert list(JobRecord.objects.values_list("job_id", flat=True)) == [new]
    assert old not in {r.job_id for r in JobRecord.objects.all()}


def test_a_recorder_purges_on_its_passes(qname: str) -> None:
    q = get_queue(qname)
    finish(q, "completed", "t", {}, int(time.time() * 1000) - 7_200_000)
    Recorder(q, SETTINGS).record()
    assert JobRecord.objects.count() == 1
    Recorder(q, {**SETTINGS, "RETENTION_S": 3600}).record()
    assert JobRecord.objects.count() == 0


def test_large_or_nul_data_is_kept_as_text_only() -> None:
    assert searchable('{"a": "x"}', 100, 50) == ('{"a": "x"}', '{"a": "x"}')
    big = '{"a": "' + "Y" * 200 + '"}'
    assert searchable(big, 100, 20) == (None, '{"a": "' + "y" * 13)
    assert searchable('{"a": "\\u0000b"}', 100, 50)[0] is None
    assert searchable('{"c": "Z\\u00fcrich"}', 100, 50) == (
        '{"c": "Z\\u00fcrich"}',
        '{"c":"zürich"}',
    )
    assert searchable("not json", 100, 50) == (None, "not json")


def test_runworker_records_its_finished_jobs_with_the_index_on(
    index_on: None, queue_name: str
) -> None:
    job = sample.add.using(queue=queue_name).enqueue(1, b=2)
    burst(queue_name)
    row = JobRecord.objects.get(queue=queue_name, job_id=job.id)
    assert row.state == "completed" and row.data["args"] == [1]
    get_queue(queue_name).obliterate(force=True)


def test_runworker_records_nothing_with_the_index_off(queue_name: str) -> None:
    sample.add.using(queue=queue_name).enqueue(1, b=2)
    burst(queue_name)
    assert not JobRecord.objects.filter(queue=queue_name).exists()
    get_queue(queue_name).obliterate(force=True)


# --- the queue page reads it ------------------------------------------------------------------


def found(client: Client, qname: str, **query: Any) -> Any:
    url = reverse("admin:django_bullq_queue", kwargs={"queue": qname})
    resp = client.get(url + "?" + urlencode(query))
    assert resp.status_code == 200
    return resp


def test_filters_of_finished_jobs_read_the_index_when_it_is_on(index_on: None, qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    a = finish(q, "completed", "mail", {"user": {"id": 42}, "note": "Hello World"}, now - 50_000)
    b = finish(q, "completed", "mail", {"user": {"id": 7}, "items": [{"sku": "A-1"}]}, now - 40_000)
    c = finish(q, "failed", "sms", {"user": {"id": 42}}, now - 30_000)
    Recorder(q, SETTINGS).record()
    finish(q, "completed", "mail", {"user": {"id": 42}}, now)  # not recorded yet
    q.remove(a)  # gone from Redis, kept by the index
    client = staff_client("view_bullqqueue")
    resp = found(client, qname, state="completed", path="user.id", value="42")
    assert resp.context["found"].source == "index"
    assert [j.id for j in resp.context["jobs"]] == [a]
    assert "(index only)" in resp.content.decode() and "in the job index" in resp.content.decode()
    cases: list[tuple[dict[str, str], list[str]]] = [
        ({"state": "completed", "name": "mail"}, [b, a]),
        ({"state": "completed", "q": "hello world"}, [a]),
        ({"state": "completed", "path": "items.0.sku", "value": "A-1"}, [b]),
        ({"state": "completed", "path": "items"}, [b]),
        ({"state": "failed", "path": "user.id", "value": "42"}, [c]),
        ({"state": "completed", "until": _local(now - 45_000)}, [a]),
        ({"state": "completed", "since": _local(now - 45_000)}, [b]),
    ]
    for query, expected in cases:
        assert [j.id for j in found(client, qname, **query).context["jobs"]] == expected, query


def test_index_pages_continue_by_offset(index_on: None, qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    ids = [finish(q, "completed", "t", {}, now - 1000 + n) for n in range(60)]
    Recorder(q, {**SETTINGS, "BATCH_SIZE": 100}).record()
    client = staff_client("view_bullqqueue")
    first = found(client, qname, state="completed", name="t").context["found"]
    rest = found(client, qname, state="completed", name="t", cursor=50).context["found"]
    assert (first.total, first.cursor, rest.cursor) == (60, 50, None)
    assert [j.id for j in first.jobs + rest.jobs] == list(reversed(ids))


def test_without_the_index_finished_jobs_are_walked_in_redis(qname: str) -> None:
    q = get_queue(qname)
    job_id = finish(q, "completed", "mail", {}, int(time.time() * 1000))
    resp = found(staff_client("view_bullqqueue"), qname, state="completed", name="mail")
    assert resp.context["found"].source == "redis"
    assert [j.id for j in resp.context["jobs"]] == [job_id]


def test_every_matching_job_of_the_index_skips_those_gone_from_redis(
    index_on: None, qname: str
) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    ids = [finish(q, "failed", "mail", {}, now + n) for n in range(3)]
    Recorder(q, SETTINGS).record()
    q.remove(ids[0])
    client = staff_client("view_bullqqueue", "retry_job")
    url = reverse("admin:django_bullq_action", kwargs={"queue": qname, "action": "retry"})
    fields = {"state": "failed", "name": "mail", "select_all": "1"}
    assert client.post(url, fields).context["count"] == 3
    client.post(url, {**fields, "confirm": "yes"})
    assert [q.get_job_state(i) for i in ids[1:]] == ["waiting", "waiting"]


@pytest.mark.parametrize(
    "value",
    [
        {"ENABLED": "yes"},
        {"RETENTION_S": -1},
        {"BATCH_SIZE": 0},
        {"DATABASE": "x"},
        {"COLOR": 1},
        [],
    ],
)
def test_bad_job_index_settings_fail_the_system_check(settings: Any, value: Any) -> None:
    settings.BULLQ = {**settings.BULLQ, "JOB_INDEX": value}
    messages = [m for m in checks.run_checks(tags=[bullq_checks.TAG]) if "JOB_INDEX" in m.msg]
    assert messages and all(m.level == checks.ERROR for m in messages)


def _local(ms: int) -> str:
    from datetime import datetime

    from django.utils import timezone

    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.get_current_timezone())
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def test_one_recorder_at_a_time_records_a_queue(qname: str) -> None:
    """Several runworker processes serve a queue: the one holding its lease records it."""
    q = get_queue(qname)
    finish(q, "completed", "t", {}, int(time.time() * 1000))
    other = q.client.lock(f"{q.keys.prefix}::bullq-recorder:{qname}", timeout=60)
    assert other.acquire(blocking=False)
    recorder = Recorder(q, SETTINGS)
    assert recorder.record() == 0 and not JobRecord.objects.exists()
    other.release()
    assert recorder.record() == 1
    assert q.client.exists(f"{q.keys.prefix}::bullq-recorder:{qname}") == 0  # released
