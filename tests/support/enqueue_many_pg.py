"""Run in a subprocess with ``tests.settings_pg``: ``Task.enqueue_many`` on a real PostgreSQL,
on commit and through the outbox (issue 14 item 3).

``python -m tests.support.enqueue_many_pg <queue>`` prints one JSON object of observations. A
second thread with its own PostgreSQL connection looks at the outbox table while the first
one's transaction is open.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import django


class Crash(Exception):
    """Raised by an on-commit callback registered first: the outbox move never runs."""


def main(queue_name: str) -> None:
    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections, transaction
    from django.test import override_settings

    from django_bullq.conf import get_queue
    from django_bullq.models import OutboxJob
    from django_bullq.producer.relay import relay
    from tests.testapp import tasks as sample
    from tests.testapp.models import Note

    call_command("migrate", verbosity=0)
    OutboxJob.objects.all().delete()
    Note.objects.all().delete()
    queue = get_queue(queue_name)
    add: Any = sample.add.using(queue=queue_name)  # its batches' items: read as PendingEnqueue
    seen: dict[str, Any] = {}

    def first_arg(job_id: str) -> Any:
        job = queue.get_job(job_id)
        assert job is not None
        return job.data["args"][0]

    def from_another_connection() -> dict[str, Any]:
        out: dict[str, Any] = {}

        def look() -> None:
            out["rows"] = OutboxJob.objects.filter(queue=queue_name).count()
            out["relayed"] = relay("default")
            connections.close_all()

        thread = threading.Thread(target=look)
        thread.start()
        thread.join()
        return out

    # on commit, no outbox: nothing in Redis until the commit, then all, in order
    with transaction.atomic():
        Note.objects.create(slug="plain")
        pendings = add.enqueue_many([(i,) for i in range(50)], chunk_size=20)
        seen["plain_inside_redis"] = queue.count()
    seen["plain_states"] = sorted({p.state for p in pendings})
    seen["plain_args"] = [first_arg(p.id) for p in pendings]
    try:
        with transaction.atomic():
            rolled = add.enqueue_many([(i,) for i in range(5)])
            raise ZeroDivisionError
    except ZeroDivisionError:
        pass
    seen["plain_rolled_back"] = [queue.get_job(p.id) is not None for p in rolled]

    with override_settings(BULLQ={**settings.BULLQ, "OUTBOX": {"ENABLED": True}}):
        before = queue.count()
        with transaction.atomic():
            pendings = add.enqueue_many([(i,) for i in range(30)])
            seen["outbox_inside_rows"] = OutboxJob.objects.filter(queue=queue_name).count()
            seen["outbox_inside_other"] = from_another_connection()
        seen["outbox_after_rows"] = OutboxJob.objects.filter(queue=queue_name).count()
        seen["outbox_states"] = sorted({p.state for p in pendings})
        seen["outbox_added"] = queue.count() - before

        try:
            with transaction.atomic():
                add.enqueue_many([(i,) for i in range(5)])
                raise ZeroDivisionError
        except ZeroDivisionError:
            pass
        seen["outbox_rollback_rows"] = OutboxJob.objects.filter(queue=queue_name).count()

        def crash() -> None:
            raise Crash

        before = queue.count()
        try:
            with transaction.atomic():
                transaction.on_commit(crash)
                crashed = add.enqueue_many([(i,) for i in range(10)])
        except Crash:
            pass
        seen["crash_rows"] = OutboxJob.objects.filter(queue=queue_name).count()
        seen["crash_before_relay"] = queue.count() - before
        seen["crash_relay"] = from_another_connection()
        seen["crash_after_relay"] = sorted(first_arg(p.id) for p in crashed)
        seen["crash_relay_again"] = relay("default")
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1])
