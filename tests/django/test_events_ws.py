"""Queue events over WebSockets: consumers, resume, permissions, B25 names, gaps, bursts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing.websocket import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser, Permission, User

from django_bullq import conf
from django_bullq.live.bridge import id_tuple
from django_bullq.routing import websocket_urlpatterns
from tests.support.workerkit import make_worker

TIMEOUT = 3


class FakeUser:
    """A user object without the database (what AuthMiddleware would put in the scope)."""

    is_authenticated = True
    is_active = True

    def __init__(
        self,
        username: str,
        *,
        staff: bool = True,
        perms: tuple[str, ...] = ("django_bullq.view_bullqqueue",),
    ) -> None:
        self.username, self.is_staff, self.perms = username, staff, perms

    def has_perm(self, perm: str) -> bool:
        return perm in self.perms


STAFF = FakeUser("staff")


@pytest.fixture(autouse=True)
def fresh_layer() -> Iterator[None]:
    channel_layers.backends.clear()  # in-memory queues belong to one event loop
    yield
    channel_layers.backends.clear()


def ws(path: str, user: Any = STAFF, *, raw: bool = True) -> WebsocketCommunicator:
    """A communicator on ``path`` (percent-encoded), ``user`` injected like AuthMiddleware;
    ``raw_path`` set as Daphne/Uvicorn do unless ``raw`` is False."""
    router = URLRouter(websocket_urlpatterns)
    raw_path = path.split("?", 1)[0].encode("ascii")

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope = dict(scope, user=user)
        if raw:
            scope["raw_path"] = raw_path
        await router(scope, receive, send)

    return WebsocketCommunicator(app, path)


def qpath(name: str, last_id: str | None = None) -> str:
    tail = f"?last_id={last_id}" if last_id else ""
    return f"/ws/bullq/queues/{quote(name, safe='')}/{tail}"


def jpath(name: str, job_id: str, last_id: str | None = None) -> str:
    tail = f"?last_id={last_id}" if last_id else ""
    return f"/ws/bullq/jobs/{quote(name, safe='')}/{quote(job_id, safe='')}/{tail}"


async def connect(comm: WebsocketCommunicator) -> None:
    connected, code = await comm.connect(timeout=TIMEOUT)
    assert connected, code


async def refused_code(comm: WebsocketCommunicator) -> int:
    """The close code of a socket the server accepts and closes at once (a refusal)."""
    connected, code = await comm.connect(timeout=TIMEOUT)
    assert connected, code  # accepted first: browsers then see the code, not a 1006
    out = await comm.receive_output(TIMEOUT)
    assert out["type"] == "websocket.close", out
    return int(out["code"])


async def receive_all(comm: WebsocketCommunicator, count: int) -> list[dict[str, Any]]:
    return [await comm.receive_json_from(timeout=TIMEOUT) for _ in range(count)]


# --- queue socket ---------------------------------------------------------------------------


async def test_queue_events_arrive_in_order(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    comm = ws(qpath(queue_name))
    await connect(comm)
    jobs = [await q.aadd("t", {"n": n}) for n in range(3)]
    job = jobs[0]
    await job.aupdate_progress({"p": 50})
    events = await receive_all(comm, 7)  # added+waiting per job, progress
    ids = [id_tuple(e["id"]) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert [(e["event"], e["jobId"]) for e in events if e["event"] == "added"] == [
        ("added", j.id) for j in jobs
    ]
    assert events[-1]["event"] == "progress" and events[-1]["fields"]["data"] == {"p": 50}
    assert await comm.receive_nothing(0.2)
    await comm.disconnect()


async def test_two_sockets_share_one_reader(queue_name: str) -> None:
    from django_bullq.live.bridge import get_hub

    q = conf.get_queue(queue_name)
    one, two = ws(qpath(queue_name)), ws(qpath(queue_name))
    await connect(one)
    await connect(two)
    assert list(get_hub().readers()) == [queue_name]
    job = await q.aadd("t")
    for comm in (one, two):
        got = await receive_all(comm, 2)
        assert {e["jobId"] for e in got} == {job.id}
    await one.disconnect()
    await two.disconnect()
    assert get_hub().readers() == {}


async def test_resume_after_reconnect_loses_and_repeats_nothing(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    comm = ws(qpath(queue_name))
    await connect(comm)
    first = await q.aadd("t")
    seen = await receive_all(comm, 2)
    await comm.disconnect()
    last_id = seen[-1]["id"]
    missed = [await q.aadd("t") for _ in range(2)]  # while disconnected
    comm = ws(qpath(queue_name, last_id))
    await connect(comm)
    backlog = await receive_all(comm, 4)
    live_job = await q.aadd("t")
    live = await receive_all(comm, 2)
    assert await comm.receive_nothing(0.2)
    await comm.disconnect()
    got = seen + backlog + live
    ids = [e["id"] for e in got]
    assert len(set(ids)) == len(ids) and [id_tuple(i) for i in ids] == sorted(map(id_tuple, ids))
    assert [e["jobId"] for e in got if e["event"] == "added"] == [
        first.id,
        *(j.id for j in missed),
        live_job.id,
    ]


async def test_resume_after_trimmed_entries_sends_a_gap_first(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    await q.aadd("t")
    stream = q.keys["events"]
    old_id = (await q.aclient.xrange(stream, count=1))[0][0].decode()
    for _ in range(5):
        await q.aadd("t")
    await q.aclient.xtrim(stream, maxlen=2, approximate=False)
    comm = ws(qpath(queue_name, old_id))
    await connect(comm)
    gap, *rest = await receive_all(comm, 3)
    assert gap["event"] == "gap" and gap["jobId"] is None
    assert id_tuple(gap["fields"]["first"]) > id_tuple(old_id)
    assert id_tuple(gap["fields"]["last"]) < id_tuple(rest[0]["id"])
    assert await comm.receive_nothing(0.2)
    await comm.disconnect()


@pytest.mark.parametrize(
    "last_id", ["abc", "1-2-3", "0-18446744073709551616", "18446744073709551616"]
)
async def test_invalid_last_id_is_refused(queue_name: str, last_id: str) -> None:
    comm = ws(qpath(queue_name, last_id))
    assert await refused_code(comm) == 4400


async def test_resuming_from_before_an_untrimmed_stream_reports_no_gap(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    await q.aadd("t")
    comm = ws(qpath(queue_name, "1-0"))  # older than the first entry, nothing ever trimmed
    await connect(comm)
    frames = await receive_all(comm, 2)
    assert [f["event"] for f in frames] == ["added", "waiting"]
    assert await comm.receive_nothing(0.2)
    await comm.disconnect()


async def test_unknown_ws_paths_are_closed_as_bad_requests() -> None:
    for path in ["/ws/bullq/", "/ws/bullq/queues/", "/ws/bullq/nothing/here/"]:
        assert await refused_code(ws(path)) == 4400, path


async def test_oversized_events_and_snapshots_are_cut_to_fit_one_frame(queue_name: str) -> None:
    """Daphne refuses frames over 1 MiB; an event that big would be replayed (and refused)
    on every reconnect. Frames are cut to MAX_FRAME_BYTES and marked truncated."""
    import json

    from django_bullq.live.bridge import MAX_FRAME_BYTES

    q = conf.get_queue(queue_name)
    job = await q.aadd("t")
    comm = ws(qpath(queue_name))
    await connect(comm)
    await job.aupdate_progress({"blob": "p" * 3_000_000, "rows": list(range(100_000))})
    await job.aupdate_progress(5)
    big, small = await receive_all(comm, 2)
    assert len(json.dumps(big)) <= MAX_FRAME_BYTES and big["truncated"] is True
    assert big["event"] == "progress" and big["jobId"] == job.id
    assert "more characters not sent" in big["fields"]["data"]["blob"]
    assert small["fields"]["data"] == 5 and "truncated" not in small
    await comm.disconnect()

    for n in range(300):
        await job.alog("L" * 5000 + str(n))
    await q.aclient.hset(q.keys.job(job.id), "failedReason", "😀" * 2_000_000)
    jcomm = ws(jpath(queue_name, job.id))
    await connect(jcomm)
    snap = await jcomm.receive_json_from(timeout=TIMEOUT)
    assert len(json.dumps(snap)) <= MAX_FRAME_BYTES and snap["truncated"] is True
    assert snap["job"]["id"] == job.id and snap["job"]["state"] == "waiting"
    assert snap["job"]["logs"][-1].startswith("L")
    await jcomm.disconnect()


async def test_a_crashed_socket_releases_its_events_reader(
    queue_name: str, monkeypatch: Any
) -> None:
    from django_bullq.live.bridge import get_hub
    from django_bullq.live.consumers import QueueEventsConsumer

    async def broken(self: Any) -> dict[str, Any]:
        raise RuntimeError("snapshot exploded")

    monkeypatch.setattr(QueueEventsConsumer, "snapshot", broken)
    q = conf.get_queue(queue_name)
    job = await q.aadd("t")
    comm = ws(jpath(queue_name, job.id))
    with pytest.raises(RuntimeError, match="snapshot exploded"):
        await comm.connect(timeout=TIMEOUT)
        await comm.receive_output(TIMEOUT)
    assert get_hub().readers() == {}


async def test_long_or_deeply_nested_requests_are_ignored(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    job = await q.aadd("t")
    comm = ws(jpath(queue_name, job.id))
    await connect(comm)
    await comm.receive_json_from(timeout=TIMEOUT)
    await comm.send_to(text_data="[" * 100_000 + "]" * 100_000)
    await comm.send_to(text_data="[" * 500 + "]" * 500)  # short, but deeper than JSON allows
    await comm.send_to(text_data='{"type": "snapshot", "pad": "' + "x" * 5000 + '"}')
    assert await comm.receive_nothing(0.3)
    await comm.send_json_to({"type": "snapshot"})
    assert (await comm.receive_json_from(timeout=TIMEOUT))["type"] == "snapshot"
    await comm.disconnect()


# --- job socket -----------------------------------------------------------------------------


async def test_job_socket_sends_a_snapshot_then_only_its_events(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    job = await q.aadd("t", {"x": 1})
    other = await q.aadd("t")
    await job.alog("started")
    await job.aupdate_progress(10)
    comm = ws(jpath(queue_name, job.id))
    await connect(comm)
    snap = await comm.receive_json_from(timeout=TIMEOUT)
    assert snap["type"] == "snapshot"
    assert snap["job"]["state"] == "waiting" and snap["job"]["progress"] == 10
    assert snap["job"]["logs"] == ["started"] and snap["job"]["id"] == job.id
    await other.aupdate_progress(99)
    await job.aupdate_progress(50)
    event = await comm.receive_json_from(timeout=TIMEOUT)
    assert (event["event"], event["jobId"], event["fields"]["data"]) == ("progress", job.id, 50)
    assert id_tuple(event["id"]) > id_tuple(snap["id"])
    assert await comm.receive_nothing(0.2)
    await comm.disconnect()


async def test_a_snapshot_says_whether_progress_was_reported_and_the_failures_type(
    queue_name: str,
) -> None:
    """The live job page shows progress only once reported, and the exception type with the
    failed reason (issue 15, item 6)."""
    q = conf.get_queue(queue_name)
    job = await q.aadd("t", {"x": 1})
    trace = "Traceback (most recent call last):\n  File \"t.py\", line 1\nKeyError: 'k'\n"
    await q.aclient.hset(
        q.keys.job(job.id), mapping={"failedReason": "'k'", "stacktrace": json.dumps([trace])}
    )
    comm = ws(jpath(queue_name, job.id))
    await connect(comm)
    snap = (await comm.receive_json_from(timeout=TIMEOUT))["job"]
    assert (snap["progressReported"], snap["failedType"]) == (False, "KeyError")
    await job.aupdate_progress(0)
    await comm.send_json_to({"type": "snapshot"})
    while (frame := await comm.receive_json_from(timeout=TIMEOUT))["type"] != "snapshot":
        pass
    assert frame["job"]["progressReported"] is True
    await comm.disconnect()


async def test_a_snapshot_names_the_worker_processing_the_job_and_its_logs_so_far(
    queue_name: str,
) -> None:
    """Issue 15, item 1: the live job page shows "processed by", attempts, priority and the
    logs written so far while the job runs, from a snapshot a real worker's job is in."""
    q = conf.get_queue(queue_name)
    job = await q.aadd("t", {"x": 1}, priority=7)
    logged, release = asyncio.Event(), asyncio.Event()

    async def process(running: Any) -> str:
        await running.alog("step 1 of 2")
        logged.set()
        await release.wait()
        return "done"

    worker = make_worker(q, process, name="snap-worker")
    task = asyncio.create_task(worker.arun())
    try:
        await asyncio.wait_for(logged.wait(), TIMEOUT)
        comm = ws(jpath(queue_name, job.id))
        await connect(comm)
        snap = (await comm.receive_json_from(timeout=TIMEOUT))["job"]
        assert snap["state"] == "active" and snap["logs"] == ["step 1 of 2"]
        assert snap["processedBy"] and "snap-worker" in snap["processedBy"]
        assert (snap["attemptsStarted"], snap["priority"], snap["delay"]) == (1, 7, 0)
        await comm.disconnect()
    finally:
        release.set()
        worker.close()
        await asyncio.wait_for(task, 15)


