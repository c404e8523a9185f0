"""The queue page's filters over Redis (issue 15 item 2): each field, the walk's budget and
cursor, bookmarkable links, "every matching job" actions, escaping."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from django_bullq import Queue
from django_bullq.admin import listing, scan
from django_bullq.conf import get_queue
from tests.support.admin_users import staff_client

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"srch-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


@pytest.fixture
def viewer() -> Client:
    return staff_client("view_bullqqueue")


def page(client: Client, qname: str, **query: Any) -> Any:
    url = reverse("admin:django_bullq_queue", kwargs={"queue": qname})
    resp = client.get(url + "?" + urlencode(query))
    assert resp.status_code == 200
    return resp


def listed(client: Client, qname: str, **query: Any) -> list[str]:
    return [job.id for job in page(client, qname, **query).context["jobs"]]


def finish(q: Queue, state: str, name: str, data: Any, finished_ms: int) -> str:
    """A job moved to completed/failed by a raw pipeline, as a worker leaves it."""
    job = q.add(name, data)
    pipe = q.client.pipeline()
    pipe.lrem(q.keys["wait"], 0, job.id)
    pipe.zadd(q.keys[state], {job.id: finished_ms})
    fields: dict[str, Any] = {"finishedOn": finished_ms, "processedOn": finished_ms, "atm": 1}
    if state == "failed":
        fields["failedReason"] = "boom"
    pipe.hset(q.keys.job(job.id), mapping=fields)
    pipe.execute()
    return job.id


def local(ms: int) -> str:
    """``ms`` as a ``datetime-local`` value in the current time zone (to the second)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.get_current_timezone())
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def test_id_filter_finds_the_job_in_any_state_and_the_other_fields_still_apply(
    viewer: Client, qname: str
) -> None:
    q = get_queue(qname)
    done = finish(q, "completed", "mail", {"to": "ann"}, int(time.time() * 1000))
    q.add("other", {})
    assert listed(viewer, qname, state="waiting", id=done) == [done]
    assert listed(viewer, qname, state="waiting", id=done, name="mail") == [done]
    assert listed(viewer, qname, state="waiting", id=done, name="sms") == []
    assert listed(viewer, qname, state="waiting", id="no-such-job") == []


def test_name_filter_is_exact(viewer: Client, qname: str) -> None:
    q = get_queue(qname)
    mail = q.add("mail", {})
    q.add("mailer", {})
    q.add("sms", {})
    assert listed(viewer, qname, state="waiting", name="mail") == [mail.id]


