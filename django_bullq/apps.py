"""App config of django_bullq (the Django layer; the core in django_bullq.core never imports it)."""

from django.apps import AppConfig


class BullqConfig(AppConfig):
    name = "django_bullq"
    verbose_name = "BullMQ queues"
    default_auto_field = "django.db.models.BigAutoField"
