"""Models of the weather app: the imported days, their aggregates and the report runs."""

from __future__ import annotations

from django.db import models

WEATHER_TYPES = ("sun", "fog", "rain", "drizzle", "snow")


class DailyWeather(models.Model):
    """One day of Seattle weather, imported from the CSV (``date`` is the natural key)."""

    date = models.DateField(unique=True)
    precipitation = models.FloatField(help_text="mm")
    temp_max = models.FloatField(help_text="°C")
    temp_min = models.FloatField(help_text="°C")
    wind = models.FloatField(help_text="m/s")
    weather = models.CharField(max_length=16, choices=[(w, w) for w in WEATHER_TYPES])

    class Meta:
        ordering = ["date"]
        verbose_name_plural = "daily weather"

    def __str__(self) -> str:
        return f"{self.date}: {self.weather}, {self.temp_min}..{self.temp_max} °C"


class WeatherStats(models.Model):
    """Aggregates over the days of a period (fields shared by months and years)."""

    days = models.PositiveIntegerField()
    temp_max_mean = models.FloatField(help_text="mean daily maximum, °C")
    temp_min_mean = models.FloatField(help_text="mean daily minimum, °C")
    precipitation_total = models.FloatField(help_text="mm")
    wind_mean = models.FloatField(help_text="m/s")
    sun_days = models.PositiveIntegerField(default=0)
    fog_days = models.PositiveIntegerField(default=0)
    rain_days = models.PositiveIntegerField(default=0)
    drizzle_days = models.PositiveIntegerField(default=0)
    snow_days = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class MonthlyStats(WeatherStats):
    """Aggregates of one calendar month."""

    year = models.PositiveIntegerField()
    month = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["year", "month"]
        verbose_name_plural = "monthly stats"
        constraints = [models.UniqueConstraint(fields=["year", "month"], name="one_row_a_month")]

    def __str__(self) -> str:
        return f"{self.year}-{self.month:02d}"


class YearlyStats(WeatherStats):
    """Aggregates of one calendar year."""

    year = models.PositiveIntegerField(unique=True)

    class Meta:
        ordering = ["year"]
        verbose_name_plural = "yearly stats"

    def __str__(self) -> str:
        return str(self.year)


class Report(models.Model):
    """One run of ``manage.py weather_report``: what its jobs did."""

    created_at = models.DateTimeField(auto_now_add=True)
    rows_imported = models.PositiveIntegerField(default=0)
    email_file = models.CharField(max_length=500, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)
    publish_attempts = models.PositiveIntegerField(default=0)
    published_at = models.DateTimeField(null=True, blank=True)
    published = models.JSONField(
        null=True, blank=True, help_text="the summary the publish step produced"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"report #{self.pk} ({self.created_at:%Y-%m-%d %H:%M})"
