"""Run in a subprocess with ``tests.settings_pg``: the job index on a real PostgreSQL (issue 15
item 2).

``python -m tests.support.job_index_pg <queue>`` records finished jobs, runs each filter of the
index and prints one JSON object: the ids each filter found, the extensions and indexes the
migration made, and the plans PostgreSQL makes for them over 20000 more rows.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import django

#: 20000 rows no filter of the test matches: enough for the planner to choose the indexes.
FILLER = """
INSERT INTO django_bullq_job_record
    (queue, job_id, name, state, timestamp, finished_on, data, text, failed_reason, attempts_made)
SELECT %s, 'filler-' || n, 'filler', 'completed', 0, %s - n,
       jsonb_build_object('user', jsonb_build_object('id', n + 1000), 'note', 'filler ' || n),
       'filler ' || n, '', 1
FROM generate_series(1, 20000) AS n
"""


def finish(queue: Any, state: str, name: str, data: Any, finished_ms: int) -> str:
    job = queue.add(name, data)
    pipe = queue.client.pipeline()
    pipe.lrem(queue.keys["wait"], 0, job.id)
    pipe.zadd(queue.keys[state], {job.id: finished_ms})
    pipe.hset(queue.keys.job(job.id), mapping={"finishedOn": finished_ms, "atm": 1})
    pipe.execute()
    return str(job.id)


def main(queue_name: str) -> None:
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from django_bullq.admin import index_search
    from django_bullq.admin.filter_form import JobFilterForm
    from django_bullq.conf import get_queue
    from django_bullq.models import JobRecord
    from django_bullq.recorder import Recorder

    call_command("migrate", verbosity=0)
    queue = get_queue(queue_name)
    now = int(time.time() * 1000)
    made = {
        "a": finish(queue, "completed", "mail", {"user": {"id": 42}, "note": "Grüße"}, now - 3),
        "b": finish(queue, "completed", "mail", {"user": {"id": "42"}, "items": [1]}, now - 2),
        "c": finish(queue, "completed", "sms", {"user": {"id": 7}, "nul": "a\u0000b"}, now - 1),
    }
    settings = {"DATABASE": "default", "RETENTION_S": 0, "BATCH_SIZE": 2}
    written = Recorder(queue, {**settings, "MAX_DATA_BYTES": 65536, "MAX_TEXT_CHARS": 4096})
    report: dict[str, Any] = {"written": written.record(), "found": {}, "plans": {}}
    names = {v: k for k, v in made.items()}
    cases: dict[str, dict[str, str]] = {
        "path_int": {"path": "user.id", "value": "42"},
        "path_str": {"path": "user.id", "value": '"42"'},
        "path_exists": {"path": "items"},
        "path_list": {"path": "items.0", "value": "1"},
        "text": {"q": "GRÜSSE"},
        "text_escaped": {"q": '"nul":"a\\u0000b"'},
        "name": {"name": "sms"},
    }
    with connection.cursor() as cursor:
        cursor.execute(FILLER, [queue_name, now - 10_000])
        cursor.execute("ANALYZE django_bullq_job_record")
        for label, query in cases.items():
            form = JobFilterForm(query)
            assert form.is_valid(), form.errors
            rows = index_search.records(queue, "completed", form.job_filter())
            report["found"][label] = sorted(names.get(r.job_id, "filler") for r in rows)
            report["plans"][label] = rows.explain()
        report["nul_data"] = JobRecord.objects.get(job_id=made["c"]).data
        cursor.execute("SELECT extname FROM pg_extension")
        report["extensions"] = sorted(r[0] for r in cursor.fetchall())
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s", ["django_bullq_job_record"]
        )
        report["indexes"] = sorted(r[0] for r in cursor.fetchall())
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
