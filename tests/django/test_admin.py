"""Django admin pages for queues (django_bullq/admin): views, actions, permissions, case B25."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from django_bullq import Queue
from django_bullq.admin.names import decode_name, encode_name
from django_bullq.conf import get_queue
from django_bullq.core.errors import InvalidNameError
from tests.support.admin_users import staff_user

pytestmark = pytest.mark.django_db

ACTION_PERMS = [
    "view_bullqqueue",
    "retry_job",
    "promote_job",
    "remove_job",
    "cancel_job",
    "change_job",
    "pause_queue",
    "clean_queue",
    "obliterate_queue",
]


@pytest.fixture
def admin_client() -> Client:
    client = Client()
    client.force_login(staff_user(*ACTION_PERMS))
    return client


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"adm-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


def qurl(name: str, **query: Any) -> str:
    url = reverse("admin:django_bullq_queue", kwargs={"queue": name})
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return url


def jurl(name: str, job_id: str) -> str:
    return reverse("admin:django_bullq_job", kwargs={"queue": name, "job_id": job_id})


def aurl(name: str, action: str) -> str:
    return reverse("admin:django_bullq_action", kwargs={"queue": name, "action": action})


def fail_job(q: Queue, name: str = "boom", data: Any = None) -> str:
    """A job moved to failed by a raw pipeline (like a worker would leave it)."""
    job = q.add(name, data or {"x": 1})
    now = int(time.time() * 1000)
    pipe = q.client.pipeline()
    pipe.lrem(q.keys["wait"], 0, job.id)
    pipe.zadd(q.keys["failed"], {job.id: now})
    pipe.hset(
        q.keys.job(job.id),
        mapping={
            "failedReason": "kaputt <b>",
            "finishedOn": now,
            "stacktrace": json.dumps(["Trace <i>line</i>"]),
            "attemptsMade": 1,
        },
    )
    pipe.execute()
    return job.id


# --- names ------------------------------------------------------------------------------------


def test_encoded_names_round_trip_strictly() -> None:
    for name in [
        "a#b",
        "test/transactions",
        "ünï-cødé",
        "a b",
        "%2F",
        "plain",
        ".",
        "..",
        "...",
        "%2E",
    ]:
        assert decode_name(encode_name(name)) == name
    assert encode_name(".") == "%2E" and encode_name("..") == "%2E%2E"


def test_dot_names_get_links_browsers_keep(admin_client: Client, qname: str) -> None:
    """A job id "." or ".." must not become a "./" or "../" segment a browser resolves away."""
    q = get_queue(qname)
    for job_id in (".", ".."):
        q.add("dots", {}, job_id=job_id)
        url = jurl(qname, job_id)
        assert "/job/%252E" in url
        resp = admin_client.get(url)
        assert resp.status_code == 200 and resp.context["job"].id == job_id
    for bad in ["a b", "%zz", "%C3", "a%2fb", "ü"]:
        with pytest.raises(ValueError):
            decode_name(bad)


# --- pages ------------------------------------------------------------------------------------


def test_overview_lists_queues_with_counts(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    q.add("a", {})
    q.client.client_setname(f"bull:{base64.b64encode(qname.encode()).decode()}:w:w1")
    resp = admin_client.get(reverse("admin:django_bullq_bullqqueue_changelist"))
    assert resp.status_code == 200
    body = resp.content.decode()
    assert qname in body and qurl(qname) in body
    row = next(r for r in resp.context["rows"] if r["name"] == qname)
    assert row["counts"]["waiting"] == 1 and row["workers"] >= 1
    assert row["latency"] is not None and row["paused"] is False
    # the admin index shows the placeholder
    assert (
        reverse("admin:django_bullq_bullqqueue_changelist")
        in admin_client.get(reverse("admin:index")).content.decode()
    )


def test_queue_page_lists_jobs_workers_and_chart(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    ids = [q.add("job", {"n": i}).id for i in range(3)]
    q.client.hset(q.keys["metrics:completed"], mapping={"count": 5, "prevTS": 1, "prevCount": 0})
    q.client.lpush(q.keys["metrics:completed"] + ":data", 3, 2)
    resp = admin_client.get(qurl(qname))
    assert resp.status_code == 200
    body = resp.content.decode()
    for i in ids:
        assert jurl(qname, i) in body
    assert "<svg" in body and "<rect" in body
    # live-update hook point: a root element with the queue name; no script without staticfiles
    assert f'data-queue="{qname}"' in body and "bullq-events.js" not in body
    assert resp.context["state"] == "waiting"
    assert admin_client.get(qurl(qname, state="nonsense")).status_code == 404


def test_job_detail_shows_everything(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    jid = fail_job(q, "send", {"to": "x@example.com"})
    q.client.rpush(q.keys.job(jid) + ":logs", "log line one")
    q.client.hset(q.keys.job(jid), "progress", "42")
    resp = admin_client.get(jurl(qname, jid))
    assert resp.status_code == 200
    body = resp.content.decode()
    assert "x@example.com" in body and "log line one" in body
    assert "kaputt &lt;b&gt;" in body and "Trace &lt;i&gt;line&lt;/i&gt;" in body
    assert '<progress max="100" value="42">' in body
    assert admin_client.get(jurl(qname, "nope")).status_code == 404


def test_job_detail_links_parent_and_children(admin_client: Client, qname: str) -> None:
    from django_bullq.core.flow import FlowProducer

    q = get_queue(qname)
    flow = FlowProducer(q.connection).add(
        {"name": "parent", "queue_name": qname, "children": [{"name": "kid", "queue_name": qname}]}
    )
    parent_id = flow.job.id
    child_id = flow.children[0].job.id
    body = admin_client.get(jurl(qname, parent_id)).content.decode()
    assert jurl(qname, child_id) in body
    body = admin_client.get(jurl(qname, child_id)).content.decode()
    assert jurl(qname, parent_id) in body


def test_search_by_id_name_and_data(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    q.add("alpha", {"k": "needle-123"})
    beta = q.add("beta", {"k": "hay"})
    ctx = admin_client.get(qurl(qname, q="NEEDLE-123")).context
    assert [j.name for j in ctx["jobs"]] == ["alpha"]
    ctx = admin_client.get(qurl(qname, state="waiting") + "&name=beta").context
    assert [j.name for j in ctx["jobs"]] == ["beta"]
    ctx = admin_client.get(qurl(qname, id=beta.id)).context
    assert [j.id for j in ctx["jobs"]] == [beta.id]


def test_pagination_on_100000_jobs_reads_one_page(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    total = 100_000
    ts = int(time.time() * 1000)
    pipe = q.client.pipeline(transaction=False)
    chunk = []
    for i in range(1, total + 1):
        pipe.hset(
            q.keys.job(str(i)),
            mapping={
                "name": "bulk",
                "data": "{}",
                "opts": "{}",
                "timestamp": ts,
                "delay": 0,
                "priority": 0,
            },
        )
        chunk.append(str(i))
        if len(chunk) == 10_000:
            pipe.lpush(q.keys["wait"], *chunk)
            pipe.execute()
            chunk = []
    q.client.set(q.keys["id"], total)
    started = time.monotonic()
    resp = admin_client.get(qurl(qname, page=3))
    elapsed = time.monotonic() - started
    assert resp.status_code == 200
    page = resp.context["page"]
    assert page.total == total and page.pages == 2000 and len(page.jobs) == 50
    # newest first: page 3 holds ids 99900 down to 99851
    assert page.jobs[0].id == str(total - 100) and page.jobs[-1].id == str(total - 149)
    assert elapsed < 2.0
    last = admin_client.get(qurl(qname, page=2000)).context["page"]
    assert last.jobs[-1].id == "1"
    found = admin_client.get(qurl(qname, q="nothing-matches")).context["found"]
    assert found.jobs == [] and 0 < found.scanned <= total


def test_hostile_job_data_is_escaped(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    evil = "<script>alert(1)</script>"
    job = q.add(evil, {"html": evil, "big": "x" * 300_000, "a_uni": "ünï 🚀 \u202e rtl \u200d"})
    for url in (qurl(qname), jurl(qname, job.id)):
        body = admin_client.get(url).content.decode()
        assert evil not in body
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    body = admin_client.get(jurl(qname, job.id)).content.decode()
    assert "ünï 🚀" in body and "more characters not shown" in body
    assert len(body) < 250_000


# --- actions ------------------------------------------------------------------------------------


def post(client: Client, name: str, action: str, *, confirm: bool = True, **fields: Any) -> Any:
    payload = dict(fields)
    if confirm:
        payload["confirm"] = "yes"
    return client.post(aurl(name, action), payload)


def last_log() -> LogEntry:
    return LogEntry.objects.order_by("-id").first()


def test_action_needs_post_and_confirmation(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    job = q.add("a", {})
    assert admin_client.get(aurl(qname, "remove")).status_code == 405
    resp = post(admin_client, qname, "remove", confirm=False, ids=[job.id])
    assert resp.status_code == 200 and b"are you sure" in resp.content
    assert q.get_job(job.id) is not None
    resp = post(admin_client, qname, "remove", ids=[job.id])
    assert resp.status_code == 302 and q.get_job(job.id) is None
    entry = last_log()
    assert qname in entry.object_repr and job.id in entry.object_repr
    assert entry.content_type.model == "bullqqueue"
    assert post(admin_client, qname, "explode").status_code == 404


def test_job_actions(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    failed = fail_job(q)
    post(admin_client, qname, "retry", ids=[failed], state="failed")
    assert q.get_job_state(failed) == "waiting"
    delayed = q.add("d", {}, delay=60_000)
    post(admin_client, qname, "promote", ids=[delayed.id], state="delayed")
    assert q.get_job_state(delayed.id) == "waiting"
    prio = q.add("p", {}, priority=5)
    post(admin_client, qname, "change_priority", ids=[prio.id], priority="2")
    assert q.get_job(prio.id).priority == 2
    sub = q.client.pubsub()
    sub.subscribe(q.keys["control"])
    sub.get_message(timeout=1)
    running = q.add("r", {})
    q.client.lrem(q.keys["wait"], 0, running.id)
    q.client.lpush(q.keys["active"], running.id)
    post(admin_client, qname, "cancel", ids=[running.id, prio.id], reason="stop <now>")
    msg = sub.get_message(timeout=2)
    sub.close()
    assert msg and running.id in (
        msg["data"].decode() if isinstance(msg["data"], bytes) else msg["data"]
    )
    assert last_log().change_message == (
        "Cancel (running): 1 of 2 jobs; 1 skipped (gone, or not in a state this action applies to)"
    )


def test_a_partly_applicable_selection_acts_on_each_job_and_logs_it(
    admin_client: Client, qname: str
) -> None:
    """Rows go stale while an operator selects: the action goes on past them, and says so."""
    q = get_queue(qname)
    first, second = fail_job(q), fail_job(q)
    waiting = q.add("w", {}).id
    resp = post(
        admin_client, qname, "retry", ids=[first, waiting, second, "no-such-job"], state="failed"
    )
    assert resp.status_code == 302
    assert q.get_job_state(first) == "waiting" and q.get_job_state(second) == "waiting"
    assert last_log().change_message == (
        "Retry: 2 of 4 jobs; 2 skipped (gone, or not in a state this action applies to)"
    )


def test_an_action_that_acted_on_no_job_says_so_as_a_warning(
    admin_client: Client, qname: str
) -> None:
    # new-user trial: "Retry: 0 of 1 jobs; 1 skipped" came in the green of a success
    from django.contrib import messages

    resp = post(admin_client, qname, "retry", ids=["no-such-job"], state="failed")
    assert resp.status_code == 302
    said = list(messages.get_messages(resp.wsgi_request))
    assert [(m.level, m.message.split(";")[0]) for m in said] == [
        (messages.WARNING, "Retry: 0 of 1 jobs")
    ]


@pytest.mark.parametrize(
    "action, fields",
    [
        ("retry", {"select_all": "1", "q": "boom", "page": "abc"}),
        ("clean", {"grace_s": "1e999"}),
        ("clean", {"grace_s": "nan"}),
        ("clean", {"grace_s": "-5"}),
        ("change_priority", {"priority": "high"}),
    ],
)
def test_tampered_action_forms_get_an_answer_not_a_500(
    admin_client: Client, qname: str, action: str, fields: dict[str, str]
) -> None:
    q = get_queue(qname)
    job = fail_job(q)
    resp = post(admin_client, qname, action, ids=[job], state="failed", **fields)
    assert resp.status_code == 302


@pytest.mark.parametrize(
    "action, fields, why",
    [
        ("clean", {"clean_state": "failed", "grace_s": "nan"}, "grace_s"),
        # trial finding: a post without grace_s cleaned with a grace of 0 (every failed job)
        ("clean", {"clean_state": "failed"}, "grace_s"),
        ("clean", {"clean_state": "everything"}, "clean_state"),
        ("change_priority", {"priority": "-1"}, "priority"),
        ("retry", {"state": "bogus"}, "state"),
    ],
)
def test_tampered_fields_are_refused_with_a_message_and_nothing_done(
    admin_client: Client, qname: str, action: str, fields: dict[str, str], why: str
) -> None:
    q = get_queue(qname)
    job = fail_job(q)
    logged = LogEntry.objects.count()
    resp = admin_client.post(aurl(qname, action), {"ids": [job], "confirm": "yes", **fields})
    assert resp.status_code == 302
    shown = [str(m) for m in resp.wsgi_request._messages]
    assert len(shown) == 1 and shown[0].startswith(f"{ACTION_LABELS[action]} failed: {why}")
    assert q.get_job_state(job) == "failed"
    assert LogEntry.objects.count() == logged


ACTION_LABELS = {"clean": "Clean by age", "change_priority": "Change priority", "retry": "Retry"}


def test_a_tampered_page_number_shows_page_one_with_a_message(
    admin_client: Client, qname: str
) -> None:
    get_queue(qname).add("a", {})
    for page in ("abc", "0", "-3", "1e999"):
        resp = admin_client.get(qurl(qname, page=page))
        assert resp.status_code == 200
        assert resp.context["page"].page == 1 and len(resp.context["page"].jobs) == 1
        assert any("page" in str(m) for m in resp.context["messages"])


def test_select_all_actions(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    ids = [fail_job(q) for _ in range(3)]
    resp = post(admin_client, qname, "retry", confirm=False, select_all="1", state="failed")
    assert resp.context["count"] == 3
    post(admin_client, qname, "retry", select_all="1", state="failed")
    assert all(q.get_job_state(i) == "waiting" for i in ids)
    for _ in range(2):
        q.add("d", {}, delay=60_000)
    post(admin_client, qname, "promote", select_all="1", state="delayed")
    assert q.get_job_counts("delayed")["delayed"] == 0
    post(admin_client, qname, "remove", select_all="1", state="waiting")
    assert q.get_job_counts("waiting")["waiting"] == 0
    q.add("keep", {"k": "a"})
    q.add("drop", {"k": "b"})
    admin_client.post(
        aurl(qname, "remove"),
        {"select_all": "1", "state": "waiting", "name": "drop", "confirm": "yes"},
    )
    assert [j.name for j in q.get_jobs("waiting")] == ["keep"]


def test_select_all_change_priority_changes_every_prioritized_job_once(
    admin_client: Client, qname: str
) -> None:
    """More jobs than one page of ids: reordering the set while acting must skip none."""
    q = get_queue(qname)
    jobs = q.add_bulk([("p", {"n": n}, {"priority": 2 + n % 50}) for n in range(2500)])
    post(
        admin_client, qname, "change_priority", select_all="1", state="prioritized", priority="1"
    )  # moves each changed job to the other end of the listing
    priorities = q.client.zrange(q.keys["prioritized"], 0, -1, withscores=True)
    assert len(priorities) == len(jobs)
    assert {int(q.client.hget(q.keys.job(j.id), "priority")) for j in jobs} == {1}
    entry = LogEntry.objects.latest("action_time")
    assert entry.change_message == "Change priority: 2500 prioritized jobs"


def test_queue_actions(admin_client: Client, qname: str) -> None:
    q = get_queue(qname)
    post(admin_client, qname, "pause")
    assert q.is_paused()
    post(admin_client, qname, "resume")
    assert not q.is_paused()
    ids = [fail_job(q) for _ in range(2)]
    post(admin_client, qname, "retry_all")
    assert all(q.get_job_state(i) == "waiting" for i in ids)
    post(admin_client, qname, "drain")
    assert q.get_job_counts("waiting")["waiting"] == 0
    fail_job(q)
    post(admin_client, qname, "remove_all")
    assert q.get_job_counts("failed")["failed"] == 0
    fail_job(q)
    post(admin_client, qname, "clean", clean_state="failed", grace_s="0")
    assert q.get_job_counts("failed")["failed"] == 0
    q.add("x", {})
    resp = post(admin_client, qname, "obliterate")
    assert resp.status_code == 302
    assert resp["Location"] == reverse("admin:django_bullq_bullqqueue_changelist")
    assert not q.client.exists(q.keys["meta"]) and q.count() == 0
    assert "obliterated" in last_log().change_message


# --- permissions and CSRF ---------------------------------------------------------------------


def test_non_staff_is_redirected_to_login(qname: str) -> None:
    client = Client()
    client.force_login(staff_user(*ACTION_PERMS, staff=False))
    for url in (reverse("admin:django_bullq_bullqqueue_changelist"), qurl(qname), jurl(qname, "1")):
        resp = client.get(url)
        assert resp.status_code == 302 and "/login/" in resp["Location"]
    assert Client().get(qurl(qname)).status_code == 302


def test_staff_without_permissions_gets_403(qname: str) -> None:
    q = get_queue(qname)
    job = q.add("a", {})
    client = Client()
    client.force_login(staff_user())
    assert client.get(reverse("admin:django_bullq_bullqqueue_changelist")).status_code == 403
    assert client.get(qurl(qname)).status_code == 403
    assert client.get(jurl(qname, job.id)).status_code == 403
    viewer = Client()
    viewer.force_login(staff_user("view_bullqqueue"))
    assert viewer.get(qurl(qname)).status_code == 200
    for action in [
        "retry",
        "promote",
        "remove",
        "cancel",
        "change_priority",
        "pause",
        "resume",
        "clean",
        "drain",
        "obliterate",
        "retry_all",
        "remove_all",
    ]:
        assert post(viewer, qname, action, ids=[job.id]).status_code == 403, action
    assert q.get_job(job.id) is not None and not q.is_paused()
    remover = Client()
    remover.force_login(staff_user("view_bullqqueue", "remove_job"))
    assert post(remover, qname, "pause").status_code == 403
    assert post(remover, qname, "remove", ids=[job.id]).status_code == 302
    assert q.get_job(job.id) is None


def test_csrf_is_enforced(qname: str) -> None:
    q = get_queue(qname)
    job = q.add("a", {})
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user(*ACTION_PERMS))
    resp = client.post(aurl(qname, "remove"), {"ids": [job.id], "confirm": "yes"})
    assert resp.status_code == 403 and q.get_job(job.id) is not None
    client.get(qurl(qname))
    token = client.cookies["csrftoken"].value
    resp = client.post(
        aurl(qname, "remove"), {"ids": [job.id], "confirm": "yes", "csrfmiddlewaretoken": token}
    )
    assert resp.status_code == 302 and q.get_job(job.id) is None


def test_permission_codenames() -> None:
    codenames = set(
        Permission.objects.filter(content_type__app_label="django_bullq").values_list(
            "codename", flat=True
        )
    )
    assert set(ACTION_PERMS) <= codenames


# --- case B25 -----------------------------------------------------------------------------------


def test_case_b25_special_queue_names_in_admin(admin_client: Client, redis_url: str) -> None:
    with pytest.raises(InvalidNameError):
        Queue("task:email", redis_url)
    suffix = uuid.uuid4().hex[:6]
    names = [
        f"a#b{suffix}",
        f"test/transactions{suffix}",
        f"ünï-cødé{suffix}",
        f"a b{suffix}",
        f"%2F{suffix}",
    ]
    try:
        for name in names:
            q = get_queue(name)
            job = q.add("hello", {"queue": name})
            overview = admin_client.get(reverse("admin:django_bullq_bullqqueue_changelist"))
            assert overview.status_code == 200
            assert qurl(name) in overview.content.decode()
            page = admin_client.get(qurl(name))
            assert page.status_code == 200, name
            assert page.context["queue"].name == name
            assert [j.id for j in page.context["page"].jobs] == [job.id]
            body = page.content.decode()
            assert aurl(name, "remove") in body and jurl(name, job.id) in body
            detail = admin_client.get(jurl(name, job.id))
            assert detail.status_code == 200 and detail.context["job"].id == job.id
            confirm = post(admin_client, name, "promote", confirm=False, ids=[job.id])
            assert confirm.status_code == 200 and confirm.context["queue"].name == name
            assert post(admin_client, name, "pause").status_code == 302
            assert q.is_paused()
            assert post(admin_client, name, "remove", ids=[job.id]).status_code == 302
            assert q.get_job(job.id) is None
        # the sibling queue named like the decoded form of another is a different queue
        assert qurl(f"%2F{suffix}") != qurl(f"/{suffix}")
    finally:
        for name in names:
            get_queue(name).obliterate(force=True)
