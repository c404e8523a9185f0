"""addLog-2.lua: append a log line, optionally keeping only the newest N.

Return codes pinned: the number of lines kept; -1 missing job.
"""

from __future__ import annotations

from tests.lua.helpers import LuaQueue


def log(lq: LuaQueue, job_id: str, line: str, keep: int = 0) -> int:
    k = lq.keys.job(job_id)
    return int(lq.run("addLog", [k, k + ":logs"], [job_id, line, keep]))


def test_lines_are_appended_and_counted(lq: LuaQueue) -> None:
    lq.add()
    lq.clear_events()
    assert log(lq, "1", "first") == 1
    assert log(lq, "1", "second \u2603") == 2
    assert lq.r.lrange(lq.keys.job("1") + ":logs", 0, -1) == ["first", "second \u2603"]
    assert lq.events() == []


def test_keep_logs_trims_to_the_newest(lq: LuaQueue) -> None:
    lq.add()
    assert log(lq, "1", "a", keep=2) == 1
    assert log(lq, "1", "b", keep=2) == 2
    assert log(lq, "1", "c", keep=2) == 2
    assert lq.r.lrange(lq.keys.job("1") + ":logs", 0, -1) == ["b", "c"]


def test_missing_job_returns_minus_1(lq: LuaQueue) -> None:
    assert log(lq, "ghost", "x") == -1
    assert lq.r.exists(lq.keys.job("ghost") + ":logs") == 0
