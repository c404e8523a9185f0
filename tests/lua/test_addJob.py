"""addJob-10.lua: standard FIFO/LIFO, prioritized, delayed, custom and duplicate ids, -5.

Return codes pinned: the new job id; the existing id for a duplicate custom id (+ `duplicated`);
-5 for a missing parent.
"""

from __future__ import annotations

from tests.lua.factories import NewJobFactory
from tests.lua.helpers import NOW, LuaQueue, delayed_score, prioritized_score


def test_standard_add_returns_counter_id_and_writes_exact_hash(lq: LuaQueue) -> None:
    job_id = lq.add(name="app.tasks.ping", data='{"a":1}', opts='{"attempts":0}')

    assert job_id == "1"
    assert lq.r.get(lq.keys["id"]) == "1"
    assert lq.job("1") == {
        "name": "app.tasks.ping",
        "data": '{"a":1}',
        "opts": '{"attempts":0}',
        "timestamp": str(NOW),
        "delay": "0",
        "priority": "0",
    }
    assert lq.lst("wait") == ["1"]
    assert lq.zset("marker") == [("0", 0)]
    assert lq.events() == [
        ("event", "added", "jobId", "1", "name", "app.tasks.ping"),
        ("event", "waiting", "jobId", "1"),
    ]
    assert lq.r.hgetall(lq.keys["meta"]) == {"opts.maxLenEvents": "10000"}


def test_existing_max_len_events_is_kept(lq: LuaQueue) -> None:
    lq.r.hset(lq.keys["meta"], "opts.maxLenEvents", "50")
    lq.add()
    assert lq.r.hget(lq.keys["meta"], "opts.maxLenEvents") == "50"


def test_fifo_pushes_left_and_lifo_pushes_right(lq: LuaQueue) -> None:
    first, second = NewJobFactory.build_batch(2)
    assert first.add_to(lq) == "1"
    assert second.add_to(lq) == "2"
    assert lq.lst("wait") == ["2", "1"]  # right end runs next: 1 then 2

    lifo = NewJobFactory.build(lifo=True)
    assert lifo.add_to(lq) == "3"
    assert lq.lst("wait") == ["2", "1", "3"]  # 3 runs next
    assert '"lifo":true' in lq.job("3")["opts"]


def test_prioritized_scores_use_the_pc_counter(lq: LuaQueue) -> None:
    for job in NewJobFactory.build_batch(2, priority=5):
        job.add_to(lq)
    NewJobFactory.build(priority=1).add_to(lq)

    assert lq.zset("prioritized") == [
        ("3", prioritized_score(1, 3)),
        ("1", prioritized_score(5, 1)),  # 21474836481, the reference's example
        ("2", prioritized_score(5, 2)),
    ]
    assert prioritized_score(5, 1) == 21474836481
    assert lq.r.get(lq.keys["pc"]) == "3"
    assert lq.lst("wait") == []
    assert lq.job("1")["priority"] == "5"
    assert lq.zset("marker") == [("0", 0)]
    assert lq.event_names() == ["added", "waiting"] * 3


def test_delayed_score_sequence_event_and_marker(lq: LuaQueue) -> None:
    due = NOW + 5000
    assert lq.add(delay=5000) == "1"
    assert lq.add(delay=5000) == "2"  # same due ms: sequence + 1
    assert lq.add(delay=1000) == "3"

    assert lq.zset("delayed") == [
        ("3", delayed_score(NOW + 1000)),
        ("1", delayed_score(due)),
        ("2", delayed_score(due, 1)),
    ]
    assert lq.job("1")["delay"] == "5000"
    assert lq.zset("marker") == [("1", NOW + 1000)]  # due ms of the earliest, not × 4096
    assert lq.events()[:2] == [
        ("event", "added", "jobId", "1", "name", "job"),
        ("event", "delayed", "jobId", "1", "delay", str(due)),
    ]
    assert lq.lst("wait") == []


def test_delayed_sequence_saturates_at_4095(lq: LuaQueue) -> None:
    due = NOW + 10
    lq.r.zadd(lq.keys["delayed"], {"other": delayed_score(due, 4095)})
    lq.add(delay=10)
    assert lq.r.zscore(lq.keys["delayed"], "1") == delayed_score(due, 4095)


def test_delay_wins_over_priority(lq: LuaQueue) -> None:
    lq.add(delay=100, priority=3)
    assert lq.zset("delayed") == [("1", delayed_score(NOW + 100))]
    assert lq.zset("prioritized") == []
    assert lq.job("1")["priority"] == "3"


def test_paused_queue_gets_no_base_marker_but_delay_marker(lq: LuaQueue) -> None:
    lq.r.hset(lq.keys["meta"], "paused", "1")
    lq.add()
    lq.add(priority=2)
    assert lq.zset("marker") == []
    assert lq.lst("wait") == ["1"]  # v6: stays in wait, the legacy paused list is never written
    assert lq.exists("paused") == 0
    lq.add(delay=50)
    assert lq.zset("marker") == [("1", NOW + 50)]


def test_maxed_queue_gets_no_base_marker(lq: LuaQueue) -> None:
    lq.r.hset(lq.keys["meta"], "concurrency", "1")
    lq.r.lpush(lq.keys["active"], "busy")
    lq.add()
    assert lq.zset("marker") == []
    lq.r.hset(lq.keys["meta"], "concurrency", "2")
    lq.add()
    assert lq.zset("marker") == [("0", 0)]


def test_custom_id_and_duplicate_emits_duplicated(lq: LuaQueue) -> None:
    assert lq.add(job_id="custom-1", data='{"v":1}') == "custom-1"
    lq.clear_events()

    assert lq.add(job_id="custom-1", data='{"v":2}') == "custom-1"

    assert lq.job("custom-1")["data"] == '{"v":1}'  # the existing job is not changed
    assert lq.lst("wait") == ["custom-1"]
    assert lq.events() == [("event", "duplicated", "jobId", "custom-1")]
    assert lq.r.get(lq.keys["id"]) == "2"  # INCR on every add attempt, duplicates included
    assert lq.add() == "3"


def test_missing_parent_returns_minus_5_and_writes_nothing(lq: LuaQueue) -> None:
    parent_key = lq.keys.job("no-such-parent")
    result = lq.add(parent_key=parent_key, parent='{"id":"no-such-parent","queueKey":"x"}')

    assert result == -5
    assert lq.r.keys(lq.prefix + "*") == []


def test_existing_parent_links_child(lq: LuaQueue) -> None:
    parent_key = lq.keys.job("parent")
    lq.r.hset(parent_key, mapping={"name": "p", "data": "{}", "opts": "{}", "timestamp": NOW})
    parent_json = f'{{"id":"parent","queueKey":"{lq.keys.queue_key}"}}'

    assert lq.add(parent_key=parent_key, parent=parent_json) == "1"

    job = lq.job("1")
    assert (job["parentKey"], job["parent"]) == (parent_key, parent_json)
    assert lq.r.smembers(parent_key + ":dependencies") == {lq.keys.job("1")}


def test_priority_counter_wraps_mod_2_32_and_max_score_is_2_53_minus_1(lq: LuaQueue) -> None:
    lq.r.set(lq.keys["pc"], 2**32 - 2)
    lq.add(priority=2**21 - 1)  # counter 2^32 - 1
    lq.add(priority=1)  # counter 2^32 -> 0
    assert lq.zset("prioritized") == [("2", 1 * 2**32), ("1", 2**53 - 1)]
    assert lq.r.zscore(lq.keys["prioritized"], "1") == prioritized_score(2**21 - 1, 2**32 - 1)
