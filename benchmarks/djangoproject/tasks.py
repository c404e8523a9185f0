"""The bench's tasks: each work of ``benchmarks/adapters/common.py`` as ``def`` and ``async def``.

Every task counts its start and end through :mod:`benchmarks.djangoproject.counter`. The work's
size comes from the environment the adapter sets: ``BENCH_CPU_ITERATIONS`` (default 1,000
sin/cos products) and ``BENCH_IO_MS`` (default 10 ms).
"""

from __future__ import annotations

import asyncio
import os
import time

from benchmarks.adapters.common import cpu_work
from benchmarks.djangoproject import counter
from django_bullq import task

CPU_ITERATIONS = int(os.environ.get("BENCH_CPU_ITERATIONS", "1000"))
IO_S = int(os.environ.get("BENCH_IO_MS", "10")) / 1000


@task
def noop(i: int) -> None:
    """No-op: returns at once."""
    counter.started()
    counter.done()


@task
async def anoop(i: int) -> None:
    """No-op, ``async def``."""
    counter.started()
    counter.done()


@task
def cpu(i: int) -> None:
    """CPU-bound: ``CPU_ITERATIONS`` sin/cos products, in the worker's thread."""
    counter.started()
    cpu_work(CPU_ITERATIONS)
    counter.done()


@task
async def acpu(i: int) -> None:
    """CPU-bound, ``async def``: on the worker's event loop."""
    counter.started()
    cpu_work(CPU_ITERATIONS)
    counter.done()


@task(process=True)
def cpu_process(i: int) -> None:
    """CPU-bound in the worker's process pool (``@task(process=True)``)."""
    counter.started()
    cpu_work(CPU_ITERATIONS)
    counter.done()


@task
def io(i: int) -> None:
    """10 ms of blocking I/O (``time.sleep``) in the worker's thread."""
    counter.started()
    time.sleep(IO_S)
    counter.done()


@task
async def aio(i: int) -> None:
    """10 ms of I/O, ``async def`` (``asyncio.sleep``)."""
    counter.started()
    await asyncio.sleep(IO_S)
    counter.done()