async def test_job_socket_of_a_missing_job_sends_a_null_snapshot(queue_name: str) -> None:
    comm = ws(jpath(queue_name, "nope"))
    await connect(comm)
    assert (await comm.receive_json_from(timeout=TIMEOUT))["job"] is None
    await comm.disconnect()


async def test_job_socket_resumes_with_that_jobs_missed_events(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    job = await q.aadd("t")
    comm = ws(jpath(queue_name, job.id))
    await connect(comm)
    snap = await comm.receive_json_from(timeout=TIMEOUT)
    await comm.disconnect()
    await job.aupdate_progress(1)
    await (await q.aadd("t")).aupdate_progress(2)
    await job.aupdate_progress(3)
    comm = ws(jpath(queue_name, job.id, snap["id"]))
    await connect(comm)
    assert (await comm.receive_json_from(timeout=TIMEOUT))["job"]["progress"] == 3
    got = await receive_all(comm, 2)
    assert [e["fields"]["data"] for e in got] == [1, 3]
    assert await comm.receive_nothing(0.2)
    await comm.disconnect()


# --- B25 names ------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["a#b", "test/transactions", "ünï-cødé", "a b", "%2F"])
@pytest.mark.parametrize("raw", [True, False], ids=["raw_path", "decoded_path"])
async def test_case_b25_special_queue_names_in_ws_urls(
    queue_name: str, suffix: str, *, raw: bool
) -> None:
    name = f"{queue_name}-{suffix}"
    q = conf.get_queue(name)
    job = await q.aadd("t")
    comm = ws(jpath(name, job.id), raw=raw)
    await connect(comm)
    snap = await comm.receive_json_from(timeout=TIMEOUT)
    assert snap["job"]["id"] == job.id
    queue_comm = ws(qpath(name), raw=raw)
    await connect(queue_comm)
    await job.aupdate_progress(7)
    for c in (comm, queue_comm):
        event = await c.receive_json_from(timeout=TIMEOUT)
        assert (event["event"], event["jobId"]) == ("progress", job.id)
        await c.disconnect()


# --- permissions ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_sockets_refuse_anonymous_non_staff_and_staff_without_permission(
    queue_name: str,
) -> None:
    from asgiref.sync import sync_to_async

    @sync_to_async
    def users() -> tuple[User, User, User]:
        plain = User.objects.create_user("plain", is_staff=False)
        bare = User.objects.create_user("bare", is_staff=True)
        allowed = User.objects.create_user("allowed", is_staff=True)
        allowed.user_permissions.add(
            Permission.objects.get(
                content_type__app_label="django_bullq", codename="view_bullqqueue"
            )
        )
        plain.user_permissions.add(Permission.objects.get(codename="view_bullqqueue"))
        return plain, bare, User.objects.get(pk=allowed.pk)

    plain, bare, allowed = await users()
    for user in (AnonymousUser(), plain, bare):
        for path in (qpath(queue_name), jpath(queue_name, "1")):
            assert await refused_code(ws(path, user)) == 4403, user
    comm = ws(qpath(queue_name), allowed)
    await connect(comm)
    await comm.disconnect()


