"""drain-5.lua: remove waiting (and optionally delayed) jobs in batches; keep scheduler
iterations in place. Answers {removed, more, kept counts...}, looped as
core/calls/operations does."""

from __future__ import annotations

from typing import Any

from django_bullq.core.calls import queue_builders
from django_bullq.core.calls.operations import drain_step
from tests.lua.helpers import LuaQueue


def drain(lq: LuaQueue, *, delayed: bool = False, count: int = 1000) -> int:
    return drain_calls(lq, delayed=delayed, count=count)[0]


def drain_calls(lq: LuaQueue, *, delayed: bool, count: int) -> tuple[int, list[Any]]:
    """Drain to the end; (jobs removed, every raw answer)."""
    total, kept, answers = 0, [0, 0, 0, 0], []
    while True:
        step = queue_builders.drain(lq.keys, delayed=delayed, count=count, kept=kept)
        answers.append(lq.run(step.script, step.keys, step.args))
        removed, next_kept = drain_step(answers[-1])
        total += removed
        if next_kept is None:
            return total, answers
        kept = next_kept


def iteration(lq: LuaQueue, scheduler: str, millis: int) -> str:
    """The current iteration hash of a scheduler (not placed in any state); returns its id."""
    it = f"repeat:{scheduler}:{millis}"
    lq.r.zadd(lq.keys["repeat"], {scheduler: millis})
    lq.r.hset(lq.keys.job(it), mapping={"name": "t", "data": "{}", "rjk": scheduler})
    return it


def test_drain_without_and_with_delayed(lq: LuaQueue) -> None:
    lq.add_active()  # 1 is active and stays
    lq.add()
    lq.add(priority=2)
    lq.add(delay=60_000)
    lq.r.rpush(lq.keys["paused"], "legacy")
    lq.r.hset(lq.keys.job("legacy"), mapping={"name": "x", "data": "{}"})
    lq.clear_events()

    assert drain(lq) == 3
    assert lq.lst("wait") == [] and lq.zset("prioritized") == [] and lq.exists("paused") == 0
    assert lq.job_keys_exist("2") == 0 and lq.job_keys_exist("legacy") == 0
    assert lq.exists("pc") == 0
    assert [m for m, _ in lq.zset("delayed")] == ["4"]
    assert lq.lst("active") == ["1"]
    assert drain(lq, delayed=True) == 1
    assert lq.zset("delayed") == [] and lq.job_keys_exist("4") == 0
    assert lq.events() == []


def test_keeps_current_scheduler_iteration_and_removes_emptied_parent(lq: LuaQueue) -> None:
    it = iteration(lq, "s1", 1000)
    lq.r.lpush(lq.keys["wait"], it)
    lq.r.hset(lq.keys.job("p"), mapping={"name": "p", "data": "{}"})
    lq.add(job_id="child", parent_key=lq.keys.job("p"), parent="{}")
    lq.r.sadd(lq.keys.job("p") + ":dependencies", lq.keys.job("child"))
    lq.r.zadd(lq.keys["waiting-children"], {"p": 1})

    assert drain(lq) == 1
    assert lq.lst("wait") == [it]
    assert lq.zset("waiting-children") == [] and lq.job_keys_exist("p") == 0


def test_batches_of_count_jobs_each(lq: LuaQueue) -> None:
    for _ in range(7):
        lq.add()
    for _ in range(5):
        lq.add(priority=3)
    for _ in range(4):
        lq.add(delay=60_000)

    total, answers = drain_calls(lq, delayed=True, count=3)

    assert total == 16
    assert [a[0] for a in answers] == [3, 3, 3, 3, 3, 1]
    assert [a[1] for a in answers] == [1, 1, 1, 1, 1, 0]
    assert lq.lst("wait") == [] and lq.zset("prioritized") == [] and lq.zset("delayed") == []
    assert lq.exists("pc") == 0
    for i in range(1, 17):
        assert lq.job_keys_exist(str(i)) == 0


def test_iterations_keep_their_place_across_batches(lq: LuaQueue) -> None:
    """Iterations scattered through wait, prioritized and delayed stay where they were, in
    order, when the batches are smaller than the gaps between them and than their number."""
    wait_its = [iteration(lq, f"w{i}", 1000 + i) for i in range(3)]
    pr_its = [iteration(lq, f"p{i}", 2000 + i) for i in range(2)]
    de_its = [iteration(lq, f"d{i}", 3000 + i) for i in range(2)]
    for n in range(12):  # wait, left to right: job, it, job, job, it, ...
        lq.add()
        if n % 4 == 1:
            lq.r.lpush(lq.keys["wait"], wait_its[n // 4])
    for n, it in enumerate(pr_its):
        lq.add(priority=1)
        lq.r.zadd(lq.keys["prioritized"], {it: (1 << 32) + 100 + n})
        lq.add(priority=1)
    for it in de_its:  # delayed, by score: job, it, job, it
        job_id = lq.add(delay=60_000)
        score = lq.r.zscore(lq.keys["delayed"], job_id)
        assert score is not None
        lq.r.zadd(lq.keys["delayed"], {it: score + 1})
    wait_before = [x for x in lq.lst("wait") if x.startswith("repeat:")]

    total, answers = drain_calls(lq, delayed=True, count=2)

    assert total == 12 + 4 + 2
    assert lq.lst("wait") == wait_before and sorted(wait_before) == sorted(wait_its)
    assert [m for m, _ in lq.zset("prioritized")] == pr_its
    assert [m for m, _ in lq.zset("delayed")] == de_its
    assert all(a[0] <= 2 for a in answers)
    assert lq.exists("pc") == 1  # iterations still prioritized: the counter stays


def test_a_queue_with_only_iterations_ends_at_once(lq: LuaQueue) -> None:
    its = [iteration(lq, f"s{i}", 10 + i) for i in range(5)]
    lq.r.rpush(lq.keys["wait"], *its)
    total, answers = drain_calls(lq, delayed=False, count=2)
    assert total == 0 and lq.lst("wait") == its
    assert len(answers) <= 3
