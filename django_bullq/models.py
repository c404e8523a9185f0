"""The admin's placeholder model: no table, it only carries permissions and an admin index entry."""

from __future__ import annotations

from django.db import models

#: Custom per-action permissions (codename, label); ``django_bullq.<codename>`` in has_perm().
ACTION_PERMISSIONS = (
    ("retry_job", "Can retry jobs"),
    ("promote_job", "Can promote delayed jobs"),
    ("remove_job", "Can remove jobs"),
    ("cancel_job", "Can cancel running jobs"),
    ("change_job", "Can change job priority"),
    ("pause_queue", "Can pause and resume queues"),
    ("clean_queue", "Can clean and drain queues"),
    ("obliterate_queue", "Can obliterate queues"),
)


class BullqQueue(models.Model):
    """Unmanaged placeholder for BullMQ queues (queues live in Redis, never in the database).

    Gives the admin index a "Queues" entry, the default permissions (``view_bullqqueue`` is the
    one the admin pages need) and the custom :data:`ACTION_PERMISSIONS`.
    """

    name: models.CharField[str, str] = models.CharField(max_length=255, primary_key=True)

    class Meta:
        managed = False
        db_table = "django_bullq_queue_placeholder"
        verbose_name = "queue"
        verbose_name_plural = "queues"
        permissions = ACTION_PERMISSIONS

    def __str__(self) -> str:
        return self.name