def own_jobs_only(user: Any, queue_name: str, job_id: str | None) -> bool:
    """EVENTS_AUTHORIZER of the tests: end users may follow jobs whose data names them."""
    from django_bullq.live.consumers import default_authorizer

    if default_authorizer(user, queue_name, job_id):
        return True
    if job_id is None:
        return False
    job = conf.get_queue(queue_name).get_job(job_id)
    return job is not None and (job.data or {}).get("owner") == user.username


async def test_authorizer_hook_lets_an_end_user_follow_their_own_job(
    queue_name: str, settings: Any
) -> None:
    settings.BULLQ = {
        **settings.BULLQ,
        "EVENTS_AUTHORIZER": "tests.django.test_events_ws.own_jobs_only",
    }
    q = conf.get_queue(queue_name)
    mine, theirs = await q.aadd("t", {"owner": "eve"}), await q.aadd("t", {"owner": "bob"})
    eve = FakeUser("eve", staff=False, perms=())
    comm = ws(jpath(queue_name, mine.id), eve)
    await connect(comm)
    assert (await comm.receive_json_from(timeout=TIMEOUT))["job"]["id"] == mine.id
    await comm.disconnect()
    assert await refused_code(ws(jpath(queue_name, theirs.id), eve)) == 4403
    assert await refused_code(ws(qpath(queue_name), eve)) == 4403
    comm = ws(qpath(queue_name))  # staff still allowed through the default
    await connect(comm)
    await comm.disconnect()


