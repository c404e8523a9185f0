"""The comparison: every scenario for every library, rounds interleaved, medians kept."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from typing import Any

from .harness import Measurement, Settings, measure, spec_for
from .scenarios import Library, Scenario

#: scenario key -> library key -> the runs of that pair
Runs = dict[str, dict[str, list[Measurement]]]


def run_matrix(
    scenarios: Sequence[Scenario],
    libraries: Sequence[Library],
    sizes: dict[str, int],
    rounds: int,
    settings: Settings,
    client: Any,
) -> Runs:
    """``rounds`` rounds; in each, every scenario for every library (order rotated per round).

    The private server is flushed before each run. A library that answers "n/a" for a
    scenario is not asked again in later rounds.
    """
    runs: Runs = {s.key: {lib.key: [] for lib in libraries} for s in scenarios}
    for index in range(rounds):
        order = list(libraries[index % len(libraries) :]) + list(
            libraries[: index % len(libraries)]
        )
        for scenario in scenarios:
            for library in order:
                done = runs[scenario.key][library.key]
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
                )
                result = measure(library, spec, settings, client)
                done.append(result)
                _progress(index, scenario, library, result)
    return runs


def _progress(index: int, scenario: Scenario, library: Library, m: Measurement) -> None:
    if m.na:
        text = f"n/a ({m.na})"
    elif m.error:
        text = f"ERROR {m.error}"
    else:
        text = (
            f"{m.jobs_per_second:,.0f} jobs/s ({m.jobs} jobs in {m.seconds:.2f} s, "
            f"{m.cost.get('cpu_us_per_job', 0):.0f} µs Redis CPU/job, "
            f"{m.round_trips_per_job:.2f} round trips/job)"
        )
    print(
        f"[round {index + 1}] {scenario.key:18} {library.key:13} {text}",
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
    out["round_trips_per_job"] = round(statistics.median(m.round_trips_per_job for m in good), 2)
    out["ceiling_jobs_per_s"] = round(1e6 / out["cpu_us_per_job"]) if out["cpu_us_per_job"] else 0
    # The command mix of the median-rate run (it hardly varies between runs).
    middle = sorted(good, key=lambda m: m.jobs_per_second)[len(good) // 2]
    out["by_command"] = middle.cost["by_command"]
    return out
