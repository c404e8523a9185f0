"""Cron schedules across DST transitions (issue 12, item 1): ``next_cron_millis`` on the issue's
cases and on a grid of zones x transitions x pattern kinds, and a deploy inside the repeated hour
through the real upsert and the real worker."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_bullq import Job, Queue
from django_bullq.core import scheduler as scheduler_mod
from django_bullq.core.scheduler import next_cron_millis
from django_bullq.core.worker import duties, outcome
from django_bullq.core.worker import worker as worker_mod
from tests.support import cron_grid
from tests.support.cron_grid import Spec
from tests.support.workerkit import make_worker, run_until


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def iso(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the issue's table ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "tz", "after", "expected"),
    [
        ("0 6 * * MON", "America/New_York", "2021-11-01T10:00Z", "2021-11-08T11:00:00Z"),
        ("30 1 * * *", "America/New_York", "2021-11-07T05:30Z", "2021-11-08T06:30:00Z"),
        ("30 1 * * *", "America/New_York", "2021-11-07T06:00Z", "2021-11-08T06:30:00Z"),
        ("30 2 * * *", "Europe/Paris", "2021-10-31T00:30Z", "2021-11-01T01:30:00Z"),
    ],
    ids=[
        "weekly-after-fall-back",
        "repeated-time-runs-once",
        "from-inside-repeated-hour",
        "paris-repeated-time",
    ],
)
def test_issue_table_rows(pattern: str, tz: str, after: str, expected: str) -> None:
    got = next_cron_millis(pattern, ms(after), tz)
    assert got is not None and got > ms(after)
    assert iso(got) == expected


def test_spring_forward_time_runs_once_at_first_valid_instant() -> None:
    # 02:30 does not exist in New York on 2021-03-14: 01:59:59 EST is followed by 03:00 EDT
    first = next_cron_millis("30 2 * * *", ms("2021-03-14T06:00Z"), "America/New_York")
    assert first is not None and iso(first) == "2021-03-14T07:00:00Z"
    again = next_cron_millis("30 2 * * *", first, "America/New_York")
    assert again is not None and iso(again) == "2021-03-15T06:30:00Z"


# --- the grid ---------------------------------------------------------------------------------


def chain(spec: Spec, tz: str, after: int, count: int) -> list[int]:
    """``count`` runs, each computed from the previous one as the worker does."""
    out: list[int] = []
    for _ in range(count):
        nxt = next_cron_millis(spec.pattern, after, tz)
        assert nxt is not None
        out.append(nxt)
        after = nxt
    return out


def check_case(spec: Spec, tz: str, transition_ms: int, after: int) -> None:
    """The property: from any instant, the next runs are after it, increasing, and exactly the
    model's runs (a repeated time once, a skipped time once after the gap, elapsed patterns in
    both passes)."""
    count = cron_grid.chain_length(spec)
    got = chain(spec, tz, after, count)
    assert got[0] > after and all(b > a for a, b in zip(got, got[1:], strict=False))
    expected = cron_grid.model_next(spec, tz, transition_ms, after, count)
    assert got == expected, (
        spec.pattern,
        tz,
        iso(after),
        [iso(g) for g in got],
        [iso(e) for e in expected],
    )
    if spec.kind == "daily":  # one run per local day
        zone = ZoneInfo(tz)
        days = Counter(datetime.fromtimestamp(g / 1000, zone).date() for g in got)
        assert max(days.values()) == 1, days


def test_grid_of_zones_transitions_and_pattern_kinds() -> None:
    cases = cron_grid.grid()
    kinds = {case.spec.kind for case in cases}
    assert kinds == {"daily", "weekly", "hourly", "every"}
    assert {case.tz for case in cases} == set(cron_grid.ZONES)
    assert len(cases) == 6 * 2 * len(cron_grid.SPECS) * len(cron_grid.OFFSETS_MIN)
    for case in cases:
        check_case(case.spec, case.tz, case.transition_ms, case.after_ms)


PATTERNS = st.one_of(
    st.builds(cron_grid.daily, st.integers(0, 59), st.integers(0, 23)),
    st.builds(cron_grid.daily, st.integers(0, 59), st.integers(0, 23), st.integers(0, 59)),
    st.builds(cron_grid.weekly, st.integers(0, 59), st.integers(0, 23), st.integers(0, 6)),
    st.builds(cron_grid.hourly, st.integers(0, 59)),
    st.builds(cron_grid.every, st.integers(1, 59)),
)


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    tz=st.sampled_from(cron_grid.ZONES),
    which=st.sampled_from([0, 1]),
    spec=PATTERNS,
    offset_ms=st.integers(-2 * cron_grid.DAY_MS, 2 * cron_grid.DAY_MS),
)
def test_property_random_patterns_and_instants_around_transitions(
    tz: str, which: int, spec: Spec, offset_ms: int
) -> None:
    transition_ms, _ = cron_grid.transitions(tz)[which]
    check_case(spec, tz, transition_ms, transition_ms + offset_ms)


# --- a deploy inside the repeated hour, through the real upsert and worker -------------------


@dataclass
class Clock:
    """The time our code reads (``now_ms`` of the scheduler and of the worker)."""

    now: int

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    fake = Clock(0)
    monkeypatch.setattr(scheduler_mod, "now_ms", fake)
    for module in (worker_mod, outcome, duties):  # every worker module that reads the time
        monkeypatch.setattr(module, "now_ms", fake)
    yield fake


NY = ZoneInfo("America/New_York")
DAILY_0130 = {"pattern": "30 1 * * *", "tz": "America/New_York"}


def scheduler_state(queue: Queue, scheduler_id: str) -> tuple[int | None, list[str]]:
    """(zset score, ids of pending iterations)."""
    found = queue.get_job_scheduler(scheduler_id)
    ids = [
        i
        for i in queue.get_job_ids("waiting", "delayed", "prioritized")
        if i.startswith(f"repeat:{scheduler_id}:")
    ]
    return (found.next_millis if found else None), ids


async def run_iterations(queue: Queue, ran: list[str], count: int) -> None:
    """Run the real worker until ``count`` more iterations ran (fails after 10 s)."""
    target = len(ran) + count

    def record(job: Job) -> None:
        ran.append(job.id)

    await run_until(make_worker(queue, record), lambda: len(ran) >= target)
    await asyncio.sleep(0)


@pytest.mark.parametrize("remove_on_complete", [True, False], ids=["removed", "kept"])
async def test_deploy_inside_repeated_hour_runs_once_and_keeps_schedule(
    queue: Queue, clock: Clock, *, remove_on_complete: bool
) -> None:
    template: dict[str, Any] = {
        "name": "nightly",
        "opts": {"remove_on_complete": remove_on_complete},
    }
    # the schedule exists before the night: upserted at 00:10 EDT
    clock.now = ms("2021-11-07T04:10Z")
    first = queue.upsert_job_scheduler("n", DAILY_0130, template)
    assert first is not None and first.id == f"repeat:n:{ms('2021-11-07T05:30Z')}"
    # 01:30 EDT: it runs, and its activation schedules the next one
    clock.now = ms("2021-11-07T05:30Z")
    ran: list[str] = []
    await run_iterations(queue, ran, 1)
    nxt = ms("2021-11-08T06:30Z")  # 01:30 EST the next day
    assert scheduler_state(queue, "n") == (nxt, [f"repeat:n:{nxt}"])
    # 01:15 EST, inside the repeated hour: a deploy re-upserts (twice: two pods)
    clock.now = ms("2021-11-07T06:15Z")
    for _ in range(2):
        again = queue.upsert_job_scheduler("n", DAILY_0130, template)
        assert again is not None and again.id == f"repeat:n:{nxt}"
    assert scheduler_state(queue, "n") == (nxt, [f"repeat:n:{nxt}"])
    # the night goes on: nothing else is due that day; the next day's run happens
    clock.now = ms("2021-11-07T06:45Z")
    assert queue.upsert_job_scheduler("n", DAILY_0130, template) is not None
    clock.now = nxt
    await run_iterations(queue, ran, 1)
    days = Counter(
        datetime.fromtimestamp(int(i.rsplit(":", 1)[1]) / 1000, NY).date().isoformat() for i in ran
    )
    assert days == {"2021-11-07": 1, "2021-11-08": 1}, ran
    score, ids = scheduler_state(queue, "n")
    assert score == ms("2021-11-09T06:30Z") > clock.now and ids == [f"repeat:n:{score}"]


async def test_reupsert_in_repeated_hour_after_first_pass_never_doubles(
    queue: Queue, clock: Clock
) -> None:
    """The first 01:30 ran; the schedule is then re-created from scratch inside the repeated
    hour (scheduler removed, finished iteration kept): the next run is the next day."""
    clock.now = ms("2021-11-07T05:29Z")
    assert queue.upsert_job_scheduler("n", DAILY_0130, {"name": "nightly"}) is not None
    clock.now = ms("2021-11-07T05:30Z")
    ran: list[str] = []
    await run_iterations(queue, ran, 1)
    assert queue.remove_job_scheduler("n") is True
    clock.now = ms("2021-11-07T06:05Z")  # 01:05 EST
    job = queue.upsert_job_scheduler("n", DAILY_0130, {"name": "nightly"})
    assert job is not None and job.id == f"repeat:n:{ms('2021-11-08T06:30Z')}"
    assert job.delay > 0


async def test_reupsert_keeps_a_due_run_that_has_not_started(queue: Queue, clock: Clock) -> None:
    """Workers are down when the 01:30 run comes due; the deploy that brings them back
    re-upserts at 01:31: that run stays pending and runs once, the next one is tomorrow's."""
    template: dict[str, Any] = {"name": "nightly"}
    clock.now = ms("2021-11-07T05:00Z")
    due = f"repeat:n:{ms('2021-11-07T05:30Z')}"
    first = queue.upsert_job_scheduler("n", DAILY_0130, template)
    assert first is not None and first.id == due
    clock.now = ms("2021-11-07T05:31Z")
    again = queue.upsert_job_scheduler("n", DAILY_0130, template)
    assert again is not None and again.id == due
    ran: list[str] = []
    await run_iterations(queue, ran, 1)
    assert ran == [due]
    assert scheduler_state(queue, "n") == (
        ms("2021-11-08T06:30Z"),
        [f"repeat:n:{ms('2021-11-08T06:30Z')}"],
    )
    # a changed pattern is a new schedule: the due 01:30 run is replaced by its next time
    clock.now = ms("2021-11-08T06:31Z")
    changed = queue.upsert_job_scheduler("n", {**DAILY_0130, "pattern": "45 1 * * *"}, template)
    assert changed is not None and changed.id == f"repeat:n:{ms('2021-11-08T06:45Z')}"
