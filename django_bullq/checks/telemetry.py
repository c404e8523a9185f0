"""The system check of ``BULLQ["TELEMETRY"]`` (E012; docs/checks.md, docs/observability.md)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage

from ..core import telemetry
from .settings import bullq_settings, error

_HINT = "see docs/observability.md#opentelemetry"


def check_telemetry(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E012: ``TELEMETRY`` not a bool, or ``True`` while ``opentelemetry-api`` cannot be
    imported (telemetry would silently stay off)."""
    raw = bullq_settings()
    if raw is None or "TELEMETRY" not in raw:
        return []
    value = raw["TELEMETRY"]
    if not isinstance(value, bool):
        return [error(12, f"BULLQ['TELEMETRY'] must be True or False, not {value!r}", _HINT)]
    if value and not telemetry.available():
        return [
            error(
                12,
                "BULLQ['TELEMETRY'] is True but opentelemetry-api is not installed",
                "pip install 'django-bullq[telemetry]' (and an OpenTelemetry SDK and exporter); "
                + _HINT,
            )
        ]
    return []
