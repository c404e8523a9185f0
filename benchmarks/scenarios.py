"""The scenarios and the libraries of ``make bench``, with their default (full-run) sizes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_BULLMQ = ROOT / "tests" / "interop" / "node_modules" / "bullmq" / "package.json"


@dataclass(frozen=True, slots=True)
class Scenario:
    """One timed scenario.

    Attributes:
        key: its name in results.json. title: its row label in docs/benchmarks.md.
        kind: ``bulk_insert`` | ``single_insert`` | ``process``.
        jobs: jobs of a full run (scaled by ``--scale``, replaced by ``--jobs``).
        concurrency: jobs run at once by the worker (processing scenarios).
        work: ``noop`` | ``cpu`` (``--cpu-iterations`` sin/cos) | ``io`` (``--io-ms`` sleep).
        remove_completed: every library that keeps finished jobs (records, results) is told to
            remove each one when it completes (the spec field ``remove_completed``), for the
            row beside the one with each library's default retention.
    """

    key: str
    title: str
    kind: str
    jobs: int
    concurrency: int = 1
    work: str = "noop"
    remove_completed: bool = False


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("bulk_insert", "Bulk insert (chunks of `--chunk`)", "bulk_insert", 50_000),
    Scenario("single_insert_p10", "Single inserts, 10 producers", "single_insert", 10_000),
    Scenario("noop_c1", "No-op jobs, concurrency 1", "process", 5_000, 1),
    Scenario("noop_c10", "No-op jobs, concurrency 10", "process", 20_000, 10),
    Scenario("noop_c50", "No-op jobs, concurrency 50", "process", 20_000, 50),
    Scenario(
        "noop_c10_removed",
        "No-op jobs, concurrency 10, completed jobs removed",
        "process",
        20_000,
        10,
        remove_completed=True,
    ),
    Scenario(
        "noop_c50_removed",
        "No-op jobs, concurrency 50, completed jobs removed",
        "process",
        20_000,
        50,
        remove_completed=True,
    ),
    Scenario(
        "cpu_c10", "CPU-bound jobs (1,000 sin/cos), concurrency 10", "process", 5_000, 10, "cpu"
    ),
    Scenario("io10ms_c10", "10 ms I/O jobs, concurrency 10", "process", 3_000, 10, "io"),
    Scenario("io10ms_c50", "10 ms I/O jobs, concurrency 50", "process", 10_000, 50, "io"),
)
SCENARIO_KEYS = tuple(s.key for s in SCENARIOS)

#: The scenario whose Redis cost is the headline (BullMQ's "Redis cost per no-op job").
COST_SCENARIO = "noop_c10"


@dataclass(frozen=True, slots=True)
class Library:
    """One library under test.

    Attributes:
        key: its name in results.json. title: its column label.
        module: the Python adapter module, or "" for the Node adapter.
        distribution: PyPI distribution whose version is reported ("" for Node).
        root: the tree whose code the child runs (its working directory): this checkout, or
            another commit's worktree for ``--base``.
        venv: the venv (a directory of this checkout) whose ``bin/python`` runs the adapter,
            for a library whose pins clash with the others (``make venv-bench`` builds it);
            "" = the bench's ``--python``.
    """

    key: str
    title: str
    module: str
    distribution: str
    root: Path = ROOT
    venv: str = ""

    @property
    def is_node(self) -> bool:
        return not self.module

    def python(self, default: str) -> str:
        """The interpreter of this library's adapter: its venv's, else ``default``."""
        return str(ROOT / self.venv / "bin" / "python") if self.venv else default

    def command(self, spec: dict[str, object], python: str, node: str) -> list[str]:
        """The child process that runs one measurement of ``spec``."""
        text = json.dumps(spec)
        if self.is_node:
            return [node, str(self.root / "benchmarks" / "node" / "bench.mjs"), text]
        return [self.python(python), "-m", self.module, text]


LIBRARIES: tuple[Library, ...] = (
    Library("django_bullq", "django_bullq", "benchmarks.adapters.bullq", "django-bullq"),
    Library(
        "bullq-otel",
        "django_bullq, OpenTelemetry on",
        "benchmarks.adapters.bullq_otel",
        "django-bullq",
    ),
    Library(
        "bullq-sync",
        "django_bullq, def processor",
        "benchmarks.adapters.bullq_sync",
        "django-bullq",
    ),
    Library("bullq-task", "@task def, runworker", "benchmarks.adapters.bullq_task", "django-bullq"),
    Library(
        "bullq-task-async",
        "@task async def, runworker",
        "benchmarks.adapters.bullq_task_async",
        "django-bullq",
    ),
    Library(
        "bullq-task-p2",
        "@task def, runworker --processes 2",
        "benchmarks.adapters.bullq_task_p2",
        "django-bullq",
    ),
    Library(
        "bullq-task-pool",
        "@task(process=True)",
        "benchmarks.adapters.bullq_task_pool",
        "django-bullq",
    ),
    Library("bullmq", "bullmq (PyPI)", "benchmarks.adapters.bullmq_py", "bullmq"),
    Library("node-bullmq", "bullmq (Node)", "", ""),
    Library("rq", "RQ", "benchmarks.adapters.rq_", "rq"),
    Library("celery", "Celery", "benchmarks.adapters.celery_", "celery"),
    Library("dramatiq", "Dramatiq", "benchmarks.adapters.dramatiq_", "dramatiq"),
    Library("saq", "SAQ", "benchmarks.adapters.saq_", "saq", venv=".venv-bench-saq"),
    Library("streaq", "streaq", "benchmarks.adapters.streaq_", "streaq"),
    Library("taskiq", "taskiq", "benchmarks.adapters.taskiq_", "taskiq"),
    Library("arq", "arq", "benchmarks.adapters.arq_", "arq", venv=".venv-bench-arq"),
)
LIBRARY_KEYS = tuple(lib.key for lib in LIBRARIES)
OURS = "django_bullq"


def node_bullmq_version() -> str:
    """Version of the npm bullmq the Node adapter uses, or "" when it is not installed."""
    if not NODE_BULLMQ.exists():
        return ""
    return str(json.loads(NODE_BULLMQ.read_text())["version"])
