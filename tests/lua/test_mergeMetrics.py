"""mergeMetrics-1.lua: adds counts and dense histograms name by name, keeps other names,
replaces a bucket that is not JSON, sets the expiry, keeps any job name as written."""

from __future__ import annotations

import json
import time

from tests.lua.helpers import LuaQueue
from tests.support.redis_server import expire_at_ms


def merge(lq: LuaQueue, delta: dict[str, object], expire_at_s: int | None = None) -> int:
    expire = expire_at_s or int(time.time()) + 3600
    return int(lq.run("mergeMetrics", [lq.keys["bullq:metrics:m:1"]], [json.dumps(delta), expire]))


def stored(lq: LuaQueue) -> dict[str, list[object]]:
    return dict(json.loads(lq.r.get(lq.keys["bullq:metrics:m:1"])))


def test_merge_adds_counts_and_histograms_and_keeps_other_names(lq: LuaQueue) -> None:
    assert merge(lq, {"a": [2, 1, 0, [5, 3, 0, 1], [0, 2]], "b": [1, 0, 0, [9, 1], []]}) == 2
    # overlapping and wider run buckets; an empty wait histogram written by Lua as {} or []
    assert merge(lq, {"a": [1, 0, 4, [3, 1, 0, 1], []]}) == 2
    got = stored(lq)
    assert got["a"][:3] == [3, 1, 4]
    assert got["a"][3] == [3, 1, 0, 4, 0, 1]  # buckets 3, 5 (3 + 1) and 7
    assert got["a"][4] == [0, 2]
    assert got["b"][:4] == [1, 0, 0, [9, 1]] and got["b"][4] in ([], {})


def test_merge_sets_the_expiry_and_replaces_a_foreign_value(lq: LuaQueue) -> None:
    key = lq.keys["bullq:metrics:m:1"]
    lq.r.set(key, "not json")
    at = int(time.time()) + 7200
    assert merge(lq, {"a": [1, 0, 0, [], []]}, at) == 1
    assert stored(lq)["a"][:3] == [1, 0, 0]
    assert round(expire_at_ms(lq.r, key) / 1000) == at


def test_merge_keeps_any_job_name_as_written(lq: LuaQueue) -> None:
    names = ['<script>"x"</script>', "ünï-cødé 🎉", "1", "", "a:b{c}"]
    merge(lq, {n: [1, 0, 0, [], []] for n in names})
    merge(lq, {n: [1, 0, 0, [], []] for n in names})
    assert {n: v[0] for n, v in stored(lq).items()} == {n: 2 for n in names}
