"""Admin of the weather models (the queues' jobs show under django_bullq's own admin)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin

from .models import DailyWeather, MonthlyStats, Report, YearlyStats

if TYPE_CHECKING:  # django-stubs makes ModelAdmin generic; Django itself does not
    DailyWeatherAdminBase = admin.ModelAdmin[DailyWeather]
    MonthlyStatsAdminBase = admin.ModelAdmin[MonthlyStats]
    YearlyStatsAdminBase = admin.ModelAdmin[YearlyStats]
    ReportAdminBase = admin.ModelAdmin[Report]
else:
    DailyWeatherAdminBase = MonthlyStatsAdminBase = YearlyStatsAdminBase = ReportAdminBase = (
        admin.ModelAdmin
    )

STATS_COLUMNS = (
    "days",
    "temp_max_mean",
    "temp_min_mean",
    "precipitation_total",
    "wind_mean",
    "sun_days",
    "fog_days",
    "rain_days",
    "drizzle_days",
    "snow_days",
)


@admin.register(DailyWeather)
class DailyWeatherAdmin(DailyWeatherAdminBase):
    """The imported days, filterable by weather type and browsable by date."""

    list_display = ("date", "weather", "temp_min", "temp_max", "precipitation", "wind")
    list_filter = ("weather",)
    date_hierarchy = "date"


@admin.register(MonthlyStats)
class MonthlyStatsAdmin(MonthlyStatsAdminBase):
    """The monthly aggregates, one row a month."""

    list_display = ("year", "month", *STATS_COLUMNS)
    list_filter = ("year",)


@admin.register(YearlyStats)
class YearlyStatsAdmin(YearlyStatsAdminBase):
    """The yearly aggregates, one row a year."""

    list_display = ("year", *STATS_COLUMNS)


@admin.register(Report)
class ReportAdmin(ReportAdminBase):
    """The runs of ``manage.py weather_report`` and what their jobs did."""

    list_display = (
        "id",
        "created_at",
        "rows_imported",
        "emailed_at",
        "publish_attempts",
        "published_at",
    )
    readonly_fields = ("created_at",)
