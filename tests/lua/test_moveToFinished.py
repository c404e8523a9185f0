"""moveToFinished-13.lua: completed / failed, retention, fetch-next, every error code.

Return codes pinned: 0; {fields, jobId, 0, 0} (fetch-next); {0, 0, 0, dueMs}, {0, 0, ttl, 0} and
{0, 0, 0, 0} (fetch-next found nothing ready); -1 missing job; -2 missing lock; -3 not in active;
-4 pending children; -6 lock owned by another token; -9 failed children.
"""

from __future__ import annotations

import pytest

from tests.lua.factories import seed_finished
from tests.lua.helpers import NOW, TOKEN, LuaQueue, delayed_score, fields_of, opts_json

DONE = NOW + 1000


def test_completed_returns_0_and_writes_result_and_events(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.sadd(lq.keys["stalled"], "1")
    lq.clear_events()

    assert lq.finish("1", value='{"ok":"1"}', now=DONE) == 0

    job = lq.job("1")
    assert (job["returnvalue"], job["finishedOn"], job["atm"]) == ('{"ok":"1"}', str(DONE), "1")
    assert "failedReason" not in job
    assert lq.zset("completed") == [("1", DONE)]
    assert lq.lst("active") == []
    assert lq.lock("1") is None
    assert lq.members("stalled") == set()
    assert lq.events() == [
        ("event", "completed", "jobId", "1", "returnvalue", '{"ok":"1"}', "prev", "active"),
        ("event", "drained"),
    ]


def test_no_drained_while_jobs_remain(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add()
    lq.clear_events()
    assert lq.finish("1") == 0
    assert lq.event_names() == ["completed"]


def test_failed_with_stacktrace_clears_defa_and_exhausts_retries(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.hset(
        lq.keys.job("1"), mapping={"atm": "1", "defa": "job stalled more than allowable limit"}
    )
    lq.clear_events()

    result = lq.finish(
        "1", target="failed", value="boom", stacktrace='["Traceback: boom"]', attempts=2, now=DONE
    )

    assert result == 0
    job = lq.job("1")
    assert (job["failedReason"], job["stacktrace"], job["finishedOn"], job["atm"]) == (
        "boom",
        '["Traceback: boom"]',
        str(DONE),
        "2",
    )
    assert "defa" not in job and "returnvalue" not in job
    assert lq.zset("failed") == [("1", DONE)]
    assert lq.events() == [
        ("event", "failed", "jobId", "1", "failedReason", "boom", "prev", "active"),
        ("event", "retries-exhausted", "jobId", "1", "attemptsMade", "2"),
        ("event", "drained"),
    ]


def test_failed_before_last_attempt_has_no_retries_exhausted(lq: LuaQueue) -> None:
    lq.add_active()
    lq.clear_events()
    assert lq.finish("1", target="failed", value="unrecoverable", attempts=3) == 0
    assert lq.event_names() == ["failed", "drained"]


def test_keep_count_0_removes_the_job(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.rpush(lq.keys.job("1") + ":logs", "line")
    assert lq.finish("1", keep_count=0) == 0
    assert lq.job_keys_exist("1") == 0
    assert lq.zset("completed") == []
    assert lq.event_names()[-2:] == ["completed", "drained"]


def test_keep_count_n_keeps_the_newest(lq: LuaQueue) -> None:
    old = seed_finished(lq, "completed", [NOW - 3, NOW - 2, NOW - 1])
    lq.add_active()
    assert lq.finish("1", keep_count=2, now=DONE) == 0
    assert [m for m, _ in lq.zset("completed")] == [old[2], "1"]
    assert lq.job_keys_exist(old[0]) == 0 and lq.job_keys_exist(old[1]) == 0


def test_keep_age_removes_older_jobs_up_to_limit(lq: LuaQueue) -> None:
    old = seed_finished(lq, "failed", [DONE - 90_000, DONE - 80_000, DONE - 70_000, DONE - 10_000])
    lq.add_active()
    assert lq.finish("1", target="failed", value="x", keep_age=60, keep_limit=2, now=DONE) == 0
    # two of the three older than 60 s go per call (limit 2), the young one stays
    assert [m for m, _ in lq.zset("failed")] == [old[2], old[3], "1"]


def test_keep_age_respects_each_jobs_own_retention(lq: LuaQueue) -> None:
    old = seed_finished(
        lq,
        "completed",
        [DONE - 90_000] * 4,
        opts=[
            opts_json(),
            opts_json(removeOnComplete=False),
            opts_json(removeOnComplete={"age": 3600}),
            opts_json(removeOnComplete=True),
        ],
    )
    lq.add_active()
    assert lq.finish("1", keep_age=60, now=DONE) == 0
    # default age removes f0; f1 keeps all (false); f2 keeps an hour; f3 is `true` (remove)
    assert sorted(m for m, _ in lq.zset("completed")) == ["1", old[1], old[2]]


def test_fetch_next_returns_the_next_job_tuple(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add(name="second")
    lq.clear_events()

    reply = lq.finish("1", fetch_next=True, now=DONE, worker_name="w1")

    assert reply[1:] == ["2", 0, 0]
    fields = fields_of(reply[0])
    assert (fields["name"], fields["processedOn"], fields["ats"], fields["pb"]) == (
        "second",
        str(DONE),
        "1",
        "w1",
    )
    assert lq.lock("2") == TOKEN  # same token as the finished job
    assert lq.lst("active") == ["2"]
    assert lq.events() == [
        ("event", "completed", "jobId", "1", "returnvalue", '"ok"', "prev", "active"),
        ("event", "active", "jobId", "2", "prev", "waiting"),
    ]


def test_fetch_next_reports_next_delayed_due_time(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add(delay=60_000)
    assert lq.finish("1", fetch_next=True, now=DONE) == [0, 0, 0, NOW + 60_000]
    assert "drained" not in lq.event_names()


def test_fetch_next_promotes_due_delayed_job(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add(delay=500)
    reply = lq.finish("1", fetch_next=True, now=DONE)
    assert reply[1] == "2"
    assert lq.zset("delayed") == []


def test_fetch_next_reports_rate_limit_ttl(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add()
    lq.r.set(lq.keys["limiter"], 5, px=4000)
    reply = lq.finish("1", fetch_next=True, limiter_max=5, limiter_duration=4000)
    assert reply[0:2] == [0, 0] and 3000 < reply[2] <= 4000 and reply[3] == 0
    assert lq.lst("wait") == ["2"]


def test_fetch_next_on_paused_queue_returns_all_zeros_without_drained(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.hset(lq.keys["meta"], "paused", "1")
    lq.clear_events()
    assert lq.finish("1", fetch_next=True) == [0, 0, 0, 0]
    assert lq.event_names() == ["completed"]


def test_fetch_next_at_global_concurrency_returns_all_zeros(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add()
    lq.r.lpush(lq.keys["active"], "other")
    lq.r.hset(lq.keys["meta"], "concurrency", "1")
    assert lq.finish("1", fetch_next=True) == [0, 0, 0, 0]
    assert lq.lst("wait") == ["2"]


def test_fetch_next_on_empty_queue_returns_0_and_drained(lq: LuaQueue) -> None:
    lq.add_active()
    lq.clear_events()
    assert lq.finish("1", fetch_next=True) == 0
    assert lq.event_names() == ["completed", "drained"]


def test_events_are_trimmed_to_max_len(lq: LuaQueue) -> None:
    lq.r.hset(lq.keys["meta"], "opts.maxLenEvents", "10")
    lq.add_active()
    for i in range(500):
        lq.r.xadd(lq.keys["events"], {"event": "filler", "n": str(i)})
    lq.finish("1")
    assert lq.r.xlen(lq.keys["events"]) < 200  # XTRIM MAXLEN ~ 10 (approximate, per node)


def test_missing_job_returns_minus_1(lq: LuaQueue) -> None:
    assert lq.finish("nope") == -1
    assert lq.zset("completed") == []


def test_missing_lock_returns_minus_2(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.delete(lq.keys.job("1") + ":lock")
    assert lq.finish("1") == -2
    assert lq.lst("active") == ["1"]
    assert "atm" not in lq.job("1")


def test_not_in_active_returns_minus_3(lq: LuaQueue) -> None:
    lq.add()
    assert lq.finish("1", token="0") == -3
    assert lq.lst("wait") == ["1"]
    assert lq.zset("completed") == []


def test_pending_children_return_minus_4(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.sadd(lq.keys.job("1") + ":dependencies", lq.keys.job("child"))
    assert lq.finish("1") == -4
    assert lq.lock("1") == TOKEN
    # failing is still allowed
    assert lq.finish("1", target="failed", value="x") == 0


def test_lock_owned_by_another_token_returns_minus_6(lq: LuaQueue) -> None:
    lq.add_active()
    assert lq.finish("1", token="worker-b:9") == -6
    assert lq.lock("1") == TOKEN
    assert lq.lst("active") == ["1"]


def test_failed_children_return_minus_9(lq: LuaQueue) -> None:
    lq.add_active()
    lq.r.zadd(lq.keys.job("1") + ":unsuccessful", {lq.keys.job("child"): NOW})
    assert lq.finish("1") == -9
    assert lq.lst("active") == ["1"]


@pytest.mark.parametrize("target", ["completed", "failed"])
def test_token_0_skips_the_lock_check(lq: LuaQueue, target: str) -> None:
    lq.add()
    lq.activate(token="0")
    assert lq.finish("1", target=target, value="v", token="0") == 0
    assert lq.zset(target) == [("1", NOW + 1000)]


def test_delayed_score_helper_matches_reference_example() -> None:
    assert delayed_score(1795994518436) == 7356393547513856


def test_two_attempts_with_fixed_backoff_event_sequence(lq: LuaQueue) -> None:
    """Protocol §5.4's observed run: attempts 2, backoff fixed 200, failing twice."""
    lq.add_active(opts=opts_json(attempts=2, backoff={"type": "fixed", "delay": 200}))
    lq.clear_events()
    trace = '["Error: no"]'

    assert (
        lq.run(
            "moveToDelayed",
            lq.fetch_keys(),
            [lq.prefix, "1", NOW + 10, 200, TOKEN, "0", "no", trace],
        )
        == 0
    )
    assert lq.activate(token="t2", now=NOW + 210)[1] == "1"
    assert (
        lq.finish(
            "1",
            target="failed",
            value="no",
            token="t2",
            attempts=2,
            stacktrace=trace,
            now=NOW + 220,
        )
        == 0
    )

    assert lq.events() == [
        ("event", "delayed", "jobId", "1", "delay", str(NOW + 210)),
        ("event", "waiting", "jobId", "1", "prev", "delayed"),
        ("event", "active", "jobId", "1", "prev", "waiting"),
        ("event", "failed", "jobId", "1", "failedReason", "no", "prev", "active"),
        ("event", "retries-exhausted", "jobId", "1", "attemptsMade", "2"),
        ("event", "drained"),
    ]
    job = lq.job("1")
    assert (job["atm"], job["ats"], job["delay"], job["finishedOn"]) == (
        "2",
        "2",
        "0",
        str(NOW + 220),
    )
    assert lq.zset("failed") == [("1", NOW + 220)]


@pytest.mark.parametrize("target", ["completed", "failed"])
def test_finalization_releases_a_simple_dedup_key(lq: LuaQueue, target: str) -> None:
    """A job that a BullMQ producer added with deduplication (§5.14) frees its id when it ends."""
    lq.add_active()
    lq.r.hset(lq.keys.job("1"), "deid", "order-7")
    lq.r.set(lq.keys.de("order-7"), "1")
    assert lq.finish("1", target=target, value="v") == 0
    assert lq.r.exists(lq.keys.de("order-7")) == 0
    assert lq.job("1")["deid"] == "order-7"  # the kept job still says what it was


def test_finalization_keeps_ttl_dedup_keys_and_foreign_owners(lq: LuaQueue) -> None:
    lq.add_active()
    lq.add_active()
    lq.r.hset(lq.keys.job("1"), "deid", "throttled")
    lq.r.set(lq.keys.de("throttled"), "1", px=60_000)
    lq.r.hset(lq.keys.job("2"), "deid", "taken")
    lq.r.set(lq.keys.de("taken"), "99")

    assert lq.finish("1") == 0
    assert lq.finish("2") == 0

    assert lq.r.get(lq.keys.de("throttled")) == "1"  # throttle mode: expires by itself
    assert lq.r.get(lq.keys.de("taken")) == "99"


def test_removal_on_finish_keeps_a_ttl_dedup_key(lq: LuaQueue) -> None:
    """removeOnComplete deletes the hash, not the throttle: it lives out its ttl (BullMQ)."""
    lq.add_active()
    lq.r.hset(lq.keys.job("1"), "deid", "k")
    lq.r.set(lq.keys.de("k"), "1", px=60_000)
    assert lq.finish("1", keep_count=0) == 0
    assert lq.job_keys_exist("1") == 0
    assert lq.r.get(lq.keys.de("k")) == "1" and lq.r.pttl(lq.keys.de("k")) > 0


def test_a_job_key_written_over_while_it_ran_is_failed_not_lost(lq: LuaQueue) -> None:
    """Trial finding: the finish took the job out of active, then its HMGET raised WRONGTYPE:
    the job was in no state at all."""
    job_id = lq.add_active()
    lq.r.delete(lq.keys.job(job_id))
    lq.r.set(lq.keys.job(job_id), "written by hand")
    lq.clear_events()

    assert lq.finish(job_id) == -1

    assert lq.lst("active") == [] and lq.zset("completed") == []
    assert lq.zset("failed") == [(job_id, float(NOW + 1000))]
    assert lq.lock(job_id) is None
    reason = f"job key {lq.keys.job(job_id)} holds a string, not a job hash"
    assert lq.events() == [
        ("event", "failed", "jobId", job_id, "failedReason", reason, "prev", "active")
    ]
