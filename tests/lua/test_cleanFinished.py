"""cleanFinished-2.lua: retention sweep of completed / failed on a quiet queue.

Return codes pinned: 0 (nothing removed, no event); N > 0 removed (+ `cleaned count N`).
"""

from __future__ import annotations

from tests.lua.factories import seed_finished
from tests.lua.helpers import NOW, LuaQueue, opts_json


def clean(
    lq: LuaQueue, target: str, *, count: int = -1, age: int = 0, limit: int = 1000, now: int = NOW
) -> int:
    field = "removeOnComplete" if target == "completed" else "removeOnFail"
    return int(
        lq.run(
            "cleanFinished",
            [lq.keys[target], lq.keys["events"]],
            [lq.prefix, now, count, age, limit, field],
        )
    )


def remaining(lq: LuaQueue, target: str) -> list[str]:
    return [m for m, _ in lq.zset(target)]


def test_keep_all_removes_nothing_and_emits_nothing(lq: LuaQueue) -> None:
    ids = seed_finished(lq, "completed", [NOW - 10_000_000, NOW - 1])
    assert clean(lq, "completed") == 0
    assert remaining(lq, "completed") == ids
    assert lq.events() == []


def test_count_rule_keeps_the_newest(lq: LuaQueue) -> None:
    ids = seed_finished(lq, "failed", [NOW - 4, NOW - 3, NOW - 2, NOW - 1])
    assert clean(lq, "failed", count=1) == 3
    assert remaining(lq, "failed") == [ids[3]]
    assert all(lq.job_keys_exist(i) == 0 for i in ids[:3])
    assert lq.events() == [("event", "cleaned", "count", "3")]


def test_default_age_rule(lq: LuaQueue) -> None:
    ids = seed_finished(lq, "completed", [NOW - 120_000, NOW - 60_000, NOW - 59_999])
    assert clean(lq, "completed", age=60) == 2
    assert remaining(lq, "completed") == [ids[2]]
    assert lq.events() == [("event", "cleaned", "count", "2")]


def test_each_jobs_own_retention_wins_over_the_default(lq: LuaQueue) -> None:
    ids = seed_finished(
        lq,
        "completed",
        [NOW - 7_200_000] * 4 + [NOW - 10],
        opts=[
            opts_json(),
            opts_json(removeOnComplete={"age": 3600}),
            opts_json(removeOnComplete={"age": 86400}),
            opts_json(removeOnComplete=False),
            opts_json(removeOnComplete=True),
        ],
    )
    # default: keep all (-1, no age); f1 is past its own hour, f4 is `true`
    assert clean(lq, "completed") == 2
    assert remaining(lq, "completed") == [ids[0], ids[2], ids[3]]


def test_failed_set_reads_remove_on_fail(lq: LuaQueue) -> None:
    ids = seed_finished(
        lq,
        "failed",
        [NOW - 7_200_000] * 2,
        opts=[opts_json(removeOnFail={"age": 60}), opts_json(removeOnComplete={"age": 60})],
    )
    assert clean(lq, "failed") == 1
    assert remaining(lq, "failed") == [ids[1]]


def test_limit_bounds_the_jobs_examined_per_call(lq: LuaQueue) -> None:
    seed_finished(lq, "completed", [NOW - 120_000 + i for i in range(5)])
    assert clean(lq, "completed", age=60, limit=2) == 2
    assert len(remaining(lq, "completed")) == 3


def test_a_job_key_that_is_not_a_hash_is_swept_by_the_queue_rule(lq: LuaQueue) -> None:
    """Trial finding: getKeepAge's HGET raised WRONGTYPE, so retention of the queue stopped and
    a worker logged the error on every pass."""
    ids = seed_finished(lq, "failed", [NOW - 4, NOW - 3])
    lq.r.set(lq.keys.job("s"), "written by hand")
    lq.r.zadd(lq.keys["failed"], {"s": NOW - 5})

    assert clean(lq, "failed", count=1) == 2

    assert remaining(lq, "failed") == [ids[1]]
    assert lq.r.exists(lq.keys.job("s")) == 0
