"""``BULLQ["TELEMETRY"]``: OpenTelemetry on or off for the Django process (docs/observability.md).

:func:`configure` runs in ``AppConfig.ready`` and whenever ``settings.BULLQ`` changes
(``override_settings``): ``True`` registers
:class:`~django_bullq.core.telemetry.tracing.OpenTelemetry` on the global tracer and meter
providers (the application sets them up, e.g. with the SDK or
``opentelemetry-instrument``), so every queue, producer, flow and worker of the process makes
spans and metrics; ``False`` (the default) registers nothing, and the hot paths cost one
``if``. A ``TELEMETRY`` of the wrong type, or ``True`` without ``opentelemetry-api``, is check
E012's and is left off here.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from . import conf
from .core import telemetry

logger = logging.getLogger("django_bullq.telemetry")


def wanted() -> bool:
    """``BULLQ["TELEMETRY"]`` is ``True`` (a non-bool counts as off; E012 reports it)."""
    raw = conf.user_config()  # not the cached merge: reading it here must not fill the cache
    return isinstance(raw, dict) and raw.get("TELEMETRY") is True


def configure() -> bool:
    """Switch the instrumentation on or off as ``BULLQ["TELEMETRY"]`` says.

    Returns:
        Whether it is on afterwards (False when asked for but ``opentelemetry`` is missing).
    """
    if not wanted():
        telemetry.disable()
        return False
    if not telemetry.available():
        logger.warning(
            "BULLQ['TELEMETRY'] is True but opentelemetry-api is not installed: telemetry is "
            "off (pip install 'django-bullq[telemetry]'; check django_bullq.E012)"
        )
        return False
    telemetry.enable()
    return True


def observe_queue(queue: Any) -> None:
    """With telemetry on, report ``queue``'s job counts as the ``bullmq.queue.jobs`` gauge at
    each metrics collection (``runworker`` does it for the queues it runs); else nothing."""
    found = telemetry.enabled()
    if found is not None and found.meters is not None:
        found.meters.observe_queues([queue])


def carry_context(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` (JobOptions fields) with the current trace context in ``extra["tm"]`` when
    telemetry is on and the job has none (nor ``omc``): the outbox stores it with the row, so
    the job its relay adds later, outside the request, continues the request's trace."""
    found = telemetry.enabled()
    extra = options.get("extra") or {}
    if found is None or not isinstance(extra, dict) or "tm" in extra or extra.get("omc"):
        return options
    carrier = found.current_carrier()
    return options if carrier is None else {**options, "extra": {**extra, "tm": carrier}}


@receiver(setting_changed)
def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "BULLQ":
        configure()
