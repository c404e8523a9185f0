"""OpenTelemetry for the engine: switch it on and off for the process (docs/observability.md).

This package imports ``opentelemetry`` only in :func:`enable`, so django_bullq runs without it
(the ``telemetry`` extra installs ``opentelemetry-api``; the SDK and an exporter are the
application's). The spans and metrics are in :mod:`.tracing` and :mod:`.meters`; the names in
:mod:`.attributes`.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from .. import instrument

if TYPE_CHECKING:
    from .tracing import OpenTelemetry

_enabled: list[OpenTelemetry] = []


def available() -> bool:
    """True when ``opentelemetry-api`` can be imported."""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except ModuleNotFoundError:
        return False


def enable(
    *, tracer_provider: Any = None, meter_provider: Any = None, metrics: bool = True
) -> OpenTelemetry:
    """Register the OpenTelemetry instrumentation for every queue and worker of the process
    (once: a second call returns the first one's instrumentation).

    Args:
        tracer_provider: an OpenTelemetry ``TracerProvider``; the global one by default.
        meter_provider: an OpenTelemetry ``MeterProvider``; the global one by default.
        metrics: record metrics too.

    Returns:
        The registered :class:`~django_bullq.core.telemetry.tracing.OpenTelemetry`.

    Raises:
        ImportError: ``opentelemetry-api`` is not installed (``pip install
            'django-bullq[telemetry]'``).
    """
    if _enabled:
        return _enabled[0]
    from .tracing import OpenTelemetry

    found = OpenTelemetry(
        tracer_provider=tracer_provider, meter_provider=meter_provider, metrics=metrics
    )
    _enabled.append(found)
    instrument.register(found)
    return found


def disable() -> None:
    """Undo :func:`enable` (no error when it is off)."""
    while _enabled:
        instrument.unregister(_enabled.pop())


def enabled() -> OpenTelemetry | None:
    """The instrumentation :func:`enable` registered, or None."""
    return _enabled[0] if _enabled else None