# --- case B22: the Channels side ------------------------------------------------------------


async def test_case_b22_sockets_receive_the_gap_notice_of_a_lagging_reader(queue_name: str) -> None:
    import asyncio

    from django_bullq.live.bridge import get_hub

    q = conf.get_queue(queue_name)
    comm = ws(qpath(queue_name))
    await connect(comm)
    reader = get_hub().readers()[queue_name]
    gate = asyncio.Event()
    original = reader.aread

    async def paused() -> list[Any]:
        await gate.wait()
        return await original()

    reader.aread = paused  # type: ignore[method-assign] - the in-flight read still returns
    await q.aadd("t")
    before = await receive_all(comm, 2)
    for _ in range(5):  # the reader lags: these are trimmed before it reads them
        await q.aadd("t")
    await q.aclient.xtrim(q.keys["events"], maxlen=2, approximate=False)
    gate.set()
    gap, *after = await receive_all(comm, 3)
    assert gap["event"] == "gap" and gap["jobId"] is None
    assert id_tuple(gap["fields"]["first"]) > id_tuple(before[-1]["id"])
    assert [e["event"] for e in after] == ["added", "waiting"]
    assert id_tuple(gap["id"]) < id_tuple(after[0]["id"])
    await comm.disconnect()


# --- the JavaScript client ------------------------------------------------------------------


