"""obliterate-2.lua: codes 0 done, 1 more to do, -1 not paused, -2 active jobs without force."""

from __future__ import annotations

from tests.lua.helpers import LuaQueue


def obliterate(lq: LuaQueue, count: int, force: bool = False) -> int:
    return int(lq.run("obliterate", [lq.keys["meta"], lq.keys["active"]],
                      [lq.prefix, count, "1" if force else "0"]))


def test_refusals(lq: LuaQueue) -> None:
    lq.add_active()
    assert obliterate(lq, 10) == -1
    lq.r.hset(lq.keys["meta"], "paused", "1")
    assert obliterate(lq, 10) == -2
    assert lq.lst("active") == ["1"] and lq.job("1")


def test_batches_then_queue_keys(lq: LuaQueue) -> None:
    lq.add_active()
    for _ in range(3):
        lq.add()
    lq.add(delay=60_000)
    lq.add(priority=1)
    lq.r.zadd(lq.keys["repeat"], {"s": 1})
    lq.r.hset(lq.keys["repeat"] + ":s", "every", "1000")
    lq.r.zadd(lq.keys["waiting-children"], {"wc": 1})
    lq.r.hset(lq.keys["metrics:completed"], "count", "3")
    lq.r.hset(lq.keys["meta"], "paused", "1")

    answers = [obliterate(lq, 2, force=True) for _ in range(4)]
    assert answers == [1, 1, 1, 0]  # 7 items, 2 per call
    assert lq.lock("1") is None
    for i in "123456":
        assert lq.job_keys_exist(i) == 0
    left = sorted(k for k in lq.r.scan_iter(lq.prefix + "*"))
    assert left == [lq.keys["waiting-children"]]  # BullMQ keeps flow parents waiting
