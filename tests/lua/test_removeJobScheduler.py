"""removeJobScheduler-1.lua: delete a scheduler and its pending iteration.

Return codes pinned: 1 removed; 0 no such scheduler.
"""

from __future__ import annotations

from tests.lua.helpers import NOW, LuaQueue
from tests.lua.schedulers import remove, upsert


def test_remove_deletes_hash_zset_and_pending_iteration(lq: LuaQueue) -> None:
    upsert(lq, every=1000, start=NOW + 5000)
    lq.clear_events()
    assert remove(lq) == 1
    assert lq.exists("repeat", "repeat:s", "delayed") == 0
    assert lq.job_keys_exist(f"repeat:s:{NOW + 5000}") == 0
    assert lq.events() == [
        ("event", "removed", "jobId", f"repeat:s:{NOW + 5000}", "prev", "delayed")
    ]


def test_remove_leaves_a_started_iteration(lq: LuaQueue) -> None:
    upsert(lq, every=1000)
    lq.r.rpoplpush(lq.keys["wait"], lq.keys["active"])
    assert remove(lq) == 1
    assert lq.lst("active") == [f"repeat:s:{NOW}"] and lq.job(f"repeat:s:{NOW}")


def test_remove_unknown_answers_0(lq: LuaQueue) -> None:
    assert remove(lq, "nope") == 0