def test_js_client_encodes_names_resumes_backs_off_and_dispatches() -> None:
    import shutil
    import subprocess
    from pathlib import Path

    node = shutil.which("node")
    assert node, "node is needed (make test installs the interop packages with npm)"
    root = Path(__file__).resolve().parents[2]
    script = root / "django_bullq" / "static" / "django_bullq" / "js" / "bullq-events.js"
    done = subprocess.run(
        [node, str(root / "tests" / "js" / "bullq_events_client.mjs"), str(script)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


async def test_wake_ups_the_channel_layer_loses_are_sent_again(
    queue_name: str, monkeypatch: Any
) -> None:
    """A layer may drop or expire a message: the hub wakes a socket that is still behind
    again, so the events arrive without any later event."""
    from channels.layers import get_channel_layer

    from django_bullq.live import bridge

    monkeypatch.setattr(bridge, "REWAKE_AFTER_S", 0.2)
    q = conf.get_queue(queue_name)
    comm = ws(qpath(queue_name))
    await connect(comm)
    layer = get_channel_layer()
    send, lost = layer.send, asyncio.Event()

    async def losing(channel: str, message: dict[str, Any]) -> None:
        if message["type"] == bridge.WAKE_TYPE and not lost.is_set():
            lost.set()  # dropped: the consumer never hears of it
            return
        await send(channel, message)

    monkeypatch.setattr(layer, "send", losing)
    job = await q.aadd("t")
    await asyncio.wait_for(lost.wait(), TIMEOUT)
    got = await receive_all(comm, 2)
    assert [(e["event"], e["jobId"]) for e in got] == [("added", job.id), ("waiting", job.id)]
    assert await comm.receive_nothing(0.3)
    await comm.disconnect()


async def test_custom_job_ids_with_slashes_work_through_raw_path(queue_name: str) -> None:
    q = conf.get_queue(f"{queue_name}/x")
    job = await q.aadd("t", job_id="user/7#a b")
    comm = ws(jpath(q.name, job.id))
    await connect(comm)
    assert (await comm.receive_json_from(timeout=TIMEOUT))["job"]["id"] == "user/7#a b"
    await comm.disconnect()


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (None, True),
        ("tests.django.test_events_ws.own_jobs_only", True),
        ("nodots", False),
        (3, False),
    ],
)
def test_events_authorizer_setting_is_checked(value: Any, *, ok: bool) -> None:
    from tests.django.test_checks import ids

    found = "django_bullq.E003" in ids(
        {
            "CONNECTIONS": {"default": conf.get_config()["CONNECTIONS"]["default"]["URL"]},
            "EVENTS_AUTHORIZER": value,
        }
    )
    assert found is not ok


async def test_without_a_channel_layer_sockets_close_with_1011(
    queue_name: str, settings: Any
) -> None:
    settings.CHANNEL_LAYERS = {}
    channel_layers.backends.clear()
    assert await refused_code(ws(qpath(queue_name))) == 1011


# --- counts frames and client requests (live admin pages) ------------------------------------


async def test_queue_socket_with_counts_sends_counts_on_connect_and_after_events(
    queue_name: str,
) -> None:
    q = conf.get_queue(queue_name)
    await q.aadd("t")
    comm = ws(qpath(queue_name) + "?counts=1")
    await connect(comm)
    first = await comm.receive_json_from(timeout=TIMEOUT)
    assert first["type"] == "counts" and first["counts"]["waiting"] == 1
    assert first["paused"] is False
    await q.aadd("t")
    await q.aadd("t")
    frames = [await comm.receive_json_from(timeout=TIMEOUT) for _ in range(5)]
    kinds = [f["type"] for f in frames]
    assert kinds.count("event") == 4 and kinds[-1] == "counts"  # one counts frame per burst
    assert frames[-1]["counts"]["waiting"] == 3
    await q.apause()
    frames = [await comm.receive_json_from(timeout=TIMEOUT) for _ in range(2)]
    assert frames[0]["event"] == "paused"
    assert frames[1] == {"type": "counts", "counts": frames[1]["counts"], "paused": True}
    assert await comm.receive_nothing(0.4)
    await comm.disconnect()


