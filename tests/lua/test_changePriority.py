"""changePriority-7.lua: re-queue a waiting job under a new priority; codes 0 and -1."""

from __future__ import annotations

from tests.lua.helpers import TWO_32, LuaQueue, prioritized_score


def change_priority(lq: LuaQueue, job_id: str, priority: int, *, lifo: bool = False) -> int:
    keys = [lq.keys.job(job_id)] + [
        lq.keys[s] for s in ("wait", "prioritized", "pc", "meta", "active", "marker")
    ]
    return int(lq.run("changePriority", keys, [job_id, priority, "1" if lifo else "0"]))


def test_wait_to_prioritized_and_back(lq: LuaQueue) -> None:
    lq.add()
    lq.add()
    assert change_priority(lq, "1", 5) == 0
    assert lq.lst("wait") == ["2"]
    assert lq.zset("prioritized") == [("1", prioritized_score(5, 1))]
    assert lq.job("1")["priority"] == "5"
    assert change_priority(lq, "1", 5, lifo=True) == 0
    assert lq.zset("prioritized") == [("1", 5 * TWO_32)]
    assert change_priority(lq, "1", 0) == 0
    assert lq.lst("wait") == ["1", "2"] and lq.zset("prioritized") == []
    assert change_priority(lq, "1", 0, lifo=True) == 0
    assert lq.lst("wait") == ["2", "1"]  # lifo: right end, runs next
    assert lq.events()[-1][1] == "waiting"  # no event of its own


def test_other_states_only_get_the_field(lq: LuaQueue) -> None:
    lq.add(delay=60_000)
    assert change_priority(lq, "1", 7) == 0
    assert lq.job("1")["priority"] == "7"
    assert lq.lst("wait") == [] and lq.zset("prioritized") == []
    assert change_priority(lq, "ghost", 1) == -1
