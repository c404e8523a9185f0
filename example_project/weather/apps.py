"""App config of the weather example app (django_bullq autodiscovers ``weather.tasks``)."""

from django.apps import AppConfig


class WeatherConfig(AppConfig):
    """The weather app."""

    name = "weather"
    verbose_name = "Seattle weather"
    default_auto_field = "django.db.models.BigAutoField"