def test_state_filter_lists_only_that_state(viewer: Client, qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    bad = finish(q, "failed", "mail", {}, now)
    finish(q, "completed", "mail", {}, now)
    q.add("mail", {})
    assert listed(viewer, qname, state="failed", name="mail") == [bad]


def test_since_until_filter_finish_time_in_finished_states(viewer: Client, qname: str) -> None:
    q = get_queue(qname)
    base = (int(time.time()) - 3600) * 1000
    ids = [finish(q, "completed", "t", {"n": n}, base + n * 60_000) for n in range(5)]
    shown = listed(
        viewer, qname, state="completed", since=local(base + 60_000), until=local(base + 180_000)
    )
    assert shown == [ids[3], ids[2], ids[1]]  # newest first
    resp = page(viewer, qname, state="completed", since=local(base + 120_000))
    assert [j.id for j in resp.context["jobs"]] == [ids[4], ids[3], ids[2]]
    assert resp.context["found"].total == 3  # ZCOUNT of the range: nothing else walked
    assert resp.context["time_label"] == "finished"


def test_since_until_filter_creation_time_in_other_states(viewer: Client, qname: str) -> None:
    q = get_queue(qname)
    old = q.add("t", {}, timestamp=int(time.time() * 1000) - 7_200_000)
    new = q.add("t", {})
    hour_ago = local(int(time.time() * 1000) - 3_600_000)
    assert listed(viewer, qname, state="waiting", since=hour_ago) == [new.id]
    assert listed(viewer, qname, state="waiting", until=hour_ago) == [old.id]
    assert page(viewer, qname, state="waiting").context["time_label"] == "created"


def test_text_filter_is_case_insensitive_and_finds_non_ascii(viewer: Client, qname: str) -> None:
    q = get_queue(qname)
    zurich = q.add("t", {"city": "Zürich", "note": "Needle in HAY"})
    q.add("t", {"city": "Linz"})
    escaped = q.add("t", {})
    q.client.hset(q.keys.job(escaped.id), "data", json.dumps({"city": "Zürich"}))  # \u00fc
    assert listed(viewer, qname, state="waiting", q="needle in hay") == [zurich.id]
    assert listed(viewer, qname, state="waiting", q="ZÜRICH") == [escaped.id, zurich.id]


@pytest.mark.parametrize(
    "path, value, expected",
    [
        ("user.id", "42", ["int42"]),
        ("user.id", '"42"', ["str42"]),
        ("user.id", "", ["int42", "str42", "int7"]),  # the path exists
        ("items.0.sku", "A-1", ["int42"]),
        ("flag", "true", ["str42"]),
        ("flag", "1", ["int42"]),
        ("user.name", "null", ["int42"]),
        ("user.missing", "", []),
    ],
)
def test_json_path_filter(
    viewer: Client, qname: str, path: str, value: str, expected: list[str]
) -> None:
    q = get_queue(qname)
    made = {
        "int42": q.add(
            "t", {"user": {"id": 42, "name": None}, "items": [{"sku": "A-1"}], "flag": 1}
        ),
        "str42": q.add("t", {"user": {"id": "42"}, "items": [], "flag": True}),
    }
    made["int7"] = q.add("t", {"user": {"id": 7}})
    q.add("t", ["not", "an", "object"])
    query = {"state": "waiting", "path": path, **({"value": value} if value else {})}
    wanted = sorted(made[k].id for k in expected)
    assert sorted(listed(viewer, qname, **query)) == wanted


def test_the_walk_stops_at_its_budget_and_the_cursor_continues_it(
    viewer: Client, qname: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = get_queue(qname)
    jobs = q.add_bulk([("t", {"n": n, "hit": n % 300 == 0}) for n in range(2400)])
    hits = [j.id for j in reversed(jobs) if j.data["hit"]]  # newest first: 2100, 1800, ... 0
    monkeypatch.setattr(scan, "BUDGET_JOBS", 1000)
    query = {"state": "waiting", "path": "hit", "value": "true"}
    seen: list[str] = []
    cursor = 0
    walks = 0
    while cursor is not None:
        resp = page(viewer, qname, **query, cursor=cursor)
        found = resp.context["found"]
        seen += [j.id for j in found.jobs]
        body = resp.content.decode()
        assert f"scanned {found.scanned} of 2400 waiting jobs" in body
        if found.cursor is not None:
            assert f"cursor={found.cursor}" in body and "continue" in body
        cursor = found.cursor
        walks += 1
    assert seen == hits and walks == 3  # 1000 + 1000 + 400 jobs, no match lost or repeated


def test_a_page_of_matches_ends_the_walk_at_the_last_match(viewer: Client, qname: str) -> None:
    q = get_queue(qname)
    jobs = q.add_bulk([("t", {"n": n}) for n in range(120)])
    first = page(viewer, qname, state="waiting", name="t").context["found"]
    assert len(first.jobs) == 50 and first.cursor == 50
    second = page(viewer, qname, state="waiting", name="t", cursor=50).context["found"]
    rest = page(viewer, qname, state="waiting", name="t", cursor=100).context["found"]
    shown = [j.id for j in first.jobs + second.jobs + rest.jobs]
    assert shown == [j.id for j in reversed(jobs)] and rest.cursor is None


def test_filters_are_in_every_link_of_the_page(viewer: Client, qname: str) -> None:
    q = get_queue(qname)
    q.add_bulk([("mail", {"n": n}) for n in range(60)])
    body = page(viewer, qname, state="waiting", name="mail", q="n").content.decode()
    kept = "name=mail&amp;q=n"
    for state in ("failed", "completed", "delayed"):
        assert f"?state={state}&amp;{kept}" in body  # the state tabs keep the filter
    assert f"?state=waiting&amp;{kept}&amp;cursor=50" in body  # the continue link
    assert 'name="name" value="mail"' in body and 'name="q" value="n"' in body
    assert re.search(r'data-live-url="[^"]*name=mail', body)


def test_a_filtered_page_is_not_redrawn_by_the_live_json(viewer: Client, qname: str) -> None:
    get_queue(qname).add("mail", {})
    url = reverse("admin:django_bullq_queue_live", kwargs={"queue": qname})
    assert viewer.get(url, {"state": "waiting", "name": "mail"}).json()["list"] is None
    assert viewer.get(url, {"state": "waiting"}).json()["list"]["total"] == 1


@pytest.mark.parametrize(
    "query, why",
    [
        ({"path": "a..b"}, "path"),
        ({"value": "3"}, "value"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2030-01-02T00:00", "until": "2030-01-01T00:00"}, "until"),
        ({"cursor": "-1"}, "cursor"),
    ],
)
def test_a_bad_filter_field_is_left_out_with_a_message(
    viewer: Client, qname: str, query: dict[str, str], why: str
) -> None:
    get_queue(qname).add("mail", {})
    resp = page(viewer, qname, state="waiting", **query)
    shown = [str(m) for m in resp.context["messages"]]
    assert len(shown) == 1 and shown[0].startswith(f"Left out: {why}")


def test_hostile_data_and_filter_text_are_escaped(viewer: Client, qname: str) -> None:
    q = get_queue(qname)
    evil = '<script>alert("x")</script>'
    q.add(evil, {"html": evil})
    for query in ({"q": "<script>"}, {"name": evil}, {"path": "html", "value": evil}):
        body = page(viewer, qname, state="waiting", **query).content.decode()
        assert "<script>alert" not in body
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body


# --- every matching job ---------------------------------------------------------------------


def action(client: Client, qname: str, slug: str, **fields: Any) -> Any:
    url = reverse("admin:django_bullq_action", kwargs={"queue": qname, "action": slug})
    return client.post(url, fields)


def test_remove_every_matching_job_confirms_the_count_then_acts_on_all_of_them(qname: str) -> None:
    q = get_queue(qname)
    doomed = q.add_bulk([("t", {"tenant": 9, "n": n}) for n in range(130)])
    kept = q.add_bulk([("t", {"tenant": 1, "n": n}) for n in range(70)])
    client = staff_client("view_bullqqueue", "remove_job")
    query = {"state": "waiting", "path": "tenant", "value": "9", "select_all": "1"}
    confirm = action(client, qname, "remove", **query)
    assert confirm.status_code == 200 and confirm.context["count"] == 130
    body = confirm.content.decode()
    assert "all 130</strong> waiting jobs matching the filter" in body
    assert 'name="path" value="tenant"' in body and 'name="value" value="9"' in body
    assert q.get_job_counts("waiting")["waiting"] == 200  # nothing done before the confirm
    done = action(client, qname, "remove", **query, confirm="yes")
    assert done.status_code == 302 and "path=tenant" in done["Location"]
    assert all(q.get_job(j.id) is None for j in doomed)
    assert all(q.get_job(j.id) is not None for j in kept)
    entry = LogEntry.objects.latest("action_time")
    assert entry.object_repr == f"queue {qname}"
    assert entry.change_message == (
        "Remove: every waiting job matching {'path': 'tenant', 'value': 9}: 130 of 130 jobs"
    )


def test_retry_every_matching_failed_job(qname: str) -> None:
    q = get_queue(qname)
    now = int(time.time() * 1000)
    mail = [finish(q, "failed", "mail", {}, now + n) for n in range(3)]
    other = finish(q, "failed", "sms", {}, now)
    client = staff_client("view_bullqqueue", "retry_job")
    action(client, qname, "retry", state="failed", name="mail", select_all="1", confirm="yes")
    assert [q.get_job_state(i) for i in mail] == ["waiting"] * 3
    assert q.get_job_state(other) == "failed"


def test_every_matching_job_needs_the_action_permission(qname: str) -> None:
    q = get_queue(qname)
    q.add("t", {"a": 1})
    client = staff_client("view_bullqqueue")
    resp = action(client, qname, "remove", state="waiting", q="a", select_all="1", confirm="yes")
    assert resp.status_code == 403 and q.count() == 1
    assert not LogEntry.objects.exists()


def test_an_action_with_a_bad_filter_is_refused_and_nothing_done(qname: str) -> None:
    q = get_queue(qname)
    q.add("t", {"a": 1})
    client = staff_client("view_bullqqueue", "remove_job")
    fields = {"state": "waiting", "path": "a..", "select_all": "1", "confirm": "yes"}
    resp = action(client, qname, "remove", **fields)
    assert resp.status_code == 302 and q.count() == 1
    assert [str(m) for m in resp.wsgi_request._messages][0].startswith("Remove failed: path")


def test_every_matching_job_acts_on_at_most_max_matching(
    qname: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = get_queue(qname)
    q.add_bulk([("t", {"n": n}) for n in range(30)])
    monkeypatch.setattr(listing, "MAX_MATCHING", 12)
    client = staff_client("view_bullqqueue", "remove_job")
    fields = {"state": "waiting", "name": "t", "select_all": "1"}
    assert "the first 12 now" in action(client, qname, "remove", **fields).content.decode()
    action(client, qname, "remove", **fields, confirm="yes")
    assert q.count() == 18


def test_an_id_filter_says_it_read_the_job_by_its_id(viewer: Client, qname: str) -> None:
    job = get_queue(qname).add("mail", {})
    body = page(viewer, qname, state="failed", id=job.id).content.decode()
    assert f"Job {job.id}, read by its id (in any state)." in body and "scanned" not in body
    body = page(viewer, qname, state="failed", id="nope").content.decode()
    assert "No job nope matching the filter." in body
