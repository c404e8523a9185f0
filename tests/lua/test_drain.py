"""drain-5.lua: remove waiting (and optionally delayed) jobs; keep scheduler iterations."""

from __future__ import annotations

from tests.lua.helpers import LuaQueue


def drain(lq: LuaQueue, delayed: bool = False) -> int:
    keys = [lq.keys[s] for s in ("wait", "paused", "delayed", "prioritized", "pc")]
    return int(lq.run("drain", keys, [lq.prefix, "1" if delayed else "0"]))


def test_drain_without_and_with_delayed(lq: LuaQueue) -> None:
    lq.add_active()  # 1 is active and stays
    lq.add()
    lq.add(priority=2)
    lq.add(delay=60_000)
    lq.r.rpush(lq.keys["paused"], "legacy")
    lq.r.hset(lq.keys.job("legacy"), mapping={"name": "x", "data": "{}"})
    lq.clear_events()

    assert drain(lq) == 3
    assert lq.lst("wait") == [] and lq.zset("prioritized") == [] and lq.exists("paused") == 0
    assert lq.job_keys_exist("2") == 0 and lq.job_keys_exist("legacy") == 0
    assert lq.exists("pc") == 0
    assert [m for m, _ in lq.zset("delayed")] == ["4"]
    assert lq.lst("active") == ["1"]
    assert drain(lq, delayed=True) == 1
    assert lq.zset("delayed") == [] and lq.job_keys_exist("4") == 0
    assert lq.events() == []


def test_keeps_current_scheduler_iteration_and_removes_emptied_parent(lq: LuaQueue) -> None:
    it = "repeat:s1:1000"
    lq.r.zadd(lq.keys["repeat"], {"s1": 1000})
    lq.r.hset(lq.keys.job(it), mapping={"name": "t", "data": "{}", "rjk": "s1"})
    lq.r.lpush(lq.keys["wait"], it)
    lq.r.hset(lq.keys.job("p"), mapping={"name": "p", "data": "{}"})
    lq.add(job_id="child", parent_key=lq.keys.job("p"), parent="{}")
    lq.r.sadd(lq.keys.job("p") + ":dependencies", lq.keys.job("child"))
    lq.r.zadd(lq.keys["waiting-children"], {"p": 1})

    assert drain(lq) == 1
    assert lq.lst("wait") == [it]
    assert lq.zset("waiting-children") == [] and lq.job_keys_exist("p") == 0
