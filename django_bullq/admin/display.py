"""How the admin pages show a job's times, durations, progress and failures.

Times are epoch **ms** (BullMQ's ``timestamp``, ``processedOn``, ``finishedOn``), shown as local
wall-clock time in Django's current time zone (``django.utils.timezone``) with the UTC value on
hover; durations are ms shown in units (``10.25 s``, ``1 min 3 s``). ``bullq-events.js`` formats
the values of live snapshots the same way (``BullqEvents.format``), so a page reads alike before
and after an update. Every function returns text or markup built with ``format_html``: job data
comes from any producer (Node, PyPI BullMQ) and is always escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from django.utils import dateformat, formats, timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..failures import parse_trace

if TYPE_CHECKING:
    from ..core.job import Job

#: Shown for a time or duration that is not known (yet).
UNKNOWN = "–"


def duration_text(ms: int | float | None) -> str:
    """``ms`` milliseconds in units: ``250 ms``, ``10.25 s`` (hundredths, rounded half up,
    the locale's decimal separator), ``1 min 3 s``, ``2 h 5 min``, ``1 d 1 h``; ``"–"`` for
    None or a negative value. Unit symbols are SI's, the same in every language."""
    if ms is None or ms < 0:
        return UNKNOWN
    ms = int(ms)
    if ms < 1000:
        return f"{ms} ms"
    hundredths = (ms + 5) // 10
    if hundredths < 6000:
        text = f"{hundredths // 100}.{hundredths % 100:02d}".rstrip("0").rstrip(".")
        return text.replace(".", str(formats.get_format("DECIMAL_SEPARATOR"))) + " s"
    seconds = hundredths // 100
    for big, big_unit, small, small_unit in (
        (86_400, "d", 3600, "h"),
        (3600, "h", 60, "min"),
        (60, "min", 1, "s"),
    ):
        if seconds >= big:
            rest = (seconds % big) // small
            return f"{seconds // big} {big_unit}" + (f" {rest} {small_unit}" if rest else "")
    raise AssertionError("unreachable: seconds >= 60 here")


def _moment(ms: int | float | None) -> datetime | None:
    if ms is None or isinstance(ms, bool) or ms <= 0:
        return None
    try:
        return datetime.fromtimestamp(int(ms) / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def utc_text(ms: int | float | None) -> str:
    """Epoch ``ms`` as ``2026-03-01 12:00:00.250 UTC``; ``"–"`` when empty or not a time."""
    moment = _moment(ms)
    if moment is None:
        return UNKNOWN
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{int(ms or 0) % 1000:03d} UTC"


def local_text(ms: int | float | None) -> str:
    """Epoch ``ms`` in the current time zone: ``2026-03-01 13:00:00 UTC+01:00`` (``UTC`` alone
    at offset zero); ``"–"`` when empty or not a time."""
    moment = _moment(ms)
    if moment is None:
        return UNKNOWN
    local = timezone.localtime(moment)
    offset = local.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset else 0
    sign = "-" if minutes < 0 else "+"
    zone = f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}" if minutes else "UTC"
    return f"{dateformat.format(local, 'Y-m-d H:i:s')} {zone}"


def time_html(ms: int | float | None, field: str = "") -> SafeString:
    """A ``<time>`` element: local time as text, UTC on hover (``title``), ISO ``datetime``.

    Args:
        ms: epoch milliseconds, or None / 0 for not yet.
        field: the snapshot field the live page updates it from (``processedOn``), or "".
    """
    moment = _moment(ms)
    live = format_html(' data-bullq-field="{}" data-bullq-format="time"', field) if field else ""
    if moment is None:
        return format_html("<time{}>{}</time>", live, UNKNOWN)
    iso = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms or 0) % 1000:03d}Z"
    return format_html(
        '<time datetime="{}" title="{}"{}>{}</time>', iso, utc_text(ms), live, local_text(ms)
    )


def duration_html(ms: int | float | None, field: str = "") -> SafeString:
    """``<span title="10250 ms">10.25 s</span>``; ``field`` as for :func:`time_html`."""
    live = (
        format_html(' data-bullq-field="{}" data-bullq-format="duration"', field) if field else ""
    )
    title = f"{int(ms)} ms" if ms is not None and ms >= 0 else ""
    return format_html('<span title="{}"{}>{}</span>', title, live, duration_text(ms))


def waited_ms(job: Job) -> int | None:
    """ms from the job's creation to the start of its (last) attempt, None before it starts."""
    if not job.processed_on or not job.timestamp:
        return None
    return max(0, job.processed_on - job.timestamp)


def ran_ms(job: Job) -> int | None:
    """ms from the start of the job's (last) attempt to its finish, None until it finishes."""
    if not job.processed_on or not job.finished_on:
        return None
    return max(0, job.finished_on - job.processed_on)


def progress_reported(job: Job) -> bool:
    """True once the job stored progress (the hash has ``progress``; BullMQ reads 0 without)."""
    return "progress" in job.raw


def failure_type(job: Job) -> str | None:
    """The exception class of the job's newest recorded failure (its last trace), or None."""
    return parse_trace(job.stacktrace[-1])[0] if job.stacktrace else None


def failure_text(job: Job) -> str:
    """``"ValueError: <failedReason>"`` (the type when a trace names it), "" without failure."""
    reason = job.failed_reason or ""
    kind = failure_type(job)
    return f"{kind}: {reason}" if kind and reason else reason


def list_failure(job: Job, state: str) -> str:
    """A job list's failure cell: the failure of a failed job, the last failed attempt's of a
    job still to run, nothing for a completed job (its failures are history)."""
    if state == "completed" or not job.failed_reason:
        return ""
    text = failure_text(job)
    return text if state == "failed" else f"last attempt: {text}"


@dataclass(frozen=True)
class Attempt:
    """One row of a job's attempt history."""

    #: The attempt's number (1 = first run), None when the traces kept do not tell.
    number: int | None
    #: ``"failed"`` or ``"completed"``.
    outcome: str
    #: The exception class named by the trace, None when it names none.
    type: str | None = None
    #: The exception's message (from the trace; the failed reason without one).
    message: str = ""
    #: The whole trace, "" when none was kept.
    trace: str = ""


def attempt_history(job: Job, state: str | None, limit: int = 10) -> list[Attempt]:
    """The job's failed attempts, oldest first, then its completion; [] when it never failed.

    One failure per ``stacktrace`` entry (BullMQ keeps at most ``opts.stackTraceLimit``; the
    newest ``limit`` are shown), numbered back from the newest: every attempt before the last
    one of a retried job failed. A job with a ``failedReason`` and no trace gets one failure
    row with that reason.
    """
    traces = job.stacktrace[-limit:] if limit > 0 else []
    failures = [Attempt(None, "failed", *parse_trace(t), trace=t) for t in traces]
    if not failures and job.failed_reason:
        failures = [Attempt(None, "failed", None, job.failed_reason)]
    if not failures:
        return []
    last_failed = job.attempts_made - 1 if state == "completed" else job.attempts_made
    first = last_failed - len(failures) + 1
    rows = [
        Attempt(n if n >= 1 else None, a.outcome, a.type, a.message, a.trace)
        for n, a in enumerate(failures, start=first)
    ]
    if state == "completed":
        rows.append(Attempt(job.attempts_made or None, "completed"))
    return rows
