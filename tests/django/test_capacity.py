"""``manage.py bullq capacity`` and the capacity probe: report fields, scratch queue cleaned."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command
from django.test import override_settings

from django_bullq.core.capacity import SCRATCH_PREFIX, Persistence, scratch_name, verdict

REPORT_FIELDS = {
    "queue",
    "jobs",
    "concurrency",
    "commands_per_job",
    "scripts_per_job",
    "redis_us_per_job",
    "ceiling_jobs_per_s",
    "plateau_jobs_per_s",
    "redis_cpu_pct",
    "worker_cpu_pct",
    "rtt_ms",
    "persistence",
    "bound",
    "agree",
    "explanation",
    "plan_jobs_per_s",
    "workers_for_plan",
    "by_command",
    "server",
}
NO_PERSISTENCE = Persistence(aof_enabled=False, appendfsync="everysec", rdb_save="", busy=False)


def run_capacity(*args: str) -> str:
    out = io.StringIO()
    call_command("bullq", "capacity", *args, stdout=out)
    return out.getvalue()


def scratch_keys(r: redis.Redis) -> list[Any]:
    return list(r.scan_iter(match=f"*{SCRATCH_PREFIX}*", count=1000))


def test_json_report_has_every_field(r: redis.Redis) -> None:
    report = json.loads(run_capacity("--jobs", "60", "--concurrency", "5", "--json"))
    assert set(report) == REPORT_FIELDS
    assert report["jobs"] == 60 and report["concurrency"] == 5
    assert report["queue"].startswith(SCRATCH_PREFIX)
    assert report["bound"] in {"cpu (redis)", "cpu (worker)", "persistence", "network"}
    assert isinstance(report["agree"], bool)
    low, high = report["plan_jobs_per_s"]
    assert low == round(report["ceiling_jobs_per_s"] * 0.5)
    assert high == round(report["ceiling_jobs_per_s"] * 0.6)
    assert set(report["persistence"]) == {"aof_enabled", "appendfsync", "rdb_save", "busy"}
    assert report["scripts_per_job"] > 0 and report["commands_per_job"] > 0
    assert "evalsha" in report["by_command"] or "eval" in report["by_command"]
    assert scratch_keys(r) == []


def test_text_report_names_each_figure(r: redis.Redis) -> None:
    text = run_capacity("--jobs", "40")
    for label in (
        "commands per job",
        "Redis CPU per job",
        "predicted ceiling",
        "measured plateau",
        "Redis main thread",
        "bound",
        "figures agree",
        "plan peak load for",
    ):
        assert label in text
    assert scratch_keys(r) == []


def test_uses_the_named_queues_prefix(r: redis.Redis, redis_url: str) -> None:
    bullq = {
        "CONNECTIONS": {"default": {"URL": redis_url}},
        "QUEUES": {"emails": {"PREFIX": "capprobe"}},
    }
    with override_settings(BULLQ=bullq):
        report = json.loads(run_capacity("--queue", "emails", "--jobs", "30", "--json"))
    assert report["jobs"] == 30
    assert list(r.scan_iter(match="capprobe:*")) == []  # the scratch queue was obliterated
    assert list(r.scan_iter(match="bull:emails:*")) == []  # the real queue was never touched


@pytest.mark.parametrize("args", [["--jobs", "5"], ["--concurrency", "0"]])
def test_rejects_bad_sizes(args: list[str]) -> None:
    with pytest.raises(CommandError):
        run_capacity(*args)


def test_subcommand_is_required() -> None:
    with pytest.raises(CommandError):
        call_command("bullq")


def test_scratch_names_are_fresh() -> None:
    assert scratch_name() != scratch_name()
    assert scratch_name().startswith(SCRATCH_PREFIX)


@pytest.mark.parametrize(
    ("redis_cpu", "worker_cpu", "persist", "bound"),
    [
        (95.0, 50.0, NO_PERSISTENCE, "cpu (redis)"),
        (40.0, 90.0, NO_PERSISTENCE, "cpu (worker)"),
        (
            40.0,
            50.0,
            Persistence(aof_enabled=True, appendfsync="always", rdb_save="", busy=False),
            "persistence",
        ),
        (
            40.0,
            50.0,
            Persistence(aof_enabled=False, appendfsync="unknown", rdb_save="", busy=True),
            "persistence",
        ),
        (40.0, 50.0, NO_PERSISTENCE, "network"),
    ],
)
def test_verdict_names_the_bound(
    redis_cpu: float, worker_cpu: float, persist: Persistence, bound: str
) -> None:
    got, _, why = verdict(4000, 10_000, redis_cpu, worker_cpu, persist)
    assert got == bound
    assert why.endswith(".")


def test_verdict_agreement_compares_the_ceiling_share_with_redis_cpu() -> None:
    # 4,000 of a 10,000 ceiling is 40% of Redis: agrees with 45% busy, not with 90%.
    assert verdict(4000, 10_000, 45.0, 50.0, NO_PERSISTENCE)[1] is True
    assert verdict(4000, 10_000, 90.0, 50.0, NO_PERSISTENCE)[1] is False
