"""moveStalledJobsToWait-8.lua: the two-phase stalled check (stalled set, stc, defa).

Return codes pinned: {} when another check ran within the interval; {} on a first check that only
marks candidates; the list of requeued stalled ids.
"""

from __future__ import annotations

from tests.lua.helpers import NOW, LuaQueue

LIMIT_TEXT = "job stalled more than allowable limit"


def check(
    lq: LuaQueue,
    *,
    max_stalled: int = 1,
    now: int = NOW,
    interval: int = 30_000,
    next_round: bool = False,
) -> list[str]:
    """Run one stalled check; ``next_round`` first expires the interval guard of the last one."""
    if next_round:
        lq.r.delete(lq.keys["stalled-check"])
    return sorted(
        lq.run("moveStalledJobsToWait", lq.stalled_keys(), [max_stalled, lq.prefix, now, interval])
    )


def test_first_check_marks_active_ids_and_sets_guard(lq: LuaQueue) -> None:
    lq.add_active("a")
    lq.add_active("b")
    lq.clear_events()

    assert check(lq, now=NOW + 5, interval=30_000) == []

    assert lq.members("stalled") == {"a", "b"}
    assert lq.r.get(lq.keys["stalled-check"]) == str(NOW + 5)
    assert 29_000 < lq.r.pttl(lq.keys["stalled-check"]) <= 30_000
    assert lq.events() == []


def test_guard_makes_a_second_check_within_the_interval_a_no_op(lq: LuaQueue) -> None:
    lq.add_active("a")
    check(lq)
    lq.r.delete(lq.keys.job("a") + ":lock")
    assert check(lq) == []
    assert lq.lst("active") == ["a"]


def test_unlocked_job_seen_twice_is_requeued_at_the_front(lq: LuaQueue) -> None:
    lq.add_active("a")
    lq.add(job_id="w")
    check(lq)
    lq.r.delete(lq.keys.job("a") + ":lock")
    lq.r.delete(lq.keys["marker"])
    lq.clear_events()

    assert check(lq, next_round=True) == ["a"]

    job = lq.job("a")
    assert job["stc"] == "1" and "defa" not in job
    assert lq.lst("wait") == ["w", "a"]  # RPUSH: runs next
    assert lq.lst("active") == []
    assert lq.members("stalled") == set()
    assert lq.zset("marker") == [("0", 0)]
    assert lq.events() == [
        ("event", "waiting", "jobId", "a", "prev", "active"),
        ("event", "stalled", "jobId", "a"),
    ]


def test_locked_job_is_not_stalled_and_stays_marked(lq: LuaQueue) -> None:
    lq.add_active("a")
    check(lq)
    assert check(lq, next_round=True) == []
    assert lq.lst("active") == ["a"]
    assert lq.members("stalled") == {"a"}  # re-marked for the next round
    assert "stc" not in lq.job("a")


def test_past_max_stalled_count_sets_defa(lq: LuaQueue) -> None:
    lq.add_active("a")
    lq.r.hset(lq.keys.job("a"), "stc", "1")
    lq.r.delete(lq.keys.job("a") + ":lock")
    check(lq)
    assert check(lq, max_stalled=1, next_round=True) == ["a"]
    job = lq.job("a")
    assert (job["stc"], job["defa"]) == ("2", LIMIT_TEXT)
    assert lq.lst("wait") == ["a"]  # requeued, failed later by the worker that fetches it


def test_max_stalled_count_0_sets_defa_on_first_stall(lq: LuaQueue) -> None:
    lq.add_active("a")
    lq.r.delete(lq.keys.job("a") + ":lock")
    check(lq, max_stalled=0)
    assert check(lq, max_stalled=0, next_round=True) == ["a"]
    assert (lq.job("a")["stc"], lq.job("a")["defa"]) == ("1", LIMIT_TEXT)


def test_live_scheduler_iteration_never_gets_defa(lq: LuaQueue) -> None:
    job_id = f"repeat:sched:{NOW}"
    lq.add_active(job_id)
    lq.r.hset(lq.keys.job(job_id), "rjk", "sched")
    lq.r.zadd(lq.keys["repeat"], {"sched": NOW})
    lq.r.delete(lq.keys.job(job_id) + ":lock")
    check(lq, max_stalled=0)
    assert check(lq, max_stalled=0, next_round=True) == [job_id]
    assert "defa" not in lq.job(job_id)


def test_paused_queue_requeues_without_marker(lq: LuaQueue) -> None:
    lq.add_active("a")
    lq.r.delete(lq.keys.job("a") + ":lock")
    check(lq)
    lq.r.hset(lq.keys["meta"], "paused", "1")
    lq.r.delete(lq.keys["marker"])
    assert check(lq, next_round=True) == ["a"]
    assert lq.zset("marker") == []


def test_job_that_left_active_meanwhile_is_ignored(lq: LuaQueue) -> None:
    lq.add_active("a")
    check(lq)
    lq.finish("a")
    assert check(lq, next_round=True) == []
    assert lq.zset("completed")[0][0] == "a"


def test_legacy_zero_colon_ids_are_dropped_from_active(lq: LuaQueue) -> None:
    lq.r.lpush(lq.keys["active"], "0:1")
    check(lq)
    assert lq.members("stalled") == {"0:1"}
    assert check(lq, next_round=True) == []
    assert lq.lst("active") == []


def test_many_active_ids_are_marked_in_batches(lq: LuaQueue) -> None:
    ids = [f"j{i}" for i in range(7003)]
    lq.r.lpush(lq.keys["active"], *ids)
    check(lq)
    assert lq.r.scard(lq.keys["stalled"]) == 7003


def test_final_stall_emits_waiting_but_no_stalled_event(lq: LuaQueue) -> None:
    """Case B23 contract: ``stalled`` only for stalls after which the job runs again."""
    lq.add_active("a")
    lq.r.hset(lq.keys.job("a"), "stc", "2")
    lq.r.delete(lq.keys.job("a") + ":lock")
    check(lq, max_stalled=2)
    lq.clear_events()
    assert check(lq, max_stalled=2, next_round=True) == ["a"]
    assert lq.job("a")["defa"] == LIMIT_TEXT
    assert lq.events() == [("event", "waiting", "jobId", "a", "prev", "active")]


def test_a_stalled_id_whose_key_is_not_a_hash_is_failed_not_lost(lq: LuaQueue) -> None:
    """Trial finding: the check LREMed such an id from active, then HINCRBY raised WRONGTYPE,
    so the id was in no list at all and the other candidates of that pass (whose stalled set
    was already deleted) were recovered a pass late. Now it goes to failed with its reason and
    the rest of the pass goes on."""
    lq.add_active("a")
    lq.add_active("bad")
    lq.add_active("b")
    lq.r.delete(*(lq.keys.job(i) + ":lock" for i in ("a", "bad", "b")))
    check(lq)
    lq.r.delete(lq.keys.job("bad"))
    lq.r.set(lq.keys.job("bad"), "overwritten")
    lq.clear_events()

    assert check(lq, now=NOW + 40_000, next_round=True) == ["a", "b"]

    assert sorted(lq.lst("wait")) == ["a", "b"]
    assert lq.lst("active") == []
    assert lq.zset("failed") == [("bad", NOW + 40_000)]
    reason = f"job key {lq.keys.job('bad')} holds a string, not a job hash"
    assert ("event", "failed", "jobId", "bad", "failedReason", reason, "prev", "active") in (
        lq.events()
    )
    assert lq.r.get(lq.keys.job("bad")) == "overwritten"
