"""Cron patterns as BullMQ reads them (cron-parser's syntax), computed with ``cronsim``.

:func:`next_cron_millis` answers a pattern's next run in ms since epoch, in a time zone and
across DST transitions (docs/schedulers.md); :func:`validate_cron` checks a pattern and zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

__all__ = ["next_cron_millis", "validate_cron"]


def _zone(tz: str | None) -> Any:
    if not tz:
        return UTC
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {tz!r}") from exc


#: cron-parser's predefined expressions (BullMQ takes them as patterns), as 5 / 6 fields.
_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@hourly": "0 * * * *",
    "@minutely": "* * * * *",
    "@secondly": "* * * * * *",
}
#: ``*`` in a day field stands for this range when it carries a step (``*/2``).
_DAY_RANGES = {3: "1-31", 5: "0-6"}  # index in the 6-field form: day of month, day of week


@dataclass(frozen=True, slots=True)
class _Cron:
    """A cron-parser pattern spelled for ``cronsim``.

    Attributes:
        expr: cronsim expression (5 fields, or 6 with seconds first).
        second: s added to each time of ``expr``: a 6-field pattern whose seconds field is one
            number is run as its 5-field form shifted by that many seconds, so that it gets
            the wall-clock handling of DST transitions that cronsim gives 5-field patterns.
    """

    expr: str
    second: int


def _day_field(value: str, index: int) -> str:
    """A day field in cronsim's dialect with cron-parser's meaning: ``?`` is ``*``; ``*/n`` is a
    restriction (so days of month and of week are OR-ed), written as a range for cronsim."""
    if value == "?":
        return "*"
    if "LW" in value.upper():  # cronsim has it, cron-parser refuses it
        raise ValueError("LW")
    return ",".join(
        _DAY_RANGES[index] + item[1:] if item.startswith("*") and item != "*" else item
        for item in value.split(",")
    )


def _parse_cron(pattern: str) -> _Cron:
    """The cronsim form of a cron-parser pattern. Raises ValueError when invalid."""
    fields = (
        _ALIASES.get(pattern.strip().lower(), pattern).split() if isinstance(pattern, str) else []
    )
    try:
        if len(fields) not in (5, 6):
            raise ValueError("wrong number of fields")
        full = fields if len(fields) == 6 else ["0", *fields]
        full = [_day_field(v, i) if i in _DAY_RANGES else v for i, v in enumerate(full)]
        second = int(full[0]) if full[0].isdigit() and int(full[0]) < 60 else None
        cron = _Cron(" ".join(full[1:]), second) if second is not None else _Cron(" ".join(full), 0)
        CronSim(cron.expr, datetime(2000, 1, 1, tzinfo=UTC))  # parses the fields
    except (ValueError, CronSimError) as exc:
        raise ValueError(
            f"invalid cron pattern {pattern!r} (5 fields, or 6 with seconds first)"
        ) from exc
    return cron


def validate_cron(pattern: str, tz: str | None = None) -> None:
    """Raise ValueError unless ``pattern`` is a valid cron-parser pattern and ``tz`` a zone.

    cron-parser's syntax, which BullMQ uses: ``min hour dom month dow``, or
    ``sec min hour dom month dow`` with 6 fields; names (``MON``, ``JAN``), ``?``, ``L``,
    ``5L`` and ``FRI#2``; the ``@daily``-style aliases. Not ``H`` nor ``LW``.
    """
    _parse_cron(pattern)
    _zone(tz)


def next_cron_millis(
    pattern: str,
    after_ms: int,
    tz: str | None = None,
    start_date: int | None = None,
    end_date: int | None = None,
) -> int | None:
    """Next occurrence of a cron pattern strictly after ``max(after_ms, start_date)``.

    Reads the pattern as cron-parser (BullMQ's) does: 6 fields mean seconds first; days of
    month and of week are OR-ed when both are restricted; wall-clock times are read in ``tz``
    (UTC when None). Computed with ``cronsim``; across DST transitions (docs/schedulers.md):

    * a pattern with a fixed minute and hour (daily, weekly, ...) runs once at a wall-clock
      time that occurs twice (fall-back), at its first instant; a time that does not exist
      (spring-forward) runs once, at the first valid time after the gap;
    * a pattern with ``*`` in its minute or hour field (hourly, every N minutes) follows
      elapsed time: it runs in both passes of a repeated hour and never inside a gap.

    Args:
        pattern: cron pattern. after_ms / start_date / end_date: ms since epoch.
        tz: IANA time zone name, e.g. ``"Europe/Paris"``.

    Returns:
        ms since epoch, always > ``after_ms``; None when the next occurrence is after
        ``end_date`` (or there is none within 50 years).

    Raises:
        ValueError: invalid pattern or time zone.
    """
    cron = _parse_cron(pattern)
    zone = _zone(tz)
    base = max(after_ms, start_date or 0)
    shift_ms = cron.second * 1000
    # cronsim starts from whole seconds and answers times after the start second
    start = datetime.fromtimestamp((base - shift_ms) // 1000, tz=zone)
    millis: int | None = None
    for when in CronSim(cron.expr, start):
        candidate = int(when.timestamp()) * 1000 + shift_ms
        # Started inside a repeated hour, cronsim answers the first instant of that wall-clock
        # time, which has passed: that time has had its run, take the next one.
        if candidate > base:
            millis = candidate
            break
    if millis is None or (end_date is not None and millis > end_date):
        return None
    return millis
