"""The real work behind the tasks, as plain functions (the tasks in ``tasks.py`` wrap them).

Kept apart from the ``@task`` wrappers so each step can also be called and tested directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import mail
from django.db import transaction
from django.db.models import Avg, Count, Q, Sum
from django.db.models.functions import ExtractMonth, ExtractYear
from django.utils import timezone

from .dataset import read_rows
from .models import WEATHER_TYPES, DailyWeather, MonthlyStats, Report, YearlyStats

FIELDS = ("precipitation", "temp_max", "temp_min", "wind", "weather")


class PublishUnavailableError(Exception):
    """The (simulated) publishing endpoint refused the attempt; a retry succeeds."""


def import_rows(start: int, stop: int) -> int:
    """Upsert CSV rows ``[start, stop)`` into :class:`DailyWeather`. Returns rows written.

    Idempotent: a day that exists already is updated in place (``date`` is unique), so a
    retried or repeated chunk leaves one row a day.
    """
    rows = read_rows()[start:stop]
    objects = [
        DailyWeather(date=row.date, **{name: getattr(row, name) for name in FIELDS}) for row in rows
    ]
    with transaction.atomic():
        DailyWeather.objects.bulk_create(
            objects, update_conflicts=True, unique_fields=["date"], update_fields=list(FIELDS)
        )
    return len(objects)


def _stats_annotations() -> dict[str, Any]:
    counts = {f"{kind}_days": Count("id", filter=Q(weather=kind)) for kind in WEATHER_TYPES}
    return {
        "days": Count("id"),
        "temp_max_mean": Avg("temp_max"),
        "temp_min_mean": Avg("temp_min"),
        "precipitation_total": Sum("precipitation"),
        "wind_mean": Avg("wind"),
        **counts,
    }


def _stats_values(row: Any) -> dict[str, Any]:
    """The aggregate columns of a ``values()`` row, floats rounded to 2 decimals."""
    return {
        k: round(v, 2) if isinstance(v, float) else v for k, v in row.items() if k not in ("y", "m")
    }


def aggregate() -> dict[str, int]:
    """Recompute :class:`MonthlyStats` and :class:`YearlyStats` from the imported days.

    Returns:
        ``{"days": ..., "months": ..., "years": ...}``: how many of each were aggregated.
    """
    days = DailyWeather.objects.annotate(y=ExtractYear("date"), m=ExtractMonth("date"))
    monthly = days.values("y", "m").annotate(**_stats_annotations()).order_by("y", "m")
    yearly = days.values("y").annotate(**_stats_annotations()).order_by("y")
    with transaction.atomic():
        for row in monthly:
            MonthlyStats.objects.update_or_create(
                year=row["y"], month=row["m"], defaults=_stats_values(row)
            )
        for year_row in yearly:
            YearlyStats.objects.update_or_create(
                year=year_row["y"], defaults=_stats_values(year_row)
            )
    return {
        "days": DailyWeather.objects.count(),
        "months": MonthlyStats.objects.count(),
        "years": YearlyStats.objects.count(),
    }


def yearly_table() -> list[str]:
    """The yearly aggregates as fixed-width text lines (header first)."""
    lines = [
        f"{'year':<6}{'days':>5}{'max °C':>8}{'min °C':>8}{'rain mm':>9}{'wind':>6}  "
        f"{'sun':>4}{'fog':>4}{'rain':>5}{'drizzle':>8}{'snow':>5}"
    ]
    for s in YearlyStats.objects.order_by("year"):
        lines.append(
            f"{s.year:<6}{s.days:>5}{s.temp_max_mean:>8.1f}{s.temp_min_mean:>8.1f}"
            f"{s.precipitation_total:>9.1f}{s.wind_mean:>6.1f}  {s.sun_days:>4}"
            f"{s.fog_days:>4}{s.rain_days:>5}{s.drizzle_days:>8}{s.snow_days:>5}"
        )
    return lines


def highlights() -> list[str]:
    """A few lines on the extreme months (wettest, driest, warmest, coldest)."""
    months = MonthlyStats.objects.all()
    if not months.exists():
        return []
    picks = (
        ("wettest month", "-precipitation_total", "precipitation_total", "mm"),
        ("driest month", "precipitation_total", "precipitation_total", "mm"),
        ("warmest month", "-temp_max_mean", "temp_max_mean", "°C mean max"),
        ("coldest month", "temp_min_mean", "temp_min_mean", "°C mean min"),
    )
    lines = []
    for label, order, attr, unit in picks:
        month = months.order_by(order, "year", "month").first()
        assert month is not None
        lines.append(
            f"{label + ':':<15}{month.year}-{month.month:02d} {getattr(month, attr):.1f} {unit}"
        )
    return lines


def _mail_connection() -> Any:
    # Django >= 6.1 configures mail with MAILERS; older versions with EMAIL_BACKEND.
    mailers = getattr(mail, "mailers", None)
    return mailers.default if mailers is not None else mail.get_connection()


def email_report(report_id: int) -> dict[str, Any]:
    """Email the yearly table and highlights through the configured (file) backend.

    Returns:
        ``{"email_file": path or "", "recipients": [...]}``.
    """
    report = Report.objects.get(pk=report_id)
    body = "\n".join(
        [
            "Seattle weather 2012-2015 (vega-datasets seattle-weather.csv)",
            "",
            *yearly_table(),
            "",
            *highlights(),
            "",
            f"Days imported: {DailyWeather.objects.count()}. Report #{report.pk}.",
        ]
    )
    message = mail.EmailMessage(
        subject=f"Seattle weather report #{report.pk}",
        body=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=list(settings.WEATHER_REPORT_TO),
    )
    connection = _mail_connection()
    connection.send_messages([message])
    # The file backend names its file once per connection; it keeps the name in _fname.
    email_file = str(getattr(connection, "_fname", "") or "")
    Report.objects.filter(pk=report.pk).update(email_file=email_file, emailed_at=timezone.now())
    return {"email_file": email_file, "recipients": list(message.to)}


def publish_report(report_id: int) -> dict[str, Any]:
    """Publish the summary of a report: the flaky step.

    The first attempt for each report fails with :class:`PublishUnavailableError` (a simulated
    outage, counted in ``Report.publish_attempts`` in the database, so the outcome does not
    depend on timing); the retry stores the summary and succeeds.
    """
    with transaction.atomic():
        report = Report.objects.select_for_update().get(pk=report_id)
        report.publish_attempts += 1
        report.save(update_fields=["publish_attempts"])
        attempt = report.publish_attempts
    if attempt == 1:
        raise PublishUnavailableError(
            f"report #{report_id}: publishing endpoint unavailable "
            f"(simulated outage on attempt {attempt})"
        )
    summary = {
        str(s.year): {
            "days": s.days,
            "temp_max_mean": s.temp_max_mean,
            "precipitation_total": s.precipitation_total,
            "sun_days": s.sun_days,
        }
        for s in YearlyStats.objects.order_by("year")
    }
    Report.objects.filter(pk=report_id).update(published=summary, published_at=timezone.now())
    return {"report": report_id, "attempt": attempt, "years": len(summary)}


def email_dir() -> Path:
    """Directory the file email backend writes to."""
    return Path(settings.EMAIL_DIR)
