"""``@task(process=True)``: run a CPU-bound task's function in a separate process.

The worker thread that runs the job hands the call to a process pool (``spawn`` start method,
so children never inherit the worker's threads, locks or Redis connections) and waits for it.
Arguments and the result cross the boundary as JSON text (never pickled objects of the job);
the child sets Django up once and imports the task's module by name. While it waits, the thread
watches the job's cancel token: cancelling (or its ``timeout``) fails the job at once and, as a
pool cannot interrupt one call, terminates the pool's processes (calls of other process tasks
running at that moment fail with ``BrokenProcessPool`` and retry per their attempts); the next
process task starts a fresh pool. A pool process that dies (an OOM kill, a segfault,
``os._exit``) fails its job with :class:`ProcessDiedError` and the pool is replaced the same way,
so one dead process never fails the process tasks after it.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import multiprocessing
import os
import threading
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from ..core.job import Job
from ..core.serialization import dumps, loads
from ..exceptions import ProcessDiedError

if TYPE_CHECKING:
    from ..producer.task import Task


#: Seconds between checks of the cancel token while the child computes.
POLL_S = 0.05

_pool: concurrent.futures.ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def pool() -> concurrent.futures.ProcessPoolExecutor:
    """The worker process's pool of task processes (``os.cpu_count()`` of them), built once."""
    global _pool
    with _pool_lock:
        if _pool is None:
            from django.conf import settings

            _pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=max(1, os.cpu_count() or 1),
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_child,
                initargs=(settings.SETTINGS_MODULE,),
            )
        return _pool


def shutdown(*, kill: bool = False) -> None:
    """Stop the pool (the next process task starts a new one).

    Args:
        kill: terminate its processes now instead of letting running calls finish.
    """
    global _pool
    with _pool_lock:
        old, _pool = _pool, None
    if old is None:
        return
    processes = list(getattr(old, "_processes", {}).values()) if kill else []
    for process in processes:
        process.terminate()
    old.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(5)


def discard(broken: concurrent.futures.ProcessPoolExecutor) -> None:
    """Forget ``broken`` (a pool one of whose processes died: it takes no more calls), so that
    the next process task starts a new one; a pool already replaced is left alone."""
    global _pool
    with _pool_lock:
        if _pool is not broken:
            return
        _pool = None
    broken.shutdown(wait=False, cancel_futures=True)


def _init_child(settings_module: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = settings_module
    import django

    django.setup()


def _call_in_child(module: str, qualname: str, payload: str) -> str:
    """In the child: import the task, call its function with the JSON args, return JSON."""
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    func = getattr(target, "func", target)  # a Task, or the plain function
    call = loads(payload)
    return dumps(func(*call["args"], **call["kwargs"]), f"return value of {module}.{qualname}")


def run_in_process(task_: Task[..., Any], job: Job, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run ``task_``'s function in the pool and wait for it (in the worker thread).

    Returns:
        The decoded JSON result.

    Raises:
        CancelledJobError: the job was cancelled while it waited.
        JobTimeoutExceeded: the job's timeout passed while it waited.
        ProcessDiedError: the process running it ended abruptly (the pool is replaced).
        Exception: whatever the function raised in the child (as re-raised by the pool).
    """
    module, qualname = task_.func.__module__, task_.func.__qualname__
    payload = dumps({"args": args, "kwargs": kwargs})
    used = pool()
    try:
        future = used.submit(_call_in_child, module, qualname, payload)
    except BrokenProcessPool:  # broken by an earlier job whose process died: start afresh
        discard(used)
        used = pool()
        future = used.submit(_call_in_child, module, qualname, payload)
    token = job.cancel_token
    while True:
        try:
            return loads(future.result(timeout=POLL_S))
        except BrokenProcessPool as exc:
            discard(used)  # the next process task gets a fresh pool
            raise ProcessDiedError(
                "the process running the job ended abruptly (killed, out of memory, or "
                "os._exit in the task); the process pool is started afresh for the next job"
            ) from exc
        except concurrent.futures.TimeoutError:
            if token is not None and token.cancelled:
                if not future.cancel():
                    shutdown(kill=True)  # the call is running: only killing stops it
                token.raise_if_cancelled()
