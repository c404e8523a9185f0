"""Per-job Redis cost from two INFO snapshots (commands inside scripts counted)."""

from __future__ import annotations

import uuid

import pytest
import redis

from django_bullq.core import redis_cost

SCRIPT = "redis.call('strlen', KEYS[1]); redis.call('getrange', KEYS[1], 0, 1); return 1"


def test_counts_script_calls_and_the_commands_inside(r: redis.Redis) -> None:
    key = f"cost-{uuid.uuid4().hex}"
    before = redis_cost.snapshot(r)
    for _ in range(10):
        r.eval(SCRIPT, 1, key)
    after = redis_cost.snapshot(r)
    cost = redis_cost.cost(before, after, jobs=5)
    assert cost.by_command["eval"] == 2.0
    assert cost.by_command["strlen"] == 2.0
    assert cost.by_command["getrange"] == 2.0
    assert cost.scripts_per_job >= 2.0
    assert cost.commands_per_job >= 6.0
    assert "info" not in cost.by_command  # the observer's own reads are left out
    assert cost.cpu_us_per_job >= 0 and cost.seconds > 0
    assert set(cost.as_dict()) == {
        "jobs",
        "seconds",
        "commands_per_job",
        "scripts_per_job",
        "cpu_us_per_job",
        "main_thread_cpu_pct",
        "by_command",
    }


def test_ceiling_is_a_million_over_the_cpu_per_job() -> None:
    cost = redis_cost.Cost(
        jobs=1,
        seconds=1.0,
        commands_per_job=1,
        scripts_per_job=1,
        cpu_us_per_job=125.0,
        main_thread_cpu_pct=50.0,
        by_command={},
    )
    assert cost.ceiling_jobs_per_s == 8000


def test_needs_at_least_one_job(r: redis.Redis) -> None:
    snap = redis_cost.snapshot(r)
    with pytest.raises(ValueError):
        redis_cost.cost(snap, snap, jobs=0)
