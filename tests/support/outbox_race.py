"""Run in a subprocess with ``tests.settings_pg``: N committed outbox rows, several relays at once.

``python -m tests.support.outbox_race <queue> <rows> <relays>`` prints ``{"added": [per relay],
"left": rows still in the table}`` as JSON. Each relay thread has its own PostgreSQL
connection, so they really compete for the rows (``SELECT ... FOR UPDATE SKIP LOCKED``).
"""

from __future__ import annotations

import json
import sys
import threading

import django


def main(queue_name: str, rows: int, relays: int) -> None:
    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from django_bullq.models import OutboxJob
    from django_bullq.producer.outbox import write
    from django_bullq.producer.relay import relay

    call_command("migrate", verbosity=0)
    OutboxJob.objects.all().delete()
    for n in range(rows):
        write("default", queue_name, "tests.testapp.tasks.add", {"args": [n], "kwargs": {}}, {})
    added = [0] * relays
    start = threading.Barrier(relays)

    def run(slot: int) -> None:
        start.wait()
        while True:
            moved = relay("default", limit=25)
            added[slot] += moved
            if not moved and not OutboxJob.objects.exists():
                break
        connections.close_all()

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(relays)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"added": added, "left": OutboxJob.objects.count()}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
