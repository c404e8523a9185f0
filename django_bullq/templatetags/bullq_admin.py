"""Template filters of the queue admin pages (``{% load bullq_admin %}``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import template

register = template.Library()


@register.filter
def ms_time(value: Any) -> str:
    """A BullMQ timestamp (epoch **ms**, e.g. ``timestamp``, ``processedOn``) as
    ``YYYY-MM-DD HH:MM:SS.mmm UTC``; ``"–"`` when empty, zero or not a number."""
    try:
        ms = int(value)
    except (TypeError, ValueError):
        return "–"
    if ms <= 0:
        return "–"
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"
