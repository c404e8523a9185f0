"""``manage.py bullq health``: which workers are alive, from their heartbeat keys.

Exit status (for liveness probes and orchestrators): 0 when every checked queue has at least
one live worker (with ``--worker NAME``: when that worker is alive); 1 otherwise, and when
Redis cannot be reached. A worker is alive while its heartbeat key exists: it is rewritten
every 5 s only while the worker's fetch loop is running and Redis answers, and expires 15 s
after the last beat (``django_bullq.core.heartbeat``).
"""

from __future__ import annotations

import json
import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_bullq.conf import bullq_settings, get_queue
from django_bullq.core.clients import CLIENT_ERRORS
from django_bullq.core.errors import InvalidNameError
from django_bullq.core.heartbeat import WorkerBeat, read_workers

HELP = "report live and stale workers from their heartbeats; exit 1 if a queue has none alive"


def add_arguments(parser: ArgumentParser) -> None:
    """``--queue`` (repeatable), ``--worker``, ``--json``."""
    parser.add_argument(
        "--queue",
        action="append",
        dest="queues",
        default=None,
        help="queue to check (repeatable); default: DEFAULT_QUEUE and every "
        "queue of BULLQ['QUEUES']",
    )
    parser.add_argument(
        "--worker",
        default=None,
        help="check this worker name only (runworker --name); exit 0 iff alive",
    )
    parser.add_argument(
        "--json", action="store_true", dest="as_json", help="print one JSON object instead of text"
    )


def _queue_names(given: list[str] | None) -> list[str]:
    if given:
        return list(dict.fromkeys(given))
    return list(dict.fromkeys([bullq_settings.DEFAULT_QUEUE, *bullq_settings.QUEUES]))


def _line(beat: WorkerBeat, now_ms: int) -> str:
    ago = (now_ms - beat.last_beat) / 1000
    if not beat.alive:
        return f"  stale  {beat.name}  last beat {ago:.1f} s ago"
    info = beat.info
    return (
        f"  alive  {beat.name}  {info.get('host')}:{info.get('pid')}  beat {ago:.1f} s ago"
        f"  active {info.get('active')}/{info.get('concurrency')}"
        f"  processed {info.get('processed')}  failed {info.get('failed')}"
    )


def handle(
    command: BaseCommand, *, queues: list[str] | None, worker: str | None, as_json: bool, **_: Any
) -> int:
    """Print the report; returns the exit status (0 healthy, 1 not).

    Raises:
        CommandError: a ``--queue`` name no queue may have (``a:b``).
    """
    now_ms = int(time.time() * 1000)
    report: dict[str, list[WorkerBeat]] = {}
    for name in _queue_names(queues):
        try:
            queue = get_queue(name)
        except InvalidNameError as exc:
            raise CommandError(f"--queue {name!r}: {exc}") from exc
        try:
            report[name] = read_workers(queue.client, queue.keys)
        except CLIENT_ERRORS as exc:
            command.stderr.write(
                f"cannot reach Redis at {queue.connection.describe()} for queue {name!r}: {exc}"
            )
            return 1
    if worker is not None:
        healthy = any(b.alive for beats in report.values() for b in beats if b.name == worker)
    else:
        healthy = all(any(b.alive for b in beats) for beats in report.values())
    if as_json:
        command.stdout.write(
            json.dumps(
                {
                    "healthy": healthy,
                    "queues": {
                        name: [
                            {"name": b.name, "alive": b.alive, "last_beat": b.last_beat, **b.info}
                            for b in beats
                        ]
                        for name, beats in report.items()
                    },
                }
            )
        )
        return 0 if healthy else 1
    for name, beats in report.items():
        alive = sum(b.alive for b in beats)
        command.stdout.write(f"queue {name}: {alive} alive, {len(beats) - alive} stale")
        for beat in beats:
            command.stdout.write(_line(beat, now_ms))
    if worker is not None:
        command.stdout.write(f"worker {worker}: {'alive' if healthy else 'NOT alive'}")
    return 0 if healthy else 1
