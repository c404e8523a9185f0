"""The DST grid of the cron tests: zones, their two transitions, pattern kinds, and a brute-force
model of when a pattern runs (tests/core/test_cron_dst.py,
tests/interop/test_cron_parser_agreement.py).

The model reads every UTC minute of a window in the zone, so it needs no cron library and no
date arithmetic of the code under test. Its rules are the contract of docs/schedulers.md:

* a pattern with a fixed minute and hour ("fixed": daily, weekly) runs at the first instant of a
  wall-clock time (``fold == 0``), so a time that occurs twice runs once; a time inside a
  spring-forward gap runs once, at the first valid instant after the gap;
* a pattern with ``*`` in its minute or hour ("elapsed": hourly, every N minutes) runs at every
  instant whose wall-clock time matches, in both passes of a repeated hour.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

ZONES = (
    "UTC",
    "Europe/London",
    "Europe/Paris",
    "America/New_York",
    "Australia/Sydney",
    "Pacific/Auckland",
)
YEAR = 2021
MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
#: ``after`` instants of the grid, minutes from a transition.
OFFSETS_MIN = (-1500, -120, -61, -60, -31, -30, -1, 0, 1, 29, 30, 31, 59, 60, 61, 90, 120, 1500)
ALL_MINUTES = frozenset(range(60))
ALL_HOURS = frozenset(range(24))
ALL_DAYS = frozenset(range(7))


@dataclass(frozen=True)
class Spec:
    """A cron pattern and, for the model, the wall-clock fields it matches.

    Attributes:
        pattern: the cron-parser pattern. kind: daily / weekly / hourly / every.
        minutes / hours: matched values. days: matched days of week, cron numbering (0 = Sun).
        second: the second of each run (6-field patterns).
    """

    pattern: str
    kind: str
    minutes: frozenset[int]
    hours: frozenset[int] = ALL_HOURS
    days: frozenset[int] = ALL_DAYS
    second: int = 0

    @property
    def fixed(self) -> bool:
        return self.kind in ("daily", "weekly")

    def matches(self, wall: datetime) -> bool:
        return (
            wall.minute in self.minutes
            and wall.hour in self.hours
            and wall.isoweekday() % 7 in self.days
        )


def daily(minute: int, hour: int, second: int | None = None) -> Spec:
    text = f"{minute} {hour} * * *" if second is None else f"{second} {minute} {hour} * * *"
    return Spec(text, "daily", frozenset({minute}), frozenset({hour}), second=second or 0)


def weekly(minute: int, hour: int, day: int) -> Spec:
    return Spec(
        f"{minute} {hour} * * {day}",
        "weekly",
        frozenset({minute}),
        frozenset({hour}),
        frozenset({day}),
    )


def hourly(minute: int) -> Spec:
    return Spec(f"{minute} * * * *", "hourly", frozenset({minute}))


def every(n: int) -> Spec:
    return Spec(f"*/{n} * * * *", "every", frozenset(range(0, 60, n)))


SPECS = (
    daily(0, 1),
    daily(30, 1),
    daily(0, 2),
    daily(30, 2),
    daily(59, 2),
    daily(0, 3),
    daily(45, 0),
    daily(30, 2, second=0),
    daily(30, 1, second=15),
    daily(30, 2, second=15),
    Spec("0 6 * * MON", "weekly", frozenset({0}), frozenset({6}), frozenset({1})),
    weekly(30, 1, 0),
    weekly(30, 2, 0),
    weekly(0, 2, 6),
    hourly(0),
    hourly(30),
    hourly(59),
    every(15),
    every(7),
    every(30),
)


@cache
def transitions(tz: str, year: int = YEAR) -> tuple[tuple[int, str], ...]:
    """``((ms, "spring" | "fall"), ...)``: the instants the zone's UTC offset changes in
    ``year``. UTC has none: it gets New York's two instants, to run the same grid."""
    if tz == "UTC":
        return tuple((ms, kind) for ms, kind in transitions("America/New_York", year))
    zone = ZoneInfo(tz)
    found: list[tuple[int, str]] = []
    t = datetime(year, 1, 1, tzinfo=UTC)
    before = t.astimezone(zone).utcoffset()
    while t.year == year:
        nxt = t + timedelta(hours=1)
        after = nxt.astimezone(zone).utcoffset()
        if after != before:
            assert before is not None and after is not None
            # offsets change on a whole minute inside (t, nxt]: find it
            m = t
            while m.astimezone(zone).utcoffset() == before:
                m += timedelta(minutes=1)
            found.append((int(m.timestamp() * 1000), "spring" if after > before else "fall"))
            before = after
        t = nxt
    assert len(found) == 2, (tz, found)
    return tuple(found)


def window_ms(spec: Spec, transition_ms: int) -> tuple[int, int]:
    """The model's window around a transition: wide enough for every chain of the grid."""
    return transition_ms - 3 * DAY_MS, transition_ms + (20 if spec.kind == "weekly" else 6) * DAY_MS


@cache
def _walls(tz: str, lo: int, hi: int) -> tuple[tuple[int, datetime], ...]:
    zone = ZoneInfo(tz)
    return tuple(
        (t, datetime.fromtimestamp(t / 1000, UTC).astimezone(zone))
        for t in range(lo, hi + 1, MINUTE_MS)
    )


def model_runs(spec: Spec, tz: str, lo: int, hi: int) -> list[int]:
    """Every run of ``spec`` in ``tz`` in [lo, hi] (ms, sorted), by the rules above."""
    assert lo % MINUTE_MS == 0
    runs: set[int] = set()
    previous: datetime | None = None
    for t, wall in _walls(tz, lo, hi):
        if spec.matches(wall) and (wall.fold == 0 or not spec.fixed):
            runs.add(t + spec.second * 1000)
        if spec.fixed and previous is not None:
            skipped = previous.replace(tzinfo=None) + timedelta(minutes=1)
            while skipped < wall.replace(tzinfo=None):  # wall-clock times the clock jumped over
                if spec.matches(skipped):
                    runs.add(t + spec.second * 1000)
                skipped += timedelta(minutes=1)
        previous = wall
    return sorted(runs)


@cache
def model_for(spec: Spec, tz: str, transition_ms: int) -> tuple[int, ...]:
    return tuple(model_runs(spec, tz, *window_ms(spec, transition_ms)))


def model_next(spec: Spec, tz: str, transition_ms: int, after_ms: int, count: int) -> list[int]:
    """The model's next ``count`` runs strictly after ``after_ms``."""
    runs = model_for(spec, tz, transition_ms)
    i = bisect.bisect_right(runs, after_ms)
    assert i + count <= len(runs), "window too small for this chain"
    return list(runs[i : i + count])


def chain_length(spec: Spec) -> int:
    return 2 if spec.kind == "weekly" else 3 if spec.fixed else 6


@dataclass(frozen=True)
class Case:
    """One (zone, pattern, instant) case of the grid."""

    tz: str
    spec: Spec
    transition_ms: int
    kind: str
    after_ms: int


def grid() -> list[Case]:
    """6 zones x 2 transitions x ``SPECS`` x ``OFFSETS_MIN``."""
    return [
        Case(tz, spec, t, kind, t + offset * MINUTE_MS)
        for tz in ZONES
        for t, kind in transitions(tz)
        for spec in SPECS
        for offset in OFFSETS_MIN
    ]
