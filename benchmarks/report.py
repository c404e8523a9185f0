"""results.json and docs/benchmarks.md from the runs of one ``make bench``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import report_servers
from .matrix import Runs, median_cost, median_rate
from .scenarios import COST_SCENARIO, OURS, Library, Scenario


def results(
    runs: Runs,
    scenarios: Sequence[Scenario],
    growth: dict[str, Any],
    machine: dict[str, Any],
    config: dict[str, Any],
) -> dict[str, Any]:
    """The JSON document: ``{scenario: {library: jobs/s | null}}`` plus the other keys.

    Other keys: ``redis_cost`` (scenario -> library -> per-job figures; ``round_trips_per_job``
    null when not measured), ``not_applicable`` and ``errors`` (scenario -> library -> reason),
    ``runs`` (every run's jobs, seconds and round trips), ``growth``, ``machine`` (with
    ``event_loops``: library -> the loop its adapter ran on), ``config``.
    """
    out: dict[str, Any] = {}
    cost: dict[str, Any] = {}
    na: dict[str, Any] = {}
    errors: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    for scenario in scenarios:
        by_lib = runs[scenario.key]
        out[scenario.key] = {lib: _round(median_rate(r)) for lib, r in by_lib.items()}
        cost[scenario.key] = {lib: median_cost(r) for lib, r in by_lib.items()}
        na[scenario.key] = {lib: r[0].na for lib, r in by_lib.items() if r and r[0].na}
        errors[scenario.key] = {
            lib: [m.error for m in r if m.error]
            for lib, r in by_lib.items()
            if any(m.error for m in r)
        }
        raw[scenario.key] = {
            lib: [
                {"jobs": m.jobs, "seconds": round(m.seconds, 4), "round_trips": m.round_trips}
                for m in r
                if not m.na
            ]
            for lib, r in by_lib.items()
        }
    loops = {
        lib: m.extra["event_loop"]
        for by_lib in runs.values()
        for lib, r in by_lib.items()
        for m in r
        if m.extra.get("event_loop")
    }
    return {
        **out,
        "redis_cost": cost,
        "not_applicable": na,
        "errors": errors,
        "runs": raw,
        "growth": growth,
        "machine": {**machine, "event_loops": loops},
        "config": config,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _trips(value: float | None) -> str:
    """Round trips per job: "—" when not measured, 3 places below 0.1 (bulk inserts)."""
    return _num(value, 2 if value is None or value >= 0.1 else 3)


#: The peers whose best no-op rate the ``@task`` rows are held against (issue 14).
ASYNC_PEERS = ("saq", "streaq", "taskiq", "arq")
#: The rows of "What a Django project gets": (scenario, what the ``bullq-task*`` cell runs).
DJANGO_ROWS = (
    ("noop_c10", "No-op jobs, concurrency 10"),
    ("noop_c50", "No-op jobs, concurrency 50"),
    ("noop_c10_removed", "No-op jobs, concurrency 10, completed jobs removed"),
    ("noop_c50_removed", "No-op jobs, concurrency 50, completed jobs removed"),
    ("single_insert_p10", "Single inserts, 10 producers (`.enqueue()` threads / `.aenqueue()`)"),
    ("bulk_insert", "Bulk insert (`Task.enqueue_many`, chunks of `--chunk`)"),
    ("cpu_c10", "CPU-bound jobs, concurrency 10"),
)
#: Columns of that table: (library key, column title).
DJANGO_COLUMNS = (
    ("bullq-task", "`@task def`"),
    ("bullq-task-async", "`@task async def`"),
    (OURS, "core `Worker`"),
    ("bullq-sync", "core `Worker`, `def` processor"),
    ("node-bullmq", "Node bullmq"),
    ("dramatiq", "Dramatiq"),
    ("celery", "Celery"),
)


def _rate(data: dict[str, Any], scenario: str, lib: str) -> float | None:
    value: float | None = data.get(scenario, {}).get(lib)
    return value


def _best_async_peer(data: dict[str, Any], scenario: str) -> tuple[str, float | None]:
    """The fastest of SAQ, streaq, taskiq and arq at ``scenario``: (key, jobs/s)."""
    rates = [(lib, _rate(data, scenario, lib)) for lib in ASYNC_PEERS]
    measured = [(lib, r) for lib, r in rates if r]
    return max(measured, key=lambda pair: pair[1]) if measured else ("", None)


def django_project_lines(data: dict[str, Any]) -> list[str]:
    """ "What a Django project gets": the ``@task`` rows beside the core and the peers, each
    cell with ``@task def``'s rate divided by it; then issue 14's targets."""
    head = ["Scenario", *(title for _, title in DJANGO_COLUMNS), "best of SAQ/streaq/taskiq/arq"]
    lines = [
        "Jobs/s, median of the interleaved rounds. `@task def` / `@task async def`: functions "
        "decorated with `@task` in `benchmarks/djangoproject`, run by `manage.py runworker` "
        "(so every job goes through the task dispatch, the thread hop of `def` tasks and the "
        "per-job database hygiene), enqueued through `.enqueue()` from 10 threads, "
        "`.aenqueue()` from 10 coroutines and `Task.enqueue_many`. In parentheses: the "
        "`@task def` rate divided by the cell's.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for scenario, title in DJANGO_ROWS:
        if scenario not in data:
            continue
        task_rate = _rate(data, scenario, "bullq-task")
        if scenario == "cpu_c10":
            title += " (`--processes 2`: " + _num(_rate(data, scenario, "bullq-task-p2"))
            title += "; `@task(process=True)`: "
            title += _num(_rate(data, scenario, "bullq-task-pool")) + ")"
        cells = [title]
        for lib, _ in DJANGO_COLUMNS:
            value = _rate(data, scenario, lib)
            if lib == "bullq-task" or value is None or task_rate is None:
                cells.append(_num(value))
            else:
                cells.append(f"{_num(value)} ({task_rate / value:.2f}×)")
        peer, value = _best_async_peer(data, scenario)
        cells.append(
            "—"
            if value is None
            else f"{peer} {_num(value)}"
            + (f" ({task_rate / value:.2f}×)" if task_rate is not None else "")
        )
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "### Targets of issue 14", "", *django_targets(data)]
    return lines


def _over(data: dict[str, Any], scenario: str, ours: str, theirs: str) -> float | None:
    a, b = _rate(data, scenario, ours), _rate(data, scenario, theirs)
    return a / b if a and b else None


def _target(text: str, value: float | None, goal: float, *, lower_is_better: bool = False) -> str:
    if value is None:
        return f"- {text}: not measured"
    met = value <= goal if lower_is_better else value >= goal
    return f"- {text}: {value:.2f}× — {'met' if met else 'not met'}"


def django_targets(data: dict[str, Any]) -> list[str]:
    """Issue 14's targets, each with the measured ratio and whether it is met."""
    out = []
    for c in ("noop_c10", "noop_c50"):
        out.append(
            _target(f"{c}: `@task def` ≥ 0.75× core", _over(data, c, "bullq-task", OURS), 0.75)
        )
        for peer in ("dramatiq", "celery"):
            out.append(
                _target(f"{c}: `@task def` ≥ 3× {peer}", _over(data, c, "bullq-task", peer), 3)
            )
        peer, _ = _best_async_peer(data, c)
        out.append(
            _target(
                f"{c}: `@task def` ≥ 3× the best of SAQ, streaq, taskiq, arq ({peer or '—'})",
                _over(data, c, "bullq-task", peer) if peer else None,
                3,
            )
        )
        out.append(
            _target(
                f"{c}: `@task async def` ≥ 0.9× core", _over(data, c, "bullq-task-async", OURS), 0.9
            )
        )
        out.append(_target(f"{c}: core ≥ 1× Node bullmq", _over(data, c, OURS, "node-bullmq"), 1))
    out.append(
        _target(
            "single inserts: `.enqueue()` from 10 threads ≥ 2× Dramatiq's `send()`",
            _over(data, "single_insert_p10", "bullq-task", "dramatiq"),
            2,
        )
    )
    out.append(
        _target(
            "bulk: `Task.enqueue_many` ≥ 1× Node `addBulk`",
            _over(data, "bulk_insert", "bullq-task", "node-bullmq"),
            1,
        )
    )
    cost = data.get("redis_cost", {}).get(COST_SCENARIO, {})
    ours_cpu = (cost.get(OURS) or {}).get("cpu_us_per_job")
    node_cpu = (cost.get("node-bullmq") or {}).get("cpu_us_per_job")
    out.append(
        _target(
            "Redis CPU per no-op job at c=10 ≤ Node bullmq's (ours / Node)",
            ours_cpu / node_cpu if ours_cpu and node_cpu else None,
            1,
            lower_is_better=True,
        )
    )
    return out


