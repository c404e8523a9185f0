"""Parent bookkeeping of moveToFinished-13.lua (includes/updateParentOnFinish.lua) and the
flow side of removeJob-2.lua: exact Redis state per failure policy (protocol §5.15)."""

from __future__ import annotations

import json

import pytest

from tests.lua.helpers import NOW, LuaQueue


def flow(lq: LuaQueue, **flags: bool) -> tuple[str, str]:
    """Parent "p" in waiting-children with children "c" (active) and "d" (waiting)."""
    lq.r.hset(
        lq.keys.job("p"),
        mapping={"name": "p", "data": "{}", "opts": "{}", "priority": "0", "delay": "0"},
    )
    lq.r.zadd(lq.keys["waiting-children"], {"p": NOW})
    parent = json.dumps({"id": "p", "queueKey": lq.keys.queue_key, **flags})
    c = lq.add_active("c", parent_key=lq.keys.job("p"), parent=parent)
    lq.add(job_id="d", parent_key=lq.keys.job("p"), parent=parent)
    lq.clear_events()
    return c, "d"


def test_completed_child_goes_to_processed_and_last_one_releases(lq: LuaQueue) -> None:
    c, d = flow(lq)
    assert lq.finish(c, value='{"v":1}') == 0
    assert lq.r.hgetall(lq.keys.job("p") + ":processed") == {lq.keys.job(c): '{"v":1}'}
    assert lq.zset("waiting-children") == [("p", float(NOW))]
    lq.activate(token="t:2")
    lq.clear_events()
    assert lq.finish(d, token="t:2", value="2") == 0
    assert lq.zset("waiting-children") == []
    assert lq.lst("wait") == ["p"]
    assert ("event", "waiting", "jobId", "p", "prev", "waiting-children") in lq.events()


@pytest.mark.parametrize(
    ("flag", "released", "failed_hash", "unsuccessful"),
    [
        ("fpof", True, False, True),
        ("cpof", True, True, False),
        ("idof", False, True, False),
        ("rdof", False, False, False),
        ("", False, False, False),
    ],
)
def test_failed_child_by_policy(
    lq: LuaQueue, flag: str, *, released: bool, failed_hash: bool, unsuccessful: bool
) -> None:
    c, _ = flow(lq, **({flag: True} if flag else {}))
    assert lq.finish(c, target="failed", value="boom") == 0
    pk = lq.keys.job("p")
    assert (lq.lst("wait") == ["d", "p"]) is released
    assert (lq.r.hgetall(pk + ":failed") == {lq.keys.job(c): "boom"}) is failed_hash
    assert (lq.r.zcard(pk + ":unsuccessful") == 1) is unsuccessful
    pending = lq.members("p:dependencies")
    assert (lq.keys.job(c) in pending) is (flag == "")
    if flag == "fpof":
        assert lq.job("p")["defa"] == f"child {lq.keys.job(c)} failed"


def test_fail_parent_sets_defa_on_an_active_parent(lq: LuaQueue) -> None:
    c, _ = flow(lq, fpof=True)
    lq.r.zrem(lq.keys["waiting-children"], "p")
    lq.r.lpush(lq.keys["active"], "p")
    lq.finish(c, target="failed", value="boom")
    assert lq.job("p")["defa"] == f"child {lq.keys.job(c)} failed"
    assert "p" not in lq.lst("wait")


def test_removed_on_complete_still_updates_parent(lq: LuaQueue) -> None:
    c, _ = flow(lq, rdof=True)
    assert lq.finish(c, target="failed", value="x", keep_count=0) == 0
    assert lq.members("p:dependencies") == {lq.keys.job("d")}


def test_delayed_parent_is_released_to_delayed(lq: LuaQueue) -> None:
    c, d = flow(lq)
    lq.r.hset(lq.keys.job("p"), "delay", "5000")
    lq.r.srem(lq.keys.job("p") + ":dependencies", lq.keys.job(d))
    lq.finish(c, now=NOW + 1000)
    assert lq.zset("delayed") == [("p", float((NOW + 6000) * 4096))]
    assert ("event", "delayed", "jobId", "p", "delay", str(NOW + 6000)) in lq.events()


def test_remove_last_child_releases_parent(lq: LuaQueue) -> None:
    c, d = flow(lq)
    lq.r.delete(lq.keys.job(c) + ":lock")
    keys = lambda j: [lq.keys.job(j), lq.keys["repeat"]]  # noqa: E731
    assert lq.run("removeJob", keys(c), [lq.prefix, c, "1"]) == 1
    assert lq.zset("waiting-children") == [("p", float(NOW))]
    assert lq.run("removeJob", keys(d), [lq.prefix, d, "1"]) == 1
    assert lq.lst("wait") == ["p"]


def test_a_parent_key_that_is_not_a_hash_fails_the_parent_and_keeps_the_children(
    lq: LuaQueue,
) -> None:
    """Trial finding: with a flow parent's key overwritten (a stream, say), the finish of a
    child errored after the child had left active, so child and parent were in no state."""
    c, d = flow(lq)
    lq.r.delete(lq.keys.job("p"))
    lq.r.xadd(lq.keys.job("p"), {"written": "by hand"})

    assert lq.finish(c) == 0

    assert lq.zset("completed") == [(c, float(NOW + 1000))]
    assert lq.lst("wait") == [d]  # the other child is kept, as it was
    assert lq.zset("waiting-children") == []
    assert lq.zset("failed") == [("p", float(NOW + 1000))]
    assert lq.keys.job(c) not in lq.members("p:dependencies")
    reason = f"job key {lq.keys.job('p')} holds a stream, not a job hash"
    assert ("event", "failed", "jobId", "p", "failedReason", reason, "prev", "active") in (
        lq.events()
    )
