"""changeDelay-5.lua: return codes 0, -1 missing job, -3 not delayed."""

from __future__ import annotations

from tests.lua.helpers import NOW, LuaQueue, delayed_score


def change_delay(lq: LuaQueue, job_id: str, delay: int, now: int = NOW) -> int:
    keys = [
        lq.keys.job(job_id),
        lq.keys["delayed"],
        lq.keys["events"],
        lq.keys["marker"],
        lq.keys["meta"],
    ]
    return int(lq.run("changeDelay", keys, [job_id, now, delay]))


def test_retimes_delayed_job(lq: LuaQueue) -> None:
    lq.add(delay=60_000)
    lq.clear_events()
    assert change_delay(lq, "1", 5000) == 0
    assert lq.zset("delayed") == [("1", delayed_score(NOW + 5000))]
    assert lq.job("1")["delay"] == "5000"
    assert lq.zset("marker") == [("1", NOW + 5000)]
    assert lq.events() == [("event", "delayed", "jobId", "1", "delay", str(NOW + 5000))]


def test_codes(lq: LuaQueue) -> None:
    assert change_delay(lq, "ghost", 10) == -1
    lq.add()
    assert change_delay(lq, "1", 10) == -3
    assert lq.zset("delayed") == [] and lq.lst("wait") == ["1"]