def throughput_table(
    data: dict[str, Any], scenarios: Sequence[Scenario], libraries: Sequence[Library]
) -> list[str]:
    """Markdown rows: jobs/s per library; each peer's cell also gives django_bullq / peer."""
    head = ["Scenario", *(lib.title for lib in libraries)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes: list[str] = []
    for scenario in scenarios:
        row = data[scenario.key]
        ours = row.get(OURS)
        cells = [scenario.title]
        for lib in libraries:
            value = row.get(lib.key)
            if value is None:
                reason = data["not_applicable"][scenario.key].get(lib.key)
                if reason and f"{lib.title}: {reason}" not in notes:
                    notes.append(f"{lib.title}: {reason}")
                cells.append(
                    f"n/a [{notes.index(f'{lib.title}: {reason}') + 1}]"
                    if reason
                    else "failed (see results.json `errors`)"
                )
            elif lib.key == OURS or ours is None:
                cells.append(_num(value))
            else:
                cells.append(f"{_num(value)} ({ours / value:.2f}×)")
        lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines += ["", *(f"[{i}] {note}" + "  " for i, note in enumerate(notes, 1))]
    return lines


def cost_table(data: dict[str, Any], scenario_key: str, libraries: Sequence[Library]) -> list[str]:
    """Markdown rows of the per-job Redis figures of one scenario."""
    lines = [
        "| Library | Commands / job | Scripts / job | Redis CPU µs / job | "
        "Predicted ceiling (jobs/s) | Round trips / job |",
        "|---|---|---|---|---|---|",
    ]
    for lib in libraries:
        c = data["redis_cost"].get(scenario_key, {}).get(lib.key)
        if c is None:
            continue
        lines.append(
            f"| {lib.title} | {c['commands_per_job']:.1f} | {c['scripts_per_job']:.2f}"
            f" | {c['cpu_us_per_job']:.1f} | {_num(c['ceiling_jobs_per_s'])}"
            f" | {_trips(c['round_trips_per_job'])} |"
        )
    return lines


def targets(data: dict[str, Any], io_ms: int) -> list[str]:
    """Issue 5's targets, each with the measured figure and whether it is met."""

    def ratio(scenario: str, peer: str) -> float | None:
        row = data.get(scenario, {})
        ours, theirs = row.get(OURS), row.get(peer)
        return ours / theirs if ours and theirs else None

    def line(
        text: str,
        value: float | None,
        goal: float,
        unit: str = "×",
        *,
        lower_is_better: bool = False,
    ) -> str:
        if value is None:
            return f"- {text}: not measured"
        met = value <= goal if lower_is_better else value >= goal
        return f"- {text}: {value:.2f}{unit} — {'met' if met else 'not met'}"

    ideal = 50 * 1000 / io_ms
    io = data.get("io10ms_c50", {}).get(OURS)
    cost = data["redis_cost"].get(COST_SCENARIO, {})
    ours_cpu = (cost.get(OURS) or {}).get("cpu_us_per_job")
    node_cpu = (cost.get("node-bullmq") or {}).get("cpu_us_per_job")
    out = []
    for c in ("noop_c10", "noop_c50"):
        out.append(line(f"{c}: ≥ 3× PyPI bullmq", ratio(c, "bullmq"), 3))
        out.append(line(f"{c}: ≥ 1.5× Dramatiq", ratio(c, "dramatiq"), 1.5))
        out.append(line(f"{c} (stretch): ≥ 1× Node bullmq", ratio(c, "node-bullmq"), 1))
    out.append(
        line(
            "single inserts, 10 producers: ≥ 2× PyPI bullmq",
            ratio("single_insert_p10", "bullmq"),
            2,
        )
    )
    out.append(line("bulk insert: ≥ 1× Node bullmq", ratio("bulk_insert", "node-bullmq"), 1))
    out.append(
        line(
            f"10 ms I/O at c=50: ≥ 95% of the ideal {ideal:,.0f} jobs/s",
            io * 100 / ideal if io else None,
            95,
            "%",
        )
    )
    out.append(
        line(
            "Redis CPU per no-op job ≤ Node bullmq's (ours / Node)",
            ours_cpu / node_cpu if ours_cpu and node_cpu else None,
            1,
            "×",
            lower_is_better=True,
        )
    )
    out.append(
        line(
            "round trips per no-op job ≤ 2",
            (cost.get(OURS) or {}).get("round_trips_per_job"),
            2,
            "",
            lower_is_better=True,
        )
    )
    return out


def growth_lines(growth: dict[str, Any]) -> list[str]:
    """Markdown for the completed / delayed growth runs and the worker's RSS."""
    lines = []
    if growth.get("separate_run"):
        lines.append(f"These figures are {growth['separate_run']}.")
        lines.append("")
    for key, what, small in (
        ("completed", "completed set (retention bounded at its size)", "a set bounded at {:,}"),
        ("delayed", "delayed set", "none"),
    ):
        g = growth.get(key)
        if not g:
            continue
        if "error" in g:
            lines.append(f"- {what}, {g['size']:,} jobs: {g['error']}")
            continue
        # The target is "no slower than 10%"; a faster grown run is noise, not a failure.
        change = g["change_pct"]
        verdict = (
            "not slower"
            if change >= 0
            else ("within 10%" if change >= -10 else "more than 10% slower")
        )
        lines.append(
            f"- {what} of {g['size']:,} jobs: {g['grown_jobs_per_s']:,} jobs/s against "
            f"{g['small_jobs_per_s']:,} with {small.format(g['small_size'])} "
            f"({g['change_pct']:+.1f}%, {verdict}); Redis CPU {g['grown_redis_us_per_job']:.0f} "
            f"against {g['small_redis_us_per_job']:.0f} µs per job "
            f"({g['redis_us_change_pct']:+.1f}%)."
        )
    sizes = [g["size"] for g in growth.values() if isinstance(g, dict) and "size" in g]
    if sizes:
        used = ", ".join(f"{n:,}" for n in sorted(set(sizes)))
        lines.append(
            f"- Sizes: {used} (issue 5 asks for 1,000,000; `make bench` defaults to "
            "200,000 to stay near 15 minutes on 2 cores; `BENCH_GROWTH_SIZE` and "
            "`BENCH_MEMORY_JOBS` set them)."
        )
    mem = growth.get("memory")
    if mem and "error" not in mem:
        lines.append(
            f"- worker RSS over {mem['jobs']:,} no-op jobs (concurrency 10): "
            f"{mem['rss_mb_at_10pct']:.1f} MB at 10% of them, "
            f"{mem['rss_mb_at_end']:.1f} MB at the end "
            f"({mem['growth_from_10pct_pct']:+.1f}%: "
            f"{'flat' if abs(mem['growth_from_10pct_pct']) <= 5 else 'NOT flat'}), "
            f"peak {mem['rss_mb_max']:.1f} MB."
        )
    elif mem:
        lines.append(f"- worker memory: {mem['error']}")
    return lines


def machine_lines(machine: dict[str, Any], libraries: Sequence[Library]) -> list[str]:
    versions = ", ".join(
        f"{lib.title} {machine.get(lib.distribution) or machine.get('node_bullmq', '')}"
        for lib in libraries
    )
    return [
        f"- CPU: {machine['cpu']}, {machine['cores']} cores ({machine['os']}); "
        f"load average at start {machine['load_average_at_start']}",
        f"- Python {machine['python']}, Node {machine['node']}, Redis {machine['redis']} "
        f"(a private server started by the bench: no persistence, default config)",
        f"- Versions: {versions}",
        *(
            [
                "- Event loops: "
                + ", ".join(
                    f"{lib.title} {machine['event_loops'][lib.key]}"
                    for lib in libraries
                    if lib.key in machine.get("event_loops", {})
                )
                + " (thread-based libraries: none)"
            ]
            if machine.get("event_loops")
            else []
        ),
    ]


#: The pointer to the page of the Redis / Valkey run, which has its own command and files.
SERVERS_LINE = (
    "Redis and Valkey side by side (PING latency, the server's CPU per job, Valkey's "
    "io-threads): [Benchmarks: Redis and Valkey](benchmarks-servers.md), a run of its own "
    "(`python -m benchmarks --server both`, written to `benchmarks/results-servers.json`)."
)


def markdown(
    data: dict[str, Any],
    scenarios: Sequence[Scenario],
    libraries: Sequence[Library],
    method: str,
    note: str,
) -> str:
    """The whole of docs/benchmarks.md."""
    cfg = data["config"]
    parts = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`python -m benchmarks`, code in `benchmarks/`). " + note,
        "",
        SERVERS_LINE,
        "",
        "## What a Django project gets",
        "",
        *django_project_lines(data),
        "",
        "## Machine",
        "",
        *machine_lines(data["machine"], libraries),
        "",
        f"## Throughput (jobs/s, median of {cfg['rounds']} interleaved runs)",
        "",
        "In parentheses: django_bullq's rate divided by the peer's (above 1 = faster).",
        "Sizes: " + ", ".join(f"{k} {v:,}" for k, v in cfg["sizes"].items()) + " jobs; "
        f"processing runs stop after {cfg['max_seconds']} s.",
        "",
        *throughput_table(data, scenarios, libraries),
        "",
        "## Redis cost per job",
        "",
        "From the server's counters (`INFO commandstats`, `INFO cpu` used_cpu_sys + "
        "used_cpu_user) read before and after each run; commands include those run inside "
        "scripts; round trips are counted in the client (a pipeline counts once; — where "
        "the bench has no counter for the library's client). The "
        "predicted ceiling is 1,000,000 / Redis CPU µs per job: what one Redis core could "
        "serve if nothing else limited it.",
        "",
        "### Processing no-op jobs at concurrency 10",
        "",
        *cost_table(data, COST_SCENARIO, libraries),
        "",
        *(
            [
                "### Processing no-op jobs at concurrency 10, completed jobs removed",
                "",
                *cost_table(data, f"{COST_SCENARIO}_removed", libraries),
                "",
            ]
            if data["redis_cost"].get(f"{COST_SCENARIO}_removed")
            else []
        ),
        "### Single inserts from 10 producers",
        "",
        *cost_table(data, "single_insert_p10", libraries),
        "",
        *report_servers.lines(data, scenarios),
        "## Growth (django_bullq)",
        "",
        *growth_lines(data["growth"]),
        "",
        "## Targets of issue 5",
        "",
        *targets(data, int(cfg["io_ms"])),
        "",
        method,
    ]
    return "\n".join(parts).rstrip() + "\n"