async def test_queue_socket_without_counts_sends_only_events(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    comm = ws(qpath(queue_name))
    await connect(comm)
    await q.aadd("t")
    frames = await receive_all(comm, 2)
    assert {f["type"] for f in frames} == {"event"}
    assert await comm.receive_nothing(0.4)
    await comm.disconnect()


async def test_clients_may_ask_for_a_fresh_snapshot_or_counts(queue_name: str) -> None:
    q = conf.get_queue(queue_name)
    job = await q.aadd("t")
    comm = ws(jpath(queue_name, job.id))
    await connect(comm)
    assert (await comm.receive_json_from(timeout=TIMEOUT))["job"]["progress"] == 0
    await job.aupdate_progress(70)
    assert (await comm.receive_json_from(timeout=TIMEOUT))["event"] == "progress"
    await comm.send_json_to({"type": "snapshot"})
    again = await comm.receive_json_from(timeout=TIMEOUT)
    assert again["type"] == "snapshot" and again["job"]["progress"] == 70
    await comm.send_json_to({"type": "counts"})  # not a queue socket: ignored
    await comm.send_to(text_data="{not json")  # malformed: ignored, socket stays open
    await comm.send_to(bytes_data=b"\x00\x01")
    await comm.send_json_to(["a list"])
    assert await comm.receive_nothing(0.3)
    await comm.send_json_to({"type": "snapshot"})
    assert (await comm.receive_json_from(timeout=TIMEOUT))["type"] == "snapshot"
    await comm.disconnect()

    queue_comm = ws(qpath(queue_name))
    await connect(queue_comm)
    await queue_comm.send_json_to({"type": "counts"})
    counts = await queue_comm.receive_json_from(timeout=TIMEOUT)
    assert counts["type"] == "counts" and counts["counts"]["waiting"] == 1
    await queue_comm.disconnect()


# --- delivery of bursts (issue 12 item 5): every event, in order, no repeats, promptly -------

#: A burst ends within this many seconds of its last XADD on every socket (the acceptance
#: bound), measured on Redis's clock: the last stream id's ms against Redis TIME.
DELIVERY_BOUND_MS = 1000
#: How long a test waits for a burst before it counts what arrived.
BURST_WAIT_S = 10.0


@pytest.fixture(params=["in_memory", "channels_redis"])
async def layer_backend(request: pytest.FixtureRequest, settings: Any, redis_url: str) -> Any:
    """Each channel layer at its default capacity (100 messages per channel)."""
    import uuid

    if request.param == "channels_redis":
        settings.CHANNEL_LAYERS = {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [redis_url], "prefix": f"asgi-{uuid.uuid4().hex[:8]}"},
            }
        }
    channel_layers.backends.clear()
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    assert layer is not None and layer.capacity == 100  # the default, untouched
    yield request.param
    if request.param == "channels_redis":
        await layer.close_pools()
    channel_layers.backends.clear()


async def stream_ids(q: Any) -> list[str]:
    """Every id now in the queue's events stream, oldest first."""
    return [entry_id.decode() for entry_id, _ in await q.aclient.xrange(q.keys["events"])]


async def frames_through(
    comm: WebsocketCommunicator, last_id: str, wait_s: float = BURST_WAIT_S
) -> list[dict[str, Any]]:
    """Frames received until the one with ``last_id`` (or until ``wait_s`` passed)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    got: list[dict[str, Any]] = []
    while (remaining := deadline - loop.time()) > 0:
        try:
            frame = await comm.receive_json_from(timeout=remaining)
        except TimeoutError:
            break
        got.append(frame)
        if frame.get("id") == last_id:
            break
    return got


async def lateness_ms(q: Any, stream_id: str) -> int:
    """Milliseconds from the XADD of ``stream_id`` to now, both on Redis's clock."""
    seconds, micros = await q.aclient.time()
    return int(seconds) * 1000 + int(micros) // 1000 - id_tuple(stream_id)[0]


def event_ids(frames: list[dict[str, Any]]) -> list[str]:
    return [f["id"] for f in frames if f["type"] == "event"]


async def test_a_bulk_add_of_300_jobs_reaches_the_socket_whole_at_once(
    queue_name: str, layer_backend: str
) -> None:
    """Issue 12 item 5 (a): 300 jobs in one add_bulk (600 events) all reach a queue socket in
    stream order, once each, within a second of the last XADD, with no later event to help."""
    q = conf.get_queue(queue_name)
    comm = ws(qpath(queue_name))
    await connect(comm)
    jobs = await q.aadd_bulk([("t", {"n": n}) for n in range(300)])
    sent = await stream_ids(q)
    assert len(sent) == 600
    frames = await frames_through(comm, sent[-1])
    late = await lateness_ms(q, sent[-1])
    got = event_ids(frames)
    assert got == sent, f"{len(got)} of {len(sent)} events delivered"
    assert [f["jobId"] for f in frames if f["event"] == "added"] == [j.id for j in jobs]
    assert late <= DELIVERY_BOUND_MS, late
    assert await comm.receive_nothing(0.3)
    await comm.disconnect()


