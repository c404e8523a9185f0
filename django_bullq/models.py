"""Placeholder model: no table, it only carries the app's permissions.

``django_bullq.view_queue`` lets active staff follow queue events over WebSockets
(:mod:`django_bullq.consumers`).
"""

from __future__ import annotations

from django.db import models


class BullqQueue(models.Model):
    """Unmanaged stand-in for a queue, so ``django_bullq.view_queue`` exists in auth."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("view_queue", "Can view queues and follow their events")]
        verbose_name = "queue"
