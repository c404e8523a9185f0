"""The worker's job threads: where sync processors run, handed calls by the event loop.

:class:`JobThreads` does what ``loop.run_in_executor(ThreadPoolExecutor(n), ...)`` does for a
worker, with less per call: a call is one ``SimpleQueue.put`` to the threads and one
``call_soon_threadsafe`` back to the loop, with no ``concurrent.futures.Future`` (its
condition variable, its callbacks) between them. Like ``ThreadPoolExecutor``, it starts a
thread only when none is idle, up to ``size``; its threads are not daemons, so the interpreter
waits at exit for a call still running in one.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

_Item = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class JobThreads:
    """Up to ``size`` threads that run calls for an event loop.

    Args:
        size: the most threads started (the worker's concurrency), >= 1.
        name_prefix: thread names are ``<prefix>_<n>``.
    """

    def __init__(self, size: int, name_prefix: str) -> None:
        self._size = size
        self._prefix = name_prefix
        self._calls: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._threads: list[threading.Thread] = []
        self._closed = False

    def run(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """``fn(*args)`` in one of the threads; the future (of the running loop) gets its
        value or exception. Cancelling the future before a thread takes the call skips it; a
        call already running finishes, and its result is dropped.

        Raises:
            RuntimeError: after :meth:`shutdown`.
        """
        if self._closed:
            raise RuntimeError("the worker's job threads are shut down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._calls.put((loop, future, fn, args))
        if not self._idle.acquire(blocking=False) and len(self._threads) < self._size:
            thread = threading.Thread(
                target=self._work, name=f"{self._prefix}_{len(self._threads)}"
            )
            thread.start()
            self._threads.append(thread)
        return future

    def shutdown(self, *, wait: bool) -> None:
        """Stop the threads once their running call returns; calls not yet taken are
        cancelled. ``wait``: block until the threads have ended."""
        self._closed = True
        with contextlib.suppress(queue.Empty):
            while True:
                item = self._calls.get_nowait()
                if item is not None:
                    _post(item[0], _cancel, item[1])
        for _ in self._threads:
            self._calls.put(None)
        if wait:
            for thread in self._threads:
                thread.join()

    def _work(self) -> None:
        calls = self._calls
        while True:
            item = calls.get()
            if item is None:
                return
            loop, future, fn, args = item
            if self._closed or future.cancelled():
                _post(loop, _cancel, future)
            else:
                try:
                    result = fn(*args)
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                    _post(loop, _set_exception, future, exc)
                else:
                    _post(loop, _set_result, future, result)
            del item, loop, future, fn, args  # hold no job while waiting for the next call
            self._idle.release()


def _post(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody awaits any more
        loop.call_soon_threadsafe(callback, *args)


def _set_result(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def _cancel(future: asyncio.Future[Any]) -> None:
    future.cancel()


__all__ = ["JobThreads"]
