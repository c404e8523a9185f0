"""recordTaskRun-1.lua: return codes 0 and -1 missing job (never creates a job hash)."""

from __future__ import annotations

from tests.lua.helpers import LuaQueue


def test_record_task_run(lq: LuaQueue) -> None:
    lq.add(data='{"args":[],"kwargs":{}}')
    record = '{"worker_ids":["w1"],"started_at":1,"errors":[]}'
    assert lq.run("recordTaskRun", [lq.keys.job("1")], [record]) == 0
    assert lq.job("1")["djt"] == record
    assert lq.job("1")["data"] == '{"args":[],"kwargs":{}}'
    assert lq.run("recordTaskRun", [lq.keys.job("ghost")], [record]) == -1
    assert lq.r.exists(lq.keys.job("ghost")) == 0
