"""Date helpers of the Django layer: reading datetimes the way ``settings.TIME_ZONE`` says.

The producer (``@task`` delays) and the ``django.tasks`` backend (``run_after``) both use them,
so they live beside ``conf.py`` rather than in either.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def aware(value: datetime) -> datetime:
    """``value`` if aware; a naive one is read as wall-clock time in ``settings.TIME_ZONE``.

    The UTC offset is the one in effect at that instant (``zoneinfo``), not "does the zone
    observe DST" (case B03). For a wall time that occurs twice (DST end) the first is used.
    """
    if timezone.is_aware(value):
        return value
    made: datetime = timezone.make_aware(value, timezone.get_default_timezone())
    return made


__all__ = ["aware"]
