"""The live pages' JSON endpoints (issue 15, item 1): what a page polls when its socket cannot
open, and what a live page redraws its job list and workers from. Real Redis, real workers."""

from __future__ import annotations

import base64
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
from django_bullq.conf import get_connection, get_queue
from django_bullq.live.snapshots import job_fields
from tests.support.admin_users import staff_client
from tests.support.helpers_django import burst

pytestmark = pytest.mark.django_db


@task(name="tests.admin_live_json.echo")
def echo(n: int) -> int:
    """Returns ``n``."""
    return n


@task(name="tests.admin_live_json.fails_once", attempts=2)
def fails_once(key: str) -> str:
    """Raises ``ValueError`` on its first run, returns ``"ok"`` on the retry."""
    if int(get_connection("default").sync_client().incr(key)) == 1:
        raise ValueError("first try <i>fails</i>")
    return "ok"


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"lj-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


def queue_json(name: str) -> str:
    return reverse("admin:django_bullq_queue_live", kwargs={"queue": name})


def job_json(name: str, job_id: str) -> str:
    return reverse("admin:django_bullq_job_live", kwargs={"queue": name, "job_id": job_id})


def overview_json() -> str:
    return reverse("admin:django_bullq_live")


def page_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-job-id="([^"]+)"', html)


def test_queue_json_lists_the_same_page_as_the_table_with_its_counts(qname: str) -> None:
    q = get_queue(qname)
    for i in range(3):
        q.add("report", {"i": i}, priority=0)
    q.add("later", {}, delay=60_000)
    c = staff_client(every=True)
    page_url = reverse("admin:django_bullq_queue", kwargs={"queue": qname})
    html = c.get(page_url, {"state": "waiting"}).content.decode()
    got = c.get(queue_json(qname), {"state": "waiting"})
    assert got["Content-Type"] == "application/json"
    body = got.json()
    assert body["counts"]["waiting"] == 3 and body["counts"]["delayed"] == 1
    assert body["paused"] is False and body["workers"] == []
    listed = body["list"]
    assert (listed["state"], listed["page"], listed["pages"], listed["total"]) == (
        "waiting",
        1,
        1,
        3,
    )
    assert [r["id"] for r in listed["jobs"]] == page_ids(html) and len(listed["jobs"]) == 3
    row = listed["jobs"][0]
    assert row["name"] == "report" and row["timestamp"] > 0 and row["progress"] == ""
    assert set(row) == {
        "id",
        "name",
        "timestamp",
        "attemptsMade",
        "priority",
        "progress",
        "failure",
    }
    assert c.get(queue_json(qname), {"state": "nope"}).status_code == 404


def test_live_json_needs_staff_and_the_view_permission(qname: str) -> None:
    job = get_queue(qname).add("report", {})
    urls = [overview_json(), queue_json(qname), job_json(qname, job.id)]
    anonymous = Client()
    no_perm = staff_client("retry_job")  # a permission, but not the view one
    for url in urls:
        assert anonymous.get(url).status_code == 302  # to the admin login
        assert no_perm.get(url).status_code == 403
        assert staff_client("view_bullqqueue").get(url).status_code == 200


def test_rows_are_selectable_only_for_staff_who_may_act(qname: str) -> None:
    get_queue(qname).add("report", {})
    assert (
        staff_client("view_bullqqueue").get(queue_json(qname)).json()["list"]["selectable"] is False
    )
    assert staff_client(every=True).get(queue_json(qname)).json()["list"]["selectable"] is True


def test_job_json_is_the_sockets_snapshot_with_processed_by_and_logs(qname: str) -> None:
    q = get_queue(qname)
    job = echo.using(queue=qname, on_commit=False).enqueue(5)
    job_id = str(getattr(job, "id", "") or job)
    burst(qname, name="json-worker")  # a named worker writes its name as processedBy
    stored = q.get_job(job_id)
    assert stored is not None
    stored.log("line 1")
    body = staff_client("view_bullqqueue").get(job_json(qname, job_id)).json()
    assert body["type"] == "snapshot" and body["id"] is None
    shown = body["job"]
    assert set(shown) == set(job_fields(stored, "completed", []))
    assert shown["state"] == "completed" and shown["returnvalue"] == 5
    assert shown["logs"] == ["line 1"] and shown["processedBy"] == "json-worker"
    assert shown["processedOn"] > 0 and shown["finishedOn"] >= shown["processedOn"]
    assert body["attempts"] == []  # it never failed
    gone = staff_client(every=True).get(job_json(qname, "no-such-job")).json()
    assert gone == {"type": "snapshot", "id": None, "job": None}


def test_job_json_brings_the_attempt_history_of_a_retried_job(qname: str) -> None:
    """The live job page redraws its attempt history (it is not in the socket's snapshot):
    a job that failed and completed on its retry, as the page renders it."""
    job: Any = fails_once.using(queue=qname, on_commit=False).enqueue(f"lj:{uuid.uuid4().hex}")
    burst(qname)
    body = staff_client("view_bullqqueue").get(job_json(qname, job.id)).json()
    assert body["job"]["state"] == "completed"
    rows = [(a["number"], a["outcome"], a["type"], a["message"]) for a in body["attempts"]]
    assert rows == [
        (1, "failed", "ValueError", "first try <i>fails</i>"),
        (2, "completed", None, ""),
    ]
    assert "Traceback" in body["attempts"][0]["trace"] and body["attempts"][1]["trace"] == ""