async def test_a_burst_of_ten_times_the_channel_capacity_reaches_every_socket(
    queue_name: str, layer_backend: str
) -> None:
    """Issue 12 item 5 (b): 1,200 events (12x the default capacity) in one burst reach each
    of three queue sockets whole, in order, without repeats."""
    q = conf.get_queue(queue_name)
    comms = [ws(qpath(queue_name)) for _ in range(3)]
    for comm in comms:
        await connect(comm)
    await q.aadd_bulk([("t", {"n": n}) for n in range(600)])
    sent = await stream_ids(q)
    assert len(sent) == 1200
    for comm in comms:
        got = event_ids(await frames_through(comm, sent[-1]))
        assert got == sent, f"{len(got)} of {len(sent)} events delivered"
    late = await lateness_ms(q, sent[-1])
    assert late <= DELIVERY_BOUND_MS, late
    for comm in comms:
        assert await comm.receive_nothing(0.2)
        await comm.disconnect()


async def test_a_job_socket_gets_its_events_from_the_tail_of_a_burst(
    queue_name: str, layer_backend: str
) -> None:
    """Issue 12 item 5 (d): a job socket's events at the end of a 1,000-event burst arrive."""
    q = conf.get_queue(queue_name)
    first = await q.aadd("t")
    comm = ws(jpath(queue_name, first.id))
    await connect(comm)
    await comm.receive_json_from(timeout=TIMEOUT)  # the snapshot
    other = ws(jpath(queue_name, "late"))  # a job added last, after 499 others
    await connect(other)
    assert (await other.receive_json_from(timeout=TIMEOUT))["job"] is None
    await q.aadd_bulk([("t", {"n": n}) for n in range(499)] + [("t", {}, {"job_id": "late"})])
    await first.aupdate_progress(1)
    sent = await stream_ids(q)
    assert len(sent) == 2 + 1000 + 1
    got = await frames_through(other, [i for i in sent if i][-2])  # "late"'s waiting event
    assert [(f["event"], f["jobId"]) for f in got] == [("added", "late"), ("waiting", "late")]
    mine = await frames_through(comm, sent[-1])
    assert [(f["event"], f["jobId"]) for f in mine] == [("progress", first.id)]
    for c in (comm, other):
        assert await c.receive_nothing(0.2)
        await c.disconnect()


async def test_a_lagging_bridge_over_a_trimmed_stream_sends_a_gap_then_the_rest(
    queue_name: str,
) -> None:
    """Issue 12 item 5 (c): the shared reader stalls while 800 jobs are added with
    maxLenEvents 300; the socket then gets one ``gap`` and every entry still in the stream."""
    from django_bullq.live.bridge import get_hub

    q = conf.get_queue(queue_name)
    await q.aclient.hset(q.keys["meta"], "opts.maxLenEvents", 300)
    comm = ws(qpath(queue_name))
    await connect(comm)
    reader = get_hub().readers()[queue_name]
    gate, stalled = asyncio.Event(), asyncio.Event()
    original = reader.aread

    async def paused() -> list[Any]:
        stalled.set()
        await gate.wait()
        return await original()

    reader.aread = paused  # type: ignore[method-assign] - the in-flight read still returns
    await q.aadd("t")  # ends the in-flight read; the next one stalls
    before = await receive_all(comm, 2)
    await asyncio.wait_for(stalled.wait(), TIMEOUT)
    await q.aadd_bulk([("t", {"n": n}) for n in range(800)])
    kept = await stream_ids(q)
    assert id_tuple(kept[0]) > id_tuple(before[-1]["id"])  # trimmed past the socket
    assert len(kept) >= 300  # three channel capacities are left to send
    gate.set()
    frames = await frames_through(comm, kept[-1])
    gap, rest = frames[0], frames[1:]
    assert gap["event"] == "gap" and gap["jobId"] is None
    assert id_tuple(gap["fields"]["first"]) > id_tuple(before[-1]["id"])
    assert id_tuple(gap["fields"]["last"]) < id_tuple(kept[0])
    got = event_ids(rest)
    assert got == kept, f"{len(got)} of {len(kept)} kept events delivered"
    assert await comm.receive_nothing(0.2)
    await comm.disconnect()


