"""mergeMetricTotals-1.lua: adds counts, sums and dense histograms to the all-time totals hash,
caps the job names it keeps (the rest under the other name, for good), counts stalled jobs."""

from __future__ import annotations

import json

from tests.lua.helpers import LuaQueue

TOTALS = "bullq:metrics:total"


def merge(lq: LuaQueue, delta: dict[str, object], stalled: int = 0, max_names: int = 100) -> int:
    args = [json.dumps(delta), stalled, max_names, "(other names)"]
    return int(lq.run("mergeMetricTotals", [lq.keys[TOTALS]], args))


def field(lq: LuaQueue, name: str) -> object:
    raw = lq.r.hget(lq.keys[TOTALS], name)
    return None if raw is None else json.loads(raw)


def test_totals_add_counts_sums_and_histograms_name_by_name_in_rank_order(lq: LuaQueue) -> None:
    assert merge(lq, {"a": [2, 1, 0, [5, 3, 0, 1], [0, 2], 40, 3]}) == 1
    assert merge(lq, {"a": [1, 0, 4, [3, 1, 0, 1], [], 9, 0], "b": [1, 0, 0, [], [], 0, 0]}) == 2
    # the counts, the histograms, the sums (ms), then the rank: a was kept first
    assert field(lq, "n:a") == [3, 1, 4, [3, 1, 0, 4, 0, 1], [0, 2], 49, 3, 1]
    got = field(lq, "n:b")
    assert isinstance(got, list) and got[:3] == [1, 0, 0] and got[5:] == [0, 0, 2]
    assert lq.r.hget(lq.keys[TOTALS], "q:names") == "2"
    assert lq.r.ttl(lq.keys[TOTALS]) == -1  # totals never expire


def test_totals_keep_max_names_and_count_later_names_under_other_for_good(lq: LuaQueue) -> None:
    assert merge(lq, {"a": [1, 0, 0, [], [], 0, 0], "b": [1, 0, 0, [], [], 0, 0]}, max_names=2) == 2
    assert merge(lq, {"c": [5, 0, 0, [], [], 0, 0]}, max_names=2) == 2  # c: other
    assert merge(lq, {"d": [2, 0, 0, [], [], 0, 0], "a": [1, 0, 0, [], [], 0, 0]}, max_names=2) == 2
    assert field(lq, "n:c") is None and field(lq, "n:d") is None
    other = field(lq, "n:(other names)")
    assert isinstance(other, list) and other[0] == 7 and len(other) == 7  # no rank
    a = field(lq, "n:a")
    assert isinstance(a, list) and a[0] == 2


def test_totals_count_stalled_jobs_and_replace_a_foreign_field(lq: LuaQueue) -> None:
    lq.r.hset(lq.keys[TOTALS], "n:a", "not json")
    merge(lq, {"a": [1, 0, 0, [], [], 0, 0]}, stalled=2)
    merge(lq, {}, stalled=3)
    a = field(lq, "n:a")
    assert isinstance(a, list) and a[0] == 1
    assert lq.r.hget(lq.keys[TOTALS], "q:stalled") == "5"
