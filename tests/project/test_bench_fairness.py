"""The fairness rules of ``make bench`` (benchmarks/method.md), without running any library.

Each rule of issue 14 is one test: the library order is a Latin square over rounds and
scenarios, the ``*_removed`` rows tell every adapter to remove completed jobs, the cap runs
from the first job, the round-trip counter counts connection set-up and never reports 0 for a
client it does not see, and a library may name the venv whose interpreter runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import pytest

from benchmarks import matrix, report
from benchmarks.adapters import common
from benchmarks.harness import Measurement, Settings, measure, spec_for
from benchmarks.scenarios import LIBRARIES, ROOT, SCENARIOS, Library, Scenario

SETTINGS = Settings(url="redis://127.0.0.1:1/0", python=sys.executable, node="node")


def test_every_library_runs_in_every_position_across_rounds_and_scenarios() -> None:
    rounds = 3
    positions: dict[str, set[int]] = {lib.key: set() for lib in LIBRARIES}
    for index in range(rounds):
        for scenario_index in range(len(SCENARIOS)):
            order = matrix.library_order(LIBRARIES, index, scenario_index, rounds)
            assert sorted(lib.key for lib in order) == sorted(positions)
            for position, lib in enumerate(order):
                positions[lib.key].add(position)
    assert all(seen == set(range(len(LIBRARIES))) for seen in positions.values()), positions


def test_rounds_of_one_scenario_rotate_the_order() -> None:
    libs = LIBRARIES[:4]
    firsts = [matrix.library_order(libs, index, 0, 4)[0].key for index in range(4)]
    assert sorted(firsts) == sorted(lib.key for lib in libs)


def test_removed_scenarios_ask_every_adapter_to_remove_completed_jobs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    removed = {s.key for s in SCENARIOS if s.remove_completed}
    assert {"noop_c10_removed", "noop_c50_removed"} <= removed
    specs: list[dict[str, Any]] = []

    def fake_measure(library: Library, spec: dict[str, Any], *_: Any) -> Measurement:
        specs.append(spec)
        return Measurement(jobs=1, seconds=1.0, round_trips=1)

    class Client:
        def flushall(self) -> None:
            pass

    monkeypatch.setattr(matrix, "measure", fake_measure)
    chosen = [s for s in SCENARIOS if s.key in ("noop_c10", "noop_c10_removed")]
    matrix.run_matrix(chosen, LIBRARIES[:2], {s.key: 10 for s in chosen}, 1, SETTINGS, Client())
    flags = {(spec["queue"], spec["remove_completed"]) for spec in specs}
    assert flags == {("bench-noop_c10", False), ("bench-noop_c10_removed", True)}


def test_the_cap_starts_at_the_first_job_not_at_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    ended = threading.Event()
    results: list[tuple[int, float]] = []

    def fake_finish(jobs: int, seconds: float, **_: Any) -> None:
        results.append((jobs, seconds))
        ended.set()

    monkeypatch.setattr(common, "finish", fake_finish)
    tally = common.Tally({"jobs": 5, "max_seconds": 0.05})
    tally.arm()
    assert not ended.wait(0.3), "the cap ran out before any job started"
    tally.started()
    tally.done()
    assert ended.wait(10), "the cap never ended the run"
    assert results[0][0] == 1


def test_round_trips_not_measured_are_null_and_shown_as_a_dash() -> None:
    runs = [Measurement(jobs=10, seconds=1.0, round_trips=None, cost=_cost())]
    assert runs[0].round_trips_per_job is None
    cost = matrix.median_cost(runs)
    assert cost is not None and cost["round_trips_per_job"] is None
    data = {"redis_cost": {"noop_c10": {"x": cost}}}
    (row,) = report.cost_table(data, "noop_c10", [Library("x", "X", "m", "")])[2:]
    assert row.endswith("| 100,000 | — |")


def test_a_counted_client_reports_its_requests(redis_url: str) -> None:
    """A fresh redis-py connection opened after ready counts its set-up commands (CLIENT
    SETINFO, SELECT, ...) beside the PING: more than one request."""
    trips = _round_trips_in_child(
        f"import redis; c = redis.Redis.from_url({redis_url!r}); c.ping(); c.close()"
    )
    assert trips is not None and trips >= 2


def test_a_client_no_counter_sees_reports_none_not_zero() -> None:
    assert _round_trips_in_child("pass") is None


def test_a_library_with_its_own_venv_runs_its_interpreter() -> None:
    lib = Library("x", "X", "benchmarks.adapters.arq_", "arq", venv=".venv-bench-arq")
    command = lib.command({}, sys.executable, "node")
    assert command[0] == str(ROOT / ".venv-bench-arq" / "bin" / "python")
    assert Library("y", "Y", "m", "").command({}, "/some/python", "node")[0] == "/some/python"


def test_a_missing_interpreter_is_an_error_of_that_run() -> None:
    lib = Library("x", "X", "benchmarks.adapters.arq_", "arq", venv=".venv-absent")
    spec = spec_for(SETTINGS, "q", "bulk_insert", 1)
    m = measure(lib, spec, SETTINGS, client=None)
    assert not m.ok and "cannot start" in m.error


def test_every_processing_scenario_has_its_removed_twin_for_noop() -> None:
    keys = {s.key: s for s in SCENARIOS}
    for base in ("noop_c10", "noop_c50"):
        twin: Scenario = keys[f"{base}_removed"]
        assert (twin.kind, twin.concurrency, twin.work) == (
            keys[base].kind,
            keys[base].concurrency,
            keys[base].work,
        )
        assert not keys[base].remove_completed


def _cost() -> dict[str, Any]:
    return {
        "commands_per_job": 1.0,
        "scripts_per_job": 0.0,
        "cpu_us_per_job": 10.0,
        "main_thread_cpu_pct": 1.0,
        "by_command": {},
    }


def _round_trips_in_child(code: str) -> int | None:
    """``common.round_trips()`` after ``code`` ran in a fresh interpreter with the counters on
    (the counters patch redis-py for the whole process, so never in this one)."""
    script = (
        "import json, itertools\n"
        "from benchmarks.adapters import common\n"
        "common.count_round_trips()\n"
        "common._base = next(common._sends)\n"
        f"{code}\n"
        "print(json.dumps(common.round_trips()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    value: int | None = json.loads(done.stdout.strip().splitlines()[-1])
    return value


def test_the_report_names_each_librarys_event_loop() -> None:
    runs = {
        "noop_c10": {
            "a": [Measurement(jobs=1, seconds=1.0, extra={"event_loop": "uvloop"}, cost=_cost())],
            "b": [Measurement(jobs=1, seconds=1.0, cost=_cost())],
        }
    }
    scenario = next(s for s in SCENARIOS if s.key == "noop_c10")
    data = report.results(runs, [scenario], {}, {}, {})
    assert data["machine"]["event_loops"] == {"a": "uvloop"}
    assert set(data) >= {"noop_c10", "redis_cost", "runs", "machine", "config"}
