"""Deduplication inside addJob-10.lua and the keep-last requeue of moveToFinished-13.lua (§5.14).

Return values pinned: the new job's id (key free, stale key recovered, replace of a delayed owner);
the owner's id when an add is absorbed (simple, throttle, extend, replace of a non-delayed owner,
keep-last parking). Events: ``deduplicated`` (jobId, deduplicationId, deduplicatedJobId),
``removed prev delayed`` on replace.
"""

from __future__ import annotations

import json
from typing import Any

from tests.lua.helpers import NOW, LuaQueue, delayed_score


def de_opts(**de: Any) -> str:
    return json.dumps({"attempts": 0, "de": de}, separators=(",", ":"))


def dedup_events(lq: LuaQueue) -> list[tuple[str, ...]]:
    return [e for e in lq.events() if e[1] in ("deduplicated", "removed")]


def test_simple_mode_absorbs_adds_until_the_owner_finishes(lq: LuaQueue) -> None:
    assert lq.add(opts=de_opts(id="k"), data='{"v":1}') == "1"
    assert lq.r.get(lq.keys.de("k")) == "1"
    assert lq.r.pttl(lq.keys.de("k")) == -1
    assert lq.job("1")["deid"] == "k"
    lq.clear_events()

    assert lq.add(opts=de_opts(id="k"), data='{"v":2}') == "1"

    assert lq.events() == [
        ("event", "deduplicated", "jobId", "1", "deduplicationId", "k", "deduplicatedJobId", "2")
    ]
    assert lq.r.exists(lq.keys.job("2")) == 0
    assert lq.lst("wait") == ["1"]
    assert lq.r.get(lq.keys["id"]) == "2"  # the counter moves once per add attempt

    assert lq.activate()[1] == "1"
    assert lq.finish("1") == 0
    assert lq.r.exists(lq.keys.de("k")) == 0
    assert lq.add(opts=de_opts(id="k")) == "3"


def test_throttle_mode_keeps_the_key_for_its_ttl_even_after_the_owner_ends(lq: LuaQueue) -> None:
    assert lq.add(opts=de_opts(id="t", ttl=5000)) == "1"
    assert 4000 < lq.r.pttl(lq.keys.de("t")) <= 5000
    lq.activate()
    lq.finish("1")
    assert lq.add(opts=de_opts(id="t", ttl=5000)) == "1"
    assert lq.r.exists(lq.keys.job("2")) == 0
    lq.r.delete(lq.keys.de("t"))  # as if the TTL expired
    assert lq.add(opts=de_opts(id="t", ttl=5000)) == "3"


def test_extend_renews_the_ttl_on_each_absorbed_add(lq: LuaQueue) -> None:
    lq.add(opts=de_opts(id="e", ttl=5000, extend=True))
    lq.r.pexpire(lq.keys.de("e"), 100)
    assert lq.add(opts=de_opts(id="e", ttl=5000, extend=True)) == "1"
    assert lq.r.get(lq.keys.de("e")) == "1"
    assert 4000 < lq.r.pttl(lq.keys.de("e")) <= 5000
    assert lq.event_names()[-1] == "deduplicated"


def test_replace_swaps_a_delayed_owner_for_the_new_job(lq: LuaQueue) -> None:
    assert lq.add(opts=de_opts(id="r", ttl=5000, replace=True), delay=1000, data='{"v":1}') == "1"
    lq.r.pexpire(lq.keys.de("r"), 3000)
    lq.clear_events()

    assert lq.add(opts=de_opts(id="r", ttl=5000, replace=True), delay=1000, data='{"v":2}') == "2"

    assert lq.r.exists(lq.keys.job("1")) == 0
    assert lq.zset("delayed") == [("2", delayed_score(NOW + 1000))]
    assert lq.job("2")["deid"] == "r"
    assert lq.r.get(lq.keys.de("r")) == "2"
    assert 2000 < lq.r.pttl(lq.keys.de("r")) <= 3000  # remaining TTL kept (no extend)
    assert dedup_events(lq) == [
        ("event", "removed", "jobId", "1", "prev", "delayed"),
        ("event", "deduplicated", "jobId", "2", "deduplicationId", "r", "deduplicatedJobId", "1"),
    ]


def test_replace_with_extend_restarts_the_ttl(lq: LuaQueue) -> None:
    lq.add(opts=de_opts(id="r", ttl=5000, replace=True, extend=True), delay=1000)
    lq.r.pexpire(lq.keys.de("r"), 100)
    assert lq.add(opts=de_opts(id="r", ttl=5000, replace=True, extend=True), delay=1000) == "2"
    assert 4000 < lq.r.pttl(lq.keys.de("r")) <= 5000


