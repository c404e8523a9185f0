"""``django.tasks`` tasks (the backport on Django 5.2) for the BullQBackend tests."""

from __future__ import annotations

import asyncio
from typing import Any

from django_bullq.conf import get_connection
from django_bullq.worker.dispatch import current_job

from .models import Note
from .tasks import bump

try:
    from django.tasks import task
except ImportError:  # Django 5.2
    from django_tasks import task  # type: ignore[no-redef]


@task
def add(a: int, b: int = 0) -> int:
    return a + b


@task
async def async_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


@task
def echo(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"args": list(args), "kwargs": kwargs}


@task(takes_context=True)
def context_info(context: Any, key: str) -> dict[str, Any]:
    """Fails on its first attempt (when the queue allows retries); returns what it saw."""
    attempt = context.attempt
    bump(key)
    job = current_job()
    if attempt == 1 and job is not None and job.attempts > 1:
        raise RuntimeError("first attempt fails")
    return {
        "attempt": attempt,
        "id": context.task_result.id,
        "job_id": job.id if job is not None else None,
        "worker_ids": list(context.task_result.worker_ids),
    }


@task
def fails(key: str) -> None:
    bump(key)
    raise ValueError(f"boom {key}")


@task
def not_json() -> Any:
    return {1, 2}


@task(priority=0)
def record(key: str, label: str) -> str:
    """RPUSH ``label`` on list ``key``: the order tasks ran in."""
    get_connection("default").sync_client().rpush(key, label)
    return label


@task
def count_run(key: str) -> int:
    return bump(key)


@task
def create_note(slug: str) -> int:
    return int(Note.objects.create(slug=slug).pk)


@task(takes_context=True)
def own_status(context: Any) -> dict[str, Any]:
    """What get_result says about the running task itself."""
    seen = own_status.get_result(context.task_result.id)
    return {
        "status": str(seen.status),
        "worker_ids": seen.worker_ids,
        "started": seen.started_at is not None,
        "finished": seen.finished_at is not None,
    }


@task(takes_context=True)
def limited_once(context: Any, key: str) -> int:
    """Rate-limits its queue on the first run (not an attempt); returns the attempt number."""
    from django_bullq.worker.dispatch import rate_limit

    if bump(key) == 1:
        rate_limit(50)
    return int(context.attempt)
