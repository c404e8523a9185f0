"""updateData-1.lua: return codes 0 and -1 missing job."""

from __future__ import annotations

from tests.lua.helpers import LuaQueue


def test_update_data(lq: LuaQueue) -> None:
    lq.add(data='{"a":1}')
    assert lq.run("updateData", [lq.keys.job("1")], ['{"b":2}']) == 0
    assert lq.job("1")["data"] == '{"b":2}'
    assert lq.run("updateData", [lq.keys.job("ghost")], ["{}"]) == -1
    assert lq.r.exists(lq.keys.job("ghost")) == 0
