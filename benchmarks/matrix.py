"""The comparison: every scenario for every library, rounds interleaved, medians kept."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from typing import Any

from .harness import Measurement, Settings, measure, spec_for
from .scenarios import Library, Scenario
from .servers import Target, time_pings

#: scenario key -> library key -> the runs of that pair
Runs = dict[str, dict[str, list[Measurement]]]


def library_order(
    libraries: Sequence[Library], round_index: int, scenario_index: int, rounds: int
) -> list[Library]:
    """The order of ``libraries`` for one scenario of one round: a row of a cyclic Latin square.

    Row ``round_index + scenario_index * rounds`` (mod the number of libraries): the rounds
    of one scenario take consecutive rows and each scenario starts where the last one left
    off, so once scenarios x rounds reaches the number of libraries every library has run in
    every position, and no library is always first after a flush or always after the same
    heavy neighbour.
    """
    n = len(libraries)
    shift = (round_index + scenario_index * rounds) % n if n else 0
    return list(libraries[shift:]) + list(libraries[:shift])


def run_matrix(
    scenarios: Sequence[Scenario],
    libraries: Sequence[Library],
    sizes: dict[str, int],
    rounds: int,
    settings: Settings,
    client: Any,
) -> Runs:
    """``rounds`` rounds; in each, every scenario for every library (order: :func:`library_order`).

    The private server is flushed before each run. A library that answers "n/a" for a
    scenario is not asked again in later rounds.
    """
    return _rounds(scenarios, libraries, sizes, rounds, [("", settings, client, None)], None)[""]


def run_servers(
    scenarios: Sequence[Scenario],
    libraries: Sequence[Library],
    sizes: dict[str, int],
    rounds: int,
    targets: Sequence[Target],
) -> dict[str, Runs]:
    """:func:`run_matrix` on several servers in the same rounds: server key -> its runs.

    Each library's turn at a scenario runs it on every server back to back, the servers'
    order rotating with the round and the library's position, so a server is not always
    first (or always after the same one); a target with ``libs`` runs only those libraries.
    Each round starts with a PING loop on every server
    (:func:`benchmarks.servers.time_pings`, samples kept in ``Target.pings``).
    """
    slots = [(t.key, t.settings, t.client, t.libs) for t in targets]
    return _rounds(scenarios, libraries, sizes, rounds, slots, targets)


def _rounds(
    scenarios: Sequence[Scenario],
    libraries: Sequence[Library],
    sizes: dict[str, int],
    rounds: int,
    slots: Sequence[tuple[str, Settings, Any, frozenset[str] | None]],
    targets: Sequence[Target] | None,
) -> dict[str, Runs]:
    by_server: dict[str, Runs] = {
        key: {
            s.key: {lib.key: [] for lib in libraries if only is None or lib.key in only}
            for s in scenarios
        }
        for key, _, _, only in slots
    }
    tagged = len(slots) > 1
    for index in range(rounds):
        for target in targets or ():
            target.pings.extend(time_pings(target.client))
        for position, scenario in enumerate(scenarios):
            for turn, library in enumerate(library_order(libraries, index, position, rounds)):
                shift = (index + position + turn) % len(slots)
                for key, settings, client, only in [*slots[shift:], *slots[:shift]]:
                    if only is not None and library.key not in only:
                        continue
                    done = by_server[key][scenario.key][library.key]
                    if done and done[0].na:
                        continue
                    client.flushall()
                    spec = spec_for(
                        settings,
                        f"bench-{scenario.key}",
                        scenario.kind,
                        sizes[scenario.key],
                        scenario.concurrency,
                        scenario.work,
                        remove_completed=scenario.remove_completed,
                    )
                    result = measure(library, spec, settings, client)
                    done.append(result)
                    _progress(index, scenario, library, result, key if tagged else "")
    return by_server


def _progress(
    index: int, scenario: Scenario, library: Library, m: Measurement, server: str = ""
) -> None:
    if m.na:
        text = f"n/a ({m.na})"
    elif m.error:
        text = f"ERROR {m.error}"
    else:
        per_job = m.round_trips_per_job
        text = (
            f"{m.jobs_per_second:,.0f} jobs/s ({m.jobs} jobs in {m.seconds:.2f} s, "
            f"{m.cost.get('cpu_us_per_job', 0):.0f} µs Redis CPU/job, "
            f"{'—' if per_job is None else f'{per_job:.2f}'} round trips/job"
            + (
                f", {m.extra['cpu_s'] * 1e6 / m.jobs:.0f} µs client process CPU/job)"
                if "cpu_s" in m.extra and m.jobs
                else ")"
            )
        )
    print(
        f"[round {index + 1}] {scenario.key:18} {library.key:16} "
        + (f"{server:11} " if server else "")
        + text,
        file=sys.stderr,
        flush=True,
    )


def median_rate(runs: list[Measurement]) -> float | None:
    """Median jobs/s of the successful runs, None when there is none."""
    rates = [m.jobs_per_second for m in runs if m.ok]
    return statistics.median(rates) if rates else None


def median_cost(runs: list[Measurement]) -> dict[str, Any] | None:
    """Medians of the per-job Redis figures of the successful runs (round trips included)."""
    good = [m for m in runs if m.ok and m.cost]
    if not good:
        return None
    fields = ("commands_per_job", "scripts_per_job", "cpu_us_per_job", "main_thread_cpu_pct")
    out: dict[str, Any] = {f: round(statistics.median(m.cost[f] for m in good), 2) for f in fields}
    # None ("not measured") when the adapter's counters do not see the library's client.
    trips = [t for m in good if (t := m.round_trips_per_job) is not None]
    # 4 places: a bulk insert's one round trip per chunk is 0.001 per job, not 0
    out["round_trips_per_job"] = round(statistics.median(trips), 4) if trips else None
    out["ceiling_jobs_per_s"] = round(1e6 / out["cpu_us_per_job"]) if out["cpu_us_per_job"] else 0
    # The command mix of the median-rate run (it hardly varies between runs).
    middle = sorted(good, key=lambda m: m.jobs_per_second)[len(good) // 2]
    out["by_command"] = middle.cost["by_command"]
    return out