async def test_a_socket_behind_the_buffer_reads_the_trimmed_stream_gap_first(
    queue_name: str, monkeypatch: Any
) -> None:
    """Issue 12 item 5 (c), the socket's side: a socket busy with a request while 800 jobs are
    added (maxLenEvents 300, a 50-frame buffer) falls behind the buffer and the trimmed stream;
    it then sends one ``gap`` and every entry still in the stream, in order."""
    from django_bullq.live import bridge
    from django_bullq.live.consumers import QueueEventsConsumer

    monkeypatch.setattr(bridge, "BUFFER_FRAMES", 50)
    q = conf.get_queue(queue_name)
    await q.aclient.hset(q.keys["meta"], "opts.maxLenEvents", 300)
    comm = ws(qpath(queue_name))
    await connect(comm)
    await q.aadd("t")
    before = await receive_all(comm, 2)
    gate, busy = asyncio.Event(), asyncio.Event()
    counts = QueueEventsConsumer.counts

    async def slow_counts(self: Any) -> dict[str, Any]:
        busy.set()
        await gate.wait()
        return await counts(self)

    monkeypatch.setattr(QueueEventsConsumer, "counts", slow_counts)
    await comm.send_json_to({"type": "counts"})
    await asyncio.wait_for(busy.wait(), TIMEOUT)  # the consumer handles nothing else now
    await q.aadd_bulk([("t", {"n": n}) for n in range(800)])
    kept = await stream_ids(q)
    assert id_tuple(kept[0]) > id_tuple(before[-1]["id"])  # trimmed past the socket
    assert len(kept) >= 300
    gate.set()
    frames = await frames_through(comm, kept[-1])
    assert frames[0]["type"] == "counts"
    gap, rest = frames[1], frames[2:]
    assert gap["event"] == "gap" and gap["jobId"] is None
    assert id_tuple(gap["fields"]["first"]) > id_tuple(before[-1]["id"])
    assert id_tuple(gap["fields"]["last"]) < id_tuple(kept[0])
    got = event_ids(rest)
    assert got == kept, f"{len(got)} of {len(kept)} kept events delivered"
    assert await comm.receive_nothing(0.2)
    await comm.disconnect()


async def test_fifty_sockets_share_one_reader_and_a_few_redis_connections(queue_name: str) -> None:
    """The hint's scaling check: 50 sockets on a queue and a 600-event burst cost the queue
    one reader, fewer stream reads than sockets, and a handful of Redis connections."""
    q = conf.get_queue(queue_name)
    await q.aadd("warm-up")  # the queue's pool has its connection before counting

    async def stats() -> tuple[int, int]:
        info = await q.aclient.info("all")
        reads = sum(
            int(info.get(f"cmdstat_{c}", {}).get("calls", 0))
            for c in ("xread", "xrange", "xrevrange")
        )
        return int(info["connected_clients"]), reads

    clients_before, _ = await stats()
    comms = [ws(qpath(queue_name)) for _ in range(50)]
    for comm in comms:
        await connect(comm)
    _, reads_before = await stats()
    await q.aadd_bulk([("t", {"n": n}) for n in range(300)])
    sent = (await stream_ids(q))[2:]  # after the warm-up job's two events
    assert len(sent) == 600
    for comm in comms:
        assert event_ids(await frames_through(comm, sent[-1])) == sent
    clients_after, reads_after = await stats()
    from django_bullq.live.bridge import get_hub

    assert list(get_hub().readers()) == [queue_name]
    reads = reads_after - reads_before - 1  # stream_ids() above is one XRANGE
    assert reads < len(comms), f"{reads} stream reads for {len(comms)} sockets"
    assert clients_after - clients_before <= 3, (clients_before, clients_after)
    for comm in comms:
        await comm.disconnect()
    assert get_hub().readers() == {}


async def test_a_socket_behind_the_buffer_of_a_deleted_stream_gets_a_gap(
    queue_name: str, monkeypatch: Any
) -> None:
    """The stream is deleted (an obliterate) while a busy socket is behind the buffer: the
    events between its last id and the buffer are gone, so it sends a ``gap`` for them and
    then the buffered rest, and never spins on an empty stream."""
    from django_bullq.core.events import next_id
    from django_bullq.live import bridge
    from django_bullq.live.consumers import QueueEventsConsumer

    monkeypatch.setattr(bridge, "BUFFER_FRAMES", 50)
    q = conf.get_queue(queue_name)
    comm = ws(qpath(queue_name))
    await connect(comm)
    await q.aadd("t")
    before = await receive_all(comm, 2)
    gate, busy = asyncio.Event(), asyncio.Event()
    counts = QueueEventsConsumer.counts

    async def slow_counts(self: Any) -> dict[str, Any]:
        busy.set()
        await gate.wait()
        return await counts(self)

    monkeypatch.setattr(QueueEventsConsumer, "counts", slow_counts)
    await comm.send_json_to({"type": "counts"})
    await asyncio.wait_for(busy.wait(), TIMEOUT)
    await q.aadd_bulk([("t", {"n": n}) for n in range(100)])
    added = await stream_ids(q)
    feed_reader = bridge.get_hub().readers()[queue_name]
    for _ in range(200):  # until the feed has read the whole burst into its buffer
        if feed_reader.last_id == added[-1]:
            break
        await asyncio.sleep(0.01)
    assert feed_reader.last_id == added[-1]
    await q.aclient.delete(q.keys["events"])
    gate.set()
    frames = await frames_through(comm, added[-1])
    assert frames[0]["type"] == "counts"
    gap, rest = frames[1], frames[2:]
    assert gap["event"] == "gap"
    assert gap["fields"]["first"] == next_id(before[-1]["id"])
    assert event_ids(rest) == added[-50:]  # the buffered frames
    assert id_tuple(gap["fields"]["last"]) < id_tuple(rest[0]["id"])
    assert await comm.receive_nothing(0.3)
    await comm.disconnect()
