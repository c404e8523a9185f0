"""django_bullq's core ``Queue`` and ``Worker`` with a ``def`` processor (processing rows
only): the :mod:`benchmarks.adapters.bullq` run with the job's body in the worker's threads.

Beside the core row (an ``async`` processor on the loop) and ``@task def`` through
``runworker``, it splits what a ``def`` task costs into the thread hop (this row against the
core one) and the task layer (``@task def`` against this row): dispatch, database hygiene.
"""

from __future__ import annotations

import os

from benchmarks.adapters import bullq, common
from django_bullq.core import eventloop

PROCESSING_ONLY = "processing rows only (its inserts are the core row's)"

if __name__ == "__main__":
    common.count_round_trips()
    spec = common.spec_from_argv()
    if spec["kind"] != "process":
        common.not_applicable(PROCESSING_ONLY)
    eventloop.run(bullq.main(spec, sync=True), os.environ.get("BENCH_EVENT_LOOP", "auto"))
