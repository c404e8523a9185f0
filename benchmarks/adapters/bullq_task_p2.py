"""django_bullq through a Django project: ``@task def`` under ``manage.py runworker
--processes 2`` (CPU-bound rows only); see :mod:`benchmarks.adapters.bullq_task`."""

from __future__ import annotations

from benchmarks.adapters import bullq_task, common

if __name__ == "__main__":
    common.count_round_trips()
    bullq_task.main(common.spec_from_argv(), bullq_task.Flavour.PROCESSES)