def test_replace_cannot_touch_an_owner_that_is_no_longer_delayed(lq: LuaQueue) -> None:
    lq.add(opts=de_opts(id="r", ttl=5000, replace=True))  # waiting, not delayed
    lq.clear_events()
    assert lq.add(opts=de_opts(id="r", ttl=5000, replace=True), delay=1000) == "1"
    assert lq.events() == []  # absorbed without an event, as BullMQ
    assert lq.lst("wait") == ["1"]
    assert lq.zset("delayed") == []


def test_keep_last_if_active_parks_the_last_add_and_creates_it_at_finish(lq: LuaQueue) -> None:
    lq.add_active(opts=de_opts(id="k", keepLastIfActive=True), name="a")
    lq.r.expire(lq.keys.de("k"), 60)  # a key with a TTL is made persistent while parked
    assert lq.add(opts=de_opts(id="k", keepLastIfActive=True), name="b", data='{"v":2}') == "1"
    assert lq.add(opts=de_opts(id="k", keepLastIfActive=True), name="c", data='{"v":3}') == "1"

    parked = lq.r.hgetall(lq.keys["dn:k"])
    assert (parked["name"], parked["data"], parked["jid"]) == ("c", '{"v":3}', "3")
    assert lq.r.pttl(lq.keys.de("k")) == -1
    assert lq.event_names()[-2:] == ["deduplicated", "deduplicated"]
    assert lq.lst("wait") == []
    lq.clear_events()

    assert lq.finish("1") == 0

    assert lq.r.exists(lq.keys["dn:k"]) == 0
    assert lq.r.get(lq.keys.de("k")) == "3"
    assert lq.lst("wait") == ["3"]
    job = lq.job("3")
    assert (job["name"], job["data"], job["deid"]) == ("c", '{"v":3}', "k")
    assert lq.event_names()[:3] == ["added", "waiting", "completed"]


def test_keep_last_if_active_waiting_owner_absorbs_like_simple_mode(lq: LuaQueue) -> None:
    lq.add(opts=de_opts(id="k", keepLastIfActive=True))
    assert lq.add(opts=de_opts(id="k", keepLastIfActive=True)) == "1"
    assert lq.r.exists(lq.keys["dn:k"]) == 0
    assert lq.event_names()[-1] == "deduplicated"


def test_keep_last_parked_delayed_job_is_requeued_as_delayed(lq: LuaQueue) -> None:
    lq.add_active(opts=de_opts(id="k", keepLastIfActive=True))
    lq.add(opts=json.dumps({"de": {"id": "k", "keepLastIfActive": True}, "delay": 500}), delay=500)
    assert lq.finish("1", now=NOW + 1000) == 0
    assert lq.zset("delayed") == [("2", delayed_score(NOW + 1500))]
    assert lq.job("2")["delay"] == "500"


def test_stale_key_whose_job_is_gone_is_taken_over(lq: LuaQueue) -> None:
    """Case B19 at the script level: a key without TTL never outlives its job."""
    lq.add(opts=de_opts(id="a@x"))
    lq.r.delete(lq.keys.job("1"))
    lq.r.hset(lq.keys["dn:a@x"], mapping={"name": "old", "data": "{}", "opts": "{}"})
    lq.clear_events()

    assert lq.add(opts=de_opts(id="a@x")) == "2"

    assert lq.r.get(lq.keys.de("a@x")) == "2"
    assert lq.r.exists(lq.keys["dn:a@x"]) == 0
    assert "deduplicated" not in lq.event_names()


def test_a_ttl_key_whose_job_is_gone_still_throttles(lq: LuaQueue) -> None:
    lq.add(opts=de_opts(id="t", ttl=5000))
    lq.r.delete(lq.keys.job("1"))
    assert lq.add(opts=de_opts(id="t", ttl=5000)) == "1"


def test_remove_of_the_owner_frees_the_id_and_the_parked_job(lq: LuaQueue) -> None:
    lq.add(opts=de_opts(id="k"))
    lq.r.hset(lq.keys["dn:k"], mapping={"name": "x", "data": "{}", "opts": "{}"})
    assert lq.run("removeJob", [lq.keys.job("1"), lq.keys["repeat"]], [lq.prefix, "1"]) == 1
    assert lq.r.exists(lq.keys.de("k"), lq.keys["dn:k"]) == 0


def test_adds_without_deduplication_do_not_decode_opts(lq: LuaQueue) -> None:
    # opts that are not JSON would make cjson fail: the fast path never decodes them
    assert lq.add(opts="not json") == "1"


def test_reschedule_moves_a_delayed_owner_to_the_new_due_time(lq: LuaQueue) -> None:
    lq.add(opts=de_opts(id="s", reschedule=True), delay=1000)
    lq.clear_events()
    assert lq.add(opts=de_opts(id="s", reschedule=True), delay=5000, timestamp=NOW + 200) == "1"
    assert lq.zset("delayed") == [("1", delayed_score(NOW + 5200))]
    assert lq.job("1")["delay"] == "5000"
    assert lq.zset("marker") == [("1", NOW + 5200)]
    assert lq.events() == [
        ("event", "deduplicated", "jobId", "1", "deduplicationId", "s", "deduplicatedJobId", "2"),
        ("event", "delayed", "jobId", "1", "delay", str(NOW + 5200)),
    ]


