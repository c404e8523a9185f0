"""Models: the admin's placeholder (no table, only permissions), the transactional outbox and
the job index of finished jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

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
    ("change_scheduler", "Can create, edit, pause and resume job schedulers"),
    ("run_scheduler", "Can run job schedulers now"),
    ("remove_scheduler", "Can remove job schedulers"),
    ("add_job", "Can create jobs and retry jobs with edited data"),
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


#: ``OutboxJob.kind`` values: what the row writes to Redis
#: (see :mod:`django_bullq.producer.outbox`).
OUTBOX_KINDS = (("job", "job"), ("flow", "flow"), ("scheduler", "job scheduler"))


class OutboxJob(models.Model):
    """A write to Redis stored in the caller's database transaction, done after the commit.

    The transactional outbox (``BULLQ["OUTBOX"]``, docs/configuration.md): a row commits or rolls
    back with the caller's data; the committing process relays it at once, and ``runworker``
    relays whatever a crash left behind. ``job_id`` is the job's custom id, so relaying one row
    twice adds one job (BullMQ ignores a duplicate custom id).

    Fields: ``kind`` the write (:data:`OUTBOX_KINDS`); ``job_id`` custom job id (a flow: the
    root's; a scheduler: a unique row token); ``queue`` queue name (a flow: the root's);
    ``name`` job name (a scheduler: its id); ``data`` JSON text: the job data, a flow's whole
    tree (every node with its ``job_id``, a ``delay`` as ``due``), or a scheduler's template;
    ``options`` JSON text: :class:`~django_bullq.core.options.JobOptions` fields of a job
    (``delay`` replaced by ``due``: ms since the epoch), a scheduler's repeat options, ``{}`` for
    a flow; ``created_at``.
    """

    kind: models.CharField[str, str] = models.CharField(
        max_length=16, choices=OUTBOX_KINDS, default="job"
    )
    job_id: models.CharField[str, str] = models.CharField(max_length=255, unique=True)
    queue: models.CharField[str, str] = models.CharField(max_length=255)
    name: models.TextField[str, str] = models.TextField()
    data: models.TextField[str, str] = models.TextField()
    options: models.TextField[str, str] = models.TextField(default="{}")
    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "django_bullq_outbox"
        verbose_name = "outbox job"
        ordering = ("created_at", "id")
        default_permissions = ()

    def __str__(self) -> str:
        return f"{self.queue}/{self.job_id}"


class JobRecord(models.Model):
    """A finished job as the job index keeps it (``BULLQ["JOB_INDEX"]``, docs/search.md).

    ``runworker``'s recorder (:mod:`django_bullq.recorder`) writes one row per completed or
    failed job, upserted by ``(queue, job_id)`` (a retried job's row follows its last finish);
    rows outlive Redis' own trimming until ``RETENTION_S``. The admin's filters of completed
    and failed jobs read it instead of walking Redis.

    Fields: ``queue`` / ``job_id`` / ``name`` as in Redis; ``state`` ``completed`` or
    ``failed``; ``timestamp`` (created) and ``finished_on`` in ms since the epoch; ``data`` the
    job data (None when its JSON is over ``MAX_DATA_BYTES``); ``text`` the data's text,
    case-folded, cut at ``MAX_TEXT_CHARS`` (what the text filter searches); ``failed_reason``;
    ``attempts_made``.
    """

    queue: models.CharField[str, str] = models.CharField(max_length=255)
    job_id: models.CharField[str, str] = models.CharField(max_length=255)
    name: models.CharField[str, str] = models.CharField(max_length=255)
    state: models.CharField[str, str] = models.CharField(max_length=16)
    timestamp: models.BigIntegerField[int, int] = models.BigIntegerField()
    finished_on: models.BigIntegerField[int, int] = models.BigIntegerField()
    data: models.JSONField[Any, Any] = models.JSONField(null=True)
    text: models.TextField[str, str] = models.TextField(default="")
    failed_reason: models.TextField[str, str] = models.TextField(default="")
    attempts_made: models.IntegerField[int, int] = models.IntegerField(default=0)

    class Meta:
        db_table = "django_bullq_job_record"
        verbose_name = "job record"
        default_permissions = ()
        # every backend Django supports has JSON; saying so spares `check` a database query
        required_db_features = {"supports_json_field"}
        constraints = [
            models.UniqueConstraint(fields=["queue", "job_id"], name="bullq_record_queue_job"),
        ]
        indexes = [
            models.Index(fields=["queue", "state", "-finished_on"], name="bullq_record_finished"),
            models.Index(
                fields=["queue", "state", "name", "-finished_on"], name="bullq_record_name"
            ),
            models.Index(fields=["finished_on"], name="bullq_record_retention"),
        ]

    def __str__(self) -> str:
        return f"{self.queue}/{self.job_id}"
