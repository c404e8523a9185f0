"""Our cron next runs against cron-parser's (what Node BullMQ computes) on the DST grid of
tests/support/cron_grid.py: the same instants, except documented cases (docs/schedulers.md) where
cron-parser runs a wall-clock time twice, or runs a skipped time late or not at all."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from django_bullq.core.scheduler import next_cron_millis
from tests.interop.helpers import Node
from tests.support import cron_grid
from tests.support.cron_grid import Case, Spec

pytestmark = pytest.mark.interop

BATCH = 1000  # cases per cron_next.mjs call (the spec travels as one argv string)


def cron_parser_next(node: Node, asks: list[tuple[str, str, int]]) -> list[int]:
    out: list[int] = []
    for i in range(0, len(asks), BATCH):
        report = node.run(
            "cron_next",
            {
                "cases": [
                    {"pattern": pattern, "tz": tz, "after": after}
                    for pattern, tz, after in asks[i : i + BATCH]
                ]
            },
        )
        out += [int(n[0]) for n in report["next"]]
    assert len(out) == len(asks)
    return out


def second_pass_of_repeated_time(spec: Spec, tz: str, theirs: int, after: int) -> bool:
    """cron-parser asked from inside a repeated hour, after a matching time's first instant,
    answers that time's second instant (it runs twice); we answer the next day's."""
    wall = datetime.fromtimestamp(theirs / 1000, UTC).astimezone(ZoneInfo(tz))
    first = wall.replace(fold=0).timestamp() * 1000
    return wall.fold == 1 and spec.matches(wall) and first <= after


def skipped_time_read_with_old_offset(spec: Spec, tz: str, transition_ms: int, theirs: int) -> bool:
    """For a wall-clock time inside a spring-forward gap, cron-parser answers it read with the
    offset before the transition (02:30 -> 03:30); we answer the end of the gap (03:00)."""
    zone = ZoneInfo(tz)
    before = datetime.fromtimestamp((transition_ms - 1) / 1000, UTC).astimezone(zone)
    offset = before.utcoffset()
    assert offset is not None
    wall = (datetime.fromtimestamp(theirs / 1000, UTC) + offset).replace(tzinfo=None)
    as_zone = wall.replace(tzinfo=zone)
    imaginary = as_zone.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall
    return imaginary and spec.matches(wall)


def test_next_runs_agree_with_cron_parser_on_the_dst_grid(node: Node) -> None:
    cases = cron_grid.grid()
    # the grid's instants, and every run of our chains (the worker asks from the last run)
    asks: dict[tuple[str, str, int], Case] = {}
    for case in cases:
        after = case.after_ms
        asks.setdefault((case.spec.pattern, case.tz, after), case)
        for _ in range(cron_grid.chain_length(case.spec)):
            nxt = next_cron_millis(case.spec.pattern, after, case.tz)
            assert nxt is not None
            after = nxt
            asks.setdefault((case.spec.pattern, case.tz, after), case)
    keys = list(asks)
    theirs = cron_parser_next(node, keys)
    tally: Counter[str] = Counter()
    unexplained = []
    for (pattern, tz, after), their in zip(keys, theirs, strict=True):
        case = asks[(pattern, tz, after)]
        ours = next_cron_millis(pattern, after, tz)
        if ours == their:
            tally[f"agree {case.spec.kind}"] += 1
        elif (
            case.spec.fixed
            and case.kind == "fall"
            and second_pass_of_repeated_time(case.spec, tz, their, after)
        ):
            assert ours is not None and ours > their
            tally["cron-parser runs a repeated time twice"] += 1
        elif (
            case.spec.fixed
            and case.kind == "spring"
            and skipped_time_read_with_old_offset(case.spec, tz, case.transition_ms, their)
        ):
            tally["cron-parser runs a skipped time an hour late"] += 1
        elif (
            case.spec.fixed
            and case.kind == "spring"
            and after == case.transition_ms
            and ours == case.transition_ms + case.spec.second * 1000
            and their > ours
        ):
            # asked at the very end of the gap, cron-parser no longer runs the skipped time
            tally["cron-parser drops a skipped time asked at the end of the gap"] += 1
        else:
            unexplained.append((pattern, tz, after, ours, their))
    assert unexplained == [], unexplained[:10]
    # every kind agrees on most instants, elapsed-time kinds on all of them
    assert {k for k in tally if k.startswith("agree")} == {
        "agree daily",
        "agree weekly",
        "agree hourly",
        "agree every",
    }
    assert tally["cron-parser runs a repeated time twice"] > 0
    assert tally["cron-parser runs a skipped time an hour late"] > 0
    agreed = sum(v for k, v in tally.items() if k.startswith("agree"))
    assert agreed >= 0.9 * len(keys), tally
    print(f"{len(keys)} instants: {dict(tally)}")  # the report in -s runs


def test_cron_parser_agrees_on_the_issue_rows(node: Node) -> None:
    """The issue's four rows and the spring-forward case, ours and cron-parser's side by side."""

    def ms(text: str) -> int:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)

    rows = [
        ("0 6 * * MON", "America/New_York", ms("2021-11-01T10:00Z")),
        ("30 1 * * *", "America/New_York", ms("2021-11-07T05:30Z")),
        ("30 1 * * *", "America/New_York", ms("2021-11-07T06:00Z")),
        ("30 2 * * *", "Europe/Paris", ms("2021-10-31T00:30Z")),
        ("30 2 * * *", "America/New_York", ms("2021-03-14T06:00Z")),
    ]
    theirs = cron_parser_next(node, rows)
    ours = [next_cron_millis(p, a, tz) for p, tz, a in rows]
    hour = int(timedelta(hours=1).total_seconds() * 1000)
    assert ours[:2] == theirs[:2] and ours[3] == theirs[3]
    # inside the repeated hour cron-parser gives 01:30 EST the same day (a second run)
    assert theirs[2] == ms("2021-11-07T06:30Z") and ours[2] == theirs[2] + 24 * hour
    # 02:30 does not exist: cron-parser 03:30 EDT, we the end of the gap, 03:00 EDT
    assert theirs[4] == ms("2021-03-14T07:30Z") and ours[4] == theirs[4] - hour // 2
