"""Run in a subprocess with ``tests.settings_pg``: flows and schedulers through the outbox on a
real PostgreSQL (issue 12 item 2).

``python -m tests.support.outbox_kinds_pg <queue>`` prints one JSON object of observations. A second
thread with its own PostgreSQL connection looks at the outbox table while the first one's
transaction is open (SQLite would block or share the file lock instead of isolating).
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
    from django_bullq.producer.flows import add_flow
    from django_bullq.producer.relay import relay
    from tests.testapp import tasks as sample
    from tests.testapp.models import Note

    call_command("migrate", verbosity=0)
    OutboxJob.objects.all().delete()
    Note.objects.all().delete()
    queue = get_queue(queue_name)
    counter = sample.count_notes.using(queue=queue_name)
    recorder = sample.record_job.using(queue=queue_name)
    seen: dict[str, Any] = {}

    def from_another_connection() -> dict[str, Any]:
        """What a second connection (another process, runworker's relay) sees right now."""
        out: dict[str, Any] = {}

        def look() -> None:
            out["rows"] = sorted(OutboxJob.objects.values_list("kind", flat=True))
            out["relayed"] = relay("default")
            connections.close_all()

        thread = threading.Thread(target=look)
        thread.start()
        thread.join()
        return out

    def flow(slug: str) -> Any:
        Note.objects.create(slug=slug)
        root = counter.node()
        root["children"] = [counter.node()]
        return add_flow(root)

    with override_settings(BULLQ={**settings.BULLQ, "OUTBOX": {"ENABLED": True}}):
        # commit: both rows in the transaction, invisible to others until the commit
        with transaction.atomic():
            pending_flow = flow("committed")
            pending_schedule = recorder.schedule("tick", every=60_000, args=["k"])
            seen["inside_rows"] = sorted(OutboxJob.objects.values_list("kind", flat=True))
            seen["inside_other"] = from_another_connection()
            seen["inside_redis_jobs"] = sum(queue.get_job_counts().values())
        seen["after_rows"] = OutboxJob.objects.count()
        seen["flow_state"] = pending_flow.state
        seen["flow_root_matches"] = pending_flow.outcome().job.id == pending_flow.id
        seen["flow_root_in_redis"] = queue.get_job_state(pending_flow.id)
        seen["schedule_state"] = pending_schedule.state
        seen["scheduler_after_commit"] = queue.get_job_scheduler("tick") is not None

        # rollback: nothing anywhere
        try:
            with transaction.atomic():
                rolled = flow("rolled-back")
                recorder.schedule("tock", every=60_000, args=["k"])
                raise ZeroDivisionError
        except ZeroDivisionError:
            pass
        seen["rollback_rows"] = OutboxJob.objects.count()
        seen["rollback_flow_in_redis"] = queue.get_job(rolled.id) is not None
        seen["rollback_scheduler"] = queue.get_job_scheduler("tock") is not None
        seen["rollback_notes"] = Note.objects.filter(slug="rolled-back").count()

        # a crash right after the commit: the rows wait for another process's relay
        def crash() -> None:
            raise Crash

        try:
            with transaction.atomic():
                transaction.on_commit(crash)
                crashed = flow("crashed")
                recorder.schedule("tuck", every=60_000, args=["k"])
        except Crash:
            pass
        seen["crash_rows"] = sorted(OutboxJob.objects.values_list("kind", flat=True))
        seen["crash_flow_before_relay"] = queue.get_job(crashed.id) is not None
        seen["crash_relay"] = from_another_connection()
        seen["crash_flow_after_relay"] = queue.get_job_state(crashed.id)
        seen["crash_scheduler_after_relay"] = queue.get_job_scheduler("tuck") is not None
        seen["crash_relay_again"] = relay("default")
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1])
