"""removeJob-2.lua: delete one unlocked job from whatever state holds it.

Return codes pinned: 1 removed; 0 locked by a worker; -1 missing job; -8 current iteration of a
job scheduler.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.lua.factories import seed_finished
from tests.lua.helpers import NOW, LuaQueue


def remove(lq: LuaQueue, job_id: str) -> int:
    return int(lq.run("removeJob", [lq.keys.job(job_id), lq.keys["repeat"]], [lq.prefix, job_id]))


def test_remove_waiting_job_deletes_every_key_and_emits_removed(lq: LuaQueue) -> None:
    lq.add()
    lq.r.rpush(lq.keys.job("1") + ":logs", "a line")
    lq.clear_events()

    assert remove(lq, "1") == 1

    assert lq.job_keys_exist("1") == 0
    assert lq.lst("wait") == []
    assert lq.events() == [("event", "removed", "jobId", "1", "prev", "wait")]


@pytest.mark.parametrize(
    ("state", "add_kwargs"),
    [
        ("delayed", {"delay": 1000}),
        ("prioritized", {"priority": 2}),
    ],
)
def test_remove_from_sorted_set_states(
    lq: LuaQueue, state: str, add_kwargs: dict[str, Any]
) -> None:
    lq.add(**add_kwargs)
    lq.clear_events()
    assert remove(lq, "1") == 1
    assert lq.zset(state) == []
    assert lq.events() == [("event", "removed", "jobId", "1", "prev", state)]


@pytest.mark.parametrize("state", ["completed", "failed"])
def test_remove_finished_job(lq: LuaQueue, state: str) -> None:
    (job_id,) = seed_finished(lq, state, [NOW])
    assert remove(lq, job_id) == 1
    assert lq.zset(state) == []
    assert lq.event_names() == ["removed"]
    assert lq.events()[0][-1] == state


def test_remove_unlocked_active_job(lq: LuaQueue) -> None:
    lq.add()
    lq.activate(token="0")
    assert remove(lq, "1") == 1
    assert lq.lst("active") == []
    assert lq.events()[-1] == ("event", "removed", "jobId", "1", "prev", "active")


def test_remove_job_in_no_state_reports_unknown(lq: LuaQueue) -> None:
    lq.r.hset(lq.keys.job("orphan"), mapping={"name": "x", "data": "{}", "opts": "{}"})
    assert remove(lq, "orphan") == 1
    assert lq.events() == [("event", "removed", "jobId", "orphan", "prev", "unknown")]


def test_remove_deletes_own_dedup_key_and_detaches_from_parent(lq: LuaQueue) -> None:
    parent_key = lq.keys.job("parent")
    lq.r.hset(parent_key, mapping={"name": "p", "data": "{}", "opts": "{}"})
    lq.add(
        job_id="child",
        parent_key=parent_key,
        parent=f'{{"id":"parent","queueKey":"{lq.keys.queue_key}"}}',
    )
    lq.r.hset(lq.keys.job("child"), "deid", "k")
    lq.r.set(lq.keys.de("k"), "child")
    lq.r.set(lq.keys.de("other"), "someone-else")

    assert remove(lq, "child") == 1

    assert lq.r.exists(lq.keys.de("k")) == 0
    assert lq.r.get(lq.keys.de("other")) == "someone-else"
    assert lq.r.smembers(parent_key + ":dependencies") == set()


def test_locked_job_returns_0_and_stays(lq: LuaQueue) -> None:
    lq.add_active()
    lq.clear_events()
    assert remove(lq, "1") == 0
    assert lq.lst("active") == ["1"]
    assert lq.job("1")["name"] == "job"
    assert lq.events() == []


def test_missing_job_returns_minus_1(lq: LuaQueue) -> None:
    assert remove(lq, "ghost") == -1
    assert lq.events() == []


def test_current_scheduler_iteration_returns_minus_8(lq: LuaQueue) -> None:
    job_id = f"repeat:sched:{NOW}"
    lq.add(job_id=job_id, delay=1000)
    lq.r.hset(lq.keys.job(job_id), "rjk", "sched")
    lq.r.zadd(lq.keys["repeat"], {"sched": NOW})
    assert remove(lq, job_id) == -8
    assert lq.zset("delayed")[0][0] == job_id

    lq.r.zadd(lq.keys["repeat"], {"sched": NOW + 1000})  # the schedule moved on: removable
    assert remove(lq, job_id) == 1


def test_a_job_key_that_is_not_a_hash_is_removed_not_an_error(lq: LuaQueue) -> None:
    lq.r.set(lq.keys.job("s"), "written by hand")
    lq.r.zadd(lq.keys["failed"], {"s": NOW})

    assert remove(lq, "s") == 1

    assert lq.job_keys_exist("s") == 0
    assert lq.zset("failed") == []