def test_reschedule_leaves_an_owner_that_is_not_delayed(lq: LuaQueue) -> None:
    lq.add(opts=de_opts(id="s", reschedule=True))
    assert lq.add(opts=de_opts(id="s", reschedule=True), delay=5000) == "1"
    assert lq.lst("wait") == ["1"] and lq.zset("delayed") == []


# --- a throttle key outlives its owner's hash (issue 12 item 4) -------------------------------


def _finished_throttle_owner(lq: LuaQueue, target: str = "completed", **finish: Any) -> None:
    """Job 1 owns `de:t` (ttl 60 s) and ends in ``target``; ``finish`` goes to moveToFinished."""
    assert lq.add(opts=de_opts(id="t", ttl=60_000)) == "1"
    lq.activate()
    assert lq.finish("1", target=target, **finish) == 0


def _absorbed_by_the_throttle(lq: LuaQueue) -> None:
    assert lq.r.get(lq.keys.de("t")) == "1"
    assert 50_000 < lq.r.pttl(lq.keys.de("t")) <= 60_000
    before = lq.r.get(lq.keys["id"])
    assert lq.add(opts=de_opts(id="t", ttl=60_000)) == "1"
    new_id = str(int(str(before)) + 1)
    assert lq.r.exists(lq.keys.job(new_id)) == 0 and lq.lst("wait") == []


def test_throttle_key_survives_remove_on_complete(lq: LuaQueue) -> None:
    _finished_throttle_owner(lq, keep_count=0)
    assert lq.job_keys_exist("1") == 0
    _absorbed_by_the_throttle(lq)


def test_throttle_key_survives_remove_on_fail(lq: LuaQueue) -> None:
    _finished_throttle_owner(lq, target="failed", value="boom", keep_count=0)
    assert lq.job_keys_exist("1") == 0
    _absorbed_by_the_throttle(lq)


def test_throttle_key_survives_trimming_by_count(lq: LuaQueue) -> None:
    _finished_throttle_owner(lq)
    assert lq.add() == "2"
    lq.activate()
    assert lq.finish("2", keep_count=1, now=NOW + 2000) == 0  # trims job 1 away
    assert [m for m, _ in lq.zset("completed")] == ["2"] and lq.job_keys_exist("1") == 0
    _absorbed_by_the_throttle(lq)


def test_throttle_key_survives_the_retention_sweep(lq: LuaQueue) -> None:
    _finished_throttle_owner(lq)
    removed = lq.run(
        "cleanFinished",
        [lq.keys["completed"], lq.keys["events"]],
        [lq.prefix, NOW + 10_000, 0, 0, 100, "removeOnComplete"],
    )
    assert removed == 1 and lq.job_keys_exist("1") == 0
    _absorbed_by_the_throttle(lq)


def test_throttle_key_survives_clean_of_finished_jobs(lq: LuaQueue) -> None:
    _finished_throttle_owner(lq)
    assert lq.run(
        "cleanJobsInSet",
        [lq.keys["completed"], lq.keys["events"], lq.keys["meta"]],
        [lq.prefix, NOW + 10_000, 0, "completed"],
    ) == ["1"]
    _absorbed_by_the_throttle(lq)


def test_clean_of_a_waiting_throttle_owner_frees_the_id(lq: LuaQueue) -> None:
    """A job removed before it ran takes its key along (BullMQ's cleanList / removeJob)."""
    assert lq.add(opts=de_opts(id="t", ttl=60_000)) == "1"
    assert lq.run(
        "cleanJobsInSet",
        [lq.keys["wait"], lq.keys["events"], lq.keys["meta"]],
        [lq.prefix, NOW + 10_000, 0, "wait"],
    ) == ["1"]
    assert lq.r.exists(lq.keys.de("t")) == 0


def test_explicit_remove_of_a_finished_throttle_owner_frees_the_id(lq: LuaQueue) -> None:
    """BullMQ's removeJob deletes a `de:` key still naming the job, TTL or not."""
    _finished_throttle_owner(lq)
    assert lq.run("removeJob", [lq.keys.job("1"), lq.keys["repeat"]], [lq.prefix, "1", "1"]) == 1
    assert lq.r.exists(lq.keys.de("t")) == 0
    assert lq.add(opts=de_opts(id="t", ttl=60_000)) == "2"


def test_simple_key_is_released_at_finish_also_with_remove_on_complete(lq: LuaQueue) -> None:
    assert lq.add(opts=de_opts(id="k")) == "1"
    lq.activate()
    assert lq.finish("1", keep_count=0) == 0
    assert lq.r.exists(lq.keys.de("k")) == 0
    assert lq.add(opts=de_opts(id="k")) == "2"
