"""obliterate-2.lua: answers 0 done, a cursor to call again with, -1 not paused, -2 active jobs
without force; every key of the queue goes; cross-queue parents are released as by removeJob."""

from __future__ import annotations

import json
from typing import Any

import redis

from django_bullq.core.calls import queue_builders
from django_bullq.core.keys import QueueKeys
from tests.lua.helpers import NOW, LuaQueue


def call(lq: LuaQueue, count: int, *, force: bool = False, cursor: str = "0") -> Any:
    step = queue_builders.obliterate(lq.keys, count=count, force=force, cursor=cursor)
    return lq.run(step.script, step.keys, step.args)


def obliterate(lq: LuaQueue, count: int, *, force: bool = False) -> list[Any]:
    """Call until done; the answers, in order."""
    answers = [call(lq, count, force=force)]
    while answers[-1] != 0:
        assert isinstance(answers[-1], str), answers
        answers.append(call(lq, count, force=force, cursor=answers[-1]))
    return answers


def keys_of(lq: LuaQueue) -> list[str]:
    return sorted(lq.r.scan_iter(match=lq.prefix + "*"))


def test_refusals(lq: LuaQueue) -> None:
    lq.add_active()
    assert call(lq, 10) == -1
    lq.r.hset(lq.keys["meta"], "paused", "1")
    assert call(lq, 10) == -2
    assert lq.lst("active") == ["1"] and lq.job("1")


def test_batches_then_every_key_of_the_queue(lq: LuaQueue) -> None:
    lq.add_active()
    for _ in range(3):
        lq.add()
    lq.add(delay=60_000)
    lq.add(priority=1)
    lq.r.zadd(lq.keys["repeat"], {"s": 1})
    lq.r.hset(lq.keys["repeat"] + ":s", "every", "1000")
    lq.r.hset(lq.keys.job("wc"), mapping={"name": "p", "data": "{}"})
    lq.r.zadd(lq.keys["waiting-children"], {"wc": 1})
    lq.r.hset(lq.keys["metrics:completed"], "count", "3")
    lq.r.hset(lq.keys["meta"], "paused", "1")

    answers = obliterate(lq, 2, force=True)
    # 8 items (6 jobs, 1 scheduler, 1 waiting parent), 2 per call; then the key sweep, 20
    # keys of the server's keyspace looked at per call (other tests' keys too), ending with 0
    assert answers[:4] == ["0", "0", "0", "0"] and answers[-1] == 0
    assert lq.lock("1") is None
    assert keys_of(lq) == []  # waiting-children and its parents go too (BullMQ keeps them)


def test_keys_no_state_points_at_go_too(lq: LuaQueue) -> None:
    """limiter, a throttle `de:` whose job is gone, `dn:`, orphaned job keys (as Node leaves)."""
    neighbour = LuaQueue(lq.r, QueueKeys(lq.keys.name + "x"))  # a name that extends ours
    neighbour.add()
    lq.add(opts=json.dumps({"de": {"id": "t", "ttl": 60_000}}))
    lq.r.delete(lq.keys.job("1"))
    lq.r.lrem(lq.keys["wait"], 0, "1")
    lq.r.set(lq.keys["limiter"], 3, px=60_000)
    lq.r.hset(lq.keys["dn:k"], mapping={"name": "x", "data": "{}", "opts": "{}"})
    lq.r.rpush(lq.keys.job("gone") + ":logs", "a line")
    lq.r.hset(lq.keys["meta"], "paused", "1")
    assert lq.keys["limiter"] in keys_of(lq) and lq.keys.de("t") in keys_of(lq)

    assert obliterate(lq, 1000)[-1] == 0
    assert keys_of(lq) == []
    assert neighbour.lst("wait") == ["1"] and neighbour.job("1")


def test_sweep_pages_through_a_large_keyspace(lq: LuaQueue) -> None:
    pipe = lq.r.pipeline(transaction=False)
    for i in range(3000):
        pipe.set(f"{lq.prefix}de:k{i}", "x", px=60_000)
        pipe.set(f"other:{i}", "y")
    pipe.execute()
    lq.r.hset(lq.keys["meta"], "paused", "1")
    answers = obliterate(lq, 10)  # 100 keys looked at per call
    assert len(answers) > 10 and answers[-1] == 0
    assert keys_of(lq) == [] and lq.r.exists("other:0", "other:2999") == 2