def test_overview_json_counts_each_queues_worker_connections(qname: str) -> None:
    q = get_queue(qname)
    q.add("report", {})
    # a worker connection as BullMQ names it (Node's, PyPI's and ours): <prefix>:<b64>:w:<x>
    conn = q.client.connection_pool.make_connection()
    name = f"{q.prefix}:{base64.b64encode(qname.encode()).decode()}:w:json-test"
    conn.connect()
    conn.send_command("CLIENT", "SETNAME", name)
    assert conn.read_response() in (b"OK", "OK")
    try:
        rows = staff_client(every=True).get(overview_json()).json()["queues"]
        mine: dict[str, Any] = next(r for r in rows if r["name"] == qname)
        assert mine["workers"] == 1 and mine["counts"]["waiting"] == 1
        assert mine["paused"] is False and mine["latency"] is not None
        workers = staff_client(every=True).get(queue_json(qname)).json()["workers"]
        assert [w["name"] for w in workers] == ["json-test"]
    finally:
        conn.disconnect()


def test_the_overview_lists_redis_clients_once_per_connection_not_per_queue(
    qname: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every known queue ran its own CLIENT LIST, every 5 s from each open overview
    import redis

    for extra in ("a", "b", "c"):
        get_queue(f"{qname}-{extra}").add("report", {})
    calls: list[int] = []
    real = redis.Redis.client_list

    def counted(self: redis.Redis, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "client_list", counted)
    client = staff_client(every=True)
    try:
        names = [r["name"] for r in client.get(overview_json()).json()["queues"]]
        assert {f"{qname}-a", f"{qname}-b", f"{qname}-c"} <= set(names)
        assert len(calls) == 1, "one CLIENT LIST for the one connection of all queues"
        calls.clear()
        assert client.get(reverse("admin:django_bullq_bullqqueue_changelist")).status_code == 200
        assert len(calls) == 1
    finally:
        for extra in ("a", "b", "c"):
            get_queue(f"{qname}-{extra}").obliterate(force=True)


def test_a_job_snapshot_carries_its_data_as_the_page_shows_it_unless_too_long(
    qname: str,
) -> None:
    # the job page's data was drawn once: an update_data while it ran showed on reload only
    q = get_queue(qname)
    job = q.add("report", {"b": 1, "a": "é"})
    client = staff_client(every=True)
    page = client.get(
        reverse("admin:django_bullq_job", kwargs={"queue": qname, "job_id": job.id})
    ).content.decode()
    assert 'id="bullq-data" data-bullq-field="dataText"' in page
    job.update_data({"b": 2, "a": "é"})
    shown = client.get(job_json(qname, job.id)).json()["job"]["dataText"]
    assert shown == '{\n  "a": "é",\n  "b": 2\n}'  # sorted, indented, as the page draws it
    big = q.add("report", {"blob": "x" * 20_000})
    assert "dataText" not in client.get(job_json(qname, big.id)).json()["job"]


# --- what the live pages need in their markup ------------------------------------------------


def test_job_page_carries_every_permitted_action_and_shows_those_of_its_state(
    qname: str,
) -> None:
    """The live job page shows the buttons of the job's new state without a reload: every
    action the user may run is in the page, those not for this state hidden; a view-only
    operator's page has none, and the page says where its JSON is."""
    job = get_queue(qname).add("report", {})
    url = reverse("admin:django_bullq_job", kwargs={"queue": qname, "job_id": job.id})
    html = staff_client(every=True).get(url).content.decode()
    forms = dict(
        re.findall(r'data-bullq-action="([a-z_]+)" data-bullq-states="[^"]*"( hidden)?', html)
    )
    assert forms == {
        "retry": " hidden",
        "promote": " hidden",
        "remove": "",
        "cancel": " hidden",
        "change_priority": "",
    }
    assert 'data-bullq-states="failed completed"' in html
    assert f'data-live-url="{job_json(qname, job.id)}"' in html
    assert re.search(r'<tr data-bullq-section="processedBy" hidden>', html)
    viewer = staff_client("view_bullqqueue").get(url).content.decode()
    assert "data-bullq-action" not in viewer and "<form" not in viewer.split('id="bullq-root"')[1]


def test_queue_page_has_a_workers_section_to_fill_and_its_json_address(qname: str) -> None:
    get_queue(qname).add("report", {})
    url = reverse("admin:django_bullq_queue", kwargs={"queue": qname})
    html = staff_client(every=True).get(url, {"state": "waiting", "page": "1"}).content.decode()
    assert re.search(r'<div id="bullq-workers" hidden>', html) and 'id="bullq-workers-body"' in html
    assert f'data-live-url="{queue_json(qname)}?state=waiting&amp;page=1"' in html
    overview = (
        staff_client(every=True)
        .get(reverse("admin:django_bullq_bullqqueue_changelist"))
        .content.decode()
    )
    assert f'data-live-url="{overview_json()}"' in overview and "data-bullq-workers" in overview


def test_js_pages_poll_without_a_socket_say_their_mode_and_go_back_to_it() -> None:
    """``BullqEvents.Feed`` under Node with fake timers and fetch (tests/js/bullq_feed_modes.mjs):
    polling at once and every 2 s when the socket fails, "offline" while reads fail, "live"
    and no polling once the socket opens, nothing after a refusal."""
    node = shutil.which("node")
    assert node, "node is needed (make test installs it for the interop tests)"
    root = Path(__file__).resolve().parents[2]
    script = root / "django_bullq" / "static" / "django_bullq" / "js" / "bullq-events.js"
    done = subprocess.run(
        [node, str(root / "tests" / "js" / "bullq_feed_modes.mjs"), str(script)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
