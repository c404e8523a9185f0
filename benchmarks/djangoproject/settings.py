"""Settings of the bench's Django project: django_bullq, an in-memory SQLite, nothing else.

Read from the environment (the ``bullq-task*`` adapters set them from their spec):

``BENCH_REDIS_URL``
    Redis of the queues, default ``redis://127.0.0.1:6379/0``.
``BENCH_QUEUE``
    ``BULLQ["DEFAULT_QUEUE"]``: the queue the tasks go to and ``runworker`` runs, default
    ``bench``.
``BENCH_EVENT_LOOP``
    ``BULLQ["WORKER"]["EVENT_LOOP"]``, default ``auto`` (uvloop when installed), as a project
    that does not set it gets.
``BENCH_REMOVE_COMPLETED``
    ``1``: ``BULLQ["WORKER"]["REMOVE_ON_COMPLETE"] = True`` (the ``*_removed`` rows); else
    completed jobs are kept, BullMQ's default.
``BENCH_COUNT_ROUND_TRIPS``
    ``1``: count redis-py's requests in this process too (worker processes of
    ``runworker --processes``, which report them with each finished job).
"""

from __future__ import annotations

import os

if os.environ.get("BENCH_COUNT_ROUND_TRIPS") == "1":
    from benchmarks.adapters import common

    common.count_round_trips()

SECRET_KEY = "django-bullq-bench-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = ["django_bullq", "benchmarks.djangoproject"]
# A project has a database: the per-job hygiene then looks at a real (never opened) connection.
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
BULLQ = {
    "CONNECTIONS": {"default": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")},
    "DEFAULT_QUEUE": os.environ.get("BENCH_QUEUE", "bench"),
    "WORKER": {
        "EVENT_LOOP": os.environ.get("BENCH_EVENT_LOOP", "auto"),
        "REMOVE_ON_COMPLETE": True if os.environ.get("BENCH_REMOVE_COMPLETED") == "1" else None,
    },
}
