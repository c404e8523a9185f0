"""App config of django_bullq (the Django layer; the core in django_bullq.core never imports it)."""

import sys

from django.apps import AppConfig


class BullqConfig(AppConfig):
    """Registers the system checks, switches OpenTelemetry on when ``BULLQ["TELEMETRY"]`` says
    so, and imports every installed app's ``tasks`` module."""

    name = "django_bullq"
    verbose_name = "BullMQ queues"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks
        from django.utils.module_loading import autodiscover_modules

        from . import checks as bullq_checks
        from . import telemetry  # imports conf: connects the setting_changed receiver

        for check in bullq_checks.ALL_CHECKS:
            checks.register(check, bullq_checks.TAG)
        telemetry.configure()  # BULLQ["TELEMETRY"]: OpenTelemetry on or off
        autodiscover_modules("tasks")
        # `manage.py runworker` owned by Channels: say what to do instead of its usage text
        bullq_checks.refuse_foreign_runworker(sys.argv)