def test_glob_characters_in_the_prefix_are_literal(r: redis.Redis, queue_name: str) -> None:
    lq = LuaQueue(r, QueueKeys(queue_name, prefix="b[x]*"))
    lookalike = f"bx?:{queue_name}:wait"
    r.set(lookalike, "keep")
    lq.add()
    lq.r.hset(lq.keys["meta"], "paused", "1")
    assert obliterate(lq, 100)[-1] == 0
    assert r.exists(lq.keys["id"], lq.keys["events"], lq.keys["meta"]) == 0
    assert r.get(lookalike) == "keep"


def _foreign_parent(lq: LuaQueue, other: LuaQueue, children: list[str], **flags: Any) -> str:
    """A parent `p` in ``other`` waiting for ``children`` (ids) of ``lq``; returns its key."""
    parent_key = other.keys.job("p")
    other.r.hset(parent_key, mapping={"name": "p", "data": "{}", "opts": "{}", "timestamp": NOW})
    other.r.zadd(other.keys["waiting-children"], {"p": NOW})
    link = json.dumps({"id": "p", "queueKey": other.keys.queue_key, **flags})
    for child in children:
        lq.add(job_id=child, parent_key=parent_key, parent=link)
        lq.r.sadd(parent_key + ":dependencies", lq.keys.job(child))
    return parent_key


def test_parent_in_another_queue_is_released_to_wait(lq: LuaQueue) -> None:
    other = LuaQueue(lq.r, QueueKeys(lq.keys.name + "-p"))
    parent_key = _foreign_parent(lq, other, ["c1", "c2"])
    lq.r.hset(lq.keys["meta"], "paused", "1")

    assert obliterate(lq, 1)[-1] == 0

    assert other.zset("waiting-children") == [] and other.lst("wait") == ["p"]
    assert lq.r.exists(parent_key + ":dependencies") == 0
    assert other.events()[-1][:6] == ("event", "waiting", "jobId", "p", "prev", "waiting-children")
    assert other.r.exists(other.keys["marker"]) == 1
    assert keys_of(lq) == []


def test_parent_with_fail_parent_on_failure_is_released_not_failed(lq: LuaQueue) -> None:
    """Obliterating a child is a removal (as removeJob): failure policies do not apply."""
    other = LuaQueue(lq.r, QueueKeys(lq.keys.name + "-p"))
    _foreign_parent(lq, other, ["c1"], fpof=True)
    lq.r.hset(lq.keys["meta"], "paused", "1")

    assert obliterate(lq, 100)[-1] == 0

    assert other.lst("wait") == ["p"] and other.zset("failed") == []
    assert "defa" not in other.job("p")
    assert other.r.exists(other.keys.job("p") + ":unsuccessful") == 0


def test_parent_with_a_pending_child_elsewhere_keeps_waiting(lq: LuaQueue) -> None:
    other = LuaQueue(lq.r, QueueKeys(lq.keys.name + "-p"))
    parent_key = _foreign_parent(lq, other, ["c1"])
    other.add(
        job_id="sib",
        parent_key=parent_key,
        parent=json.dumps({"id": "p", "queueKey": other.keys.queue_key}),
    )
    lq.r.sadd(parent_key + ":dependencies", other.keys.job("sib"))
    lq.r.hset(lq.keys["meta"], "paused", "1")

    assert obliterate(lq, 100)[-1] == 0

    assert [m for m, _ in other.zset("waiting-children")] == ["p"]
    assert lq.r.smembers(parent_key + ":dependencies") == {other.keys.job("sib")}


def test_a_job_key_that_is_not_a_hash_goes_with_the_queue(lq: LuaQueue) -> None:
    lq.add()
    lq.r.set(lq.keys.job("s"), "written by hand")
    lq.r.zadd(lq.keys["failed"], {"s": 1})
    lq.r.hset(lq.keys["meta"], "paused", "1")

    assert obliterate(lq, 10, force=True)[-1] == 0

    assert keys_of(lq) == []
