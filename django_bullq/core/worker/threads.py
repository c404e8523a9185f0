"""The worker's job threads: where sync processors run, handed calls by the event loop.

:class:`JobThreads` does what ``loop.run_in_executor(ThreadPoolExecutor(n), ...)`` does for a
worker, with far fewer thread wake-ups, which cost more than a no-op job itself (a wake-up is a
futex call and a GIL hand-over; about 35 µs a call with one wake-up each way, measured here):

* a call is appended to a deque; the loop wakes a sleeping thread (the last to sleep, by
  releasing its own lock), or starts one up to ``size``, only when no thread is *searching*,
  that is awake and about to take a call. A
  thread that takes a call and sees more waiting wakes the next one before it runs its own,
  so calls that block still run ``size`` at once;
* a thread that finishes a call takes the next one without sleeping;
* results go back to the loop in batches: the first result posts one ``call_soon_threadsafe``
  callback, which sets the results that have arrived by the time it runs in three parts, one
  per loop pass. The jobs of one part then send their finish calls in a write of their own,
  which Redis works on while the loop settles the next part; set all at once, the jobs of a
  batch finish in one write, and Redis and the loop take turns (no-op ``@task def`` jobs at
  concurrency 10 ran 40% faster in parts, measured on 2 cores).

So a stream of short calls is served by a few threads that seldom sleep, and calls that block
get a thread each (a call waits for a thread only while ``size`` calls run). Like
``ThreadPoolExecutor``, its threads are not daemons: the interpreter waits at exit for a call
still running in one.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ..errors import contained

#: A batch of results is set in this many loop passes (see the module's docstring) ...
PARTS = 3
#: ... of at least this many results each.
MIN_PART = 2


class _HandBack:
    """Results of calls made from one event loop, set on that loop in batches."""

    __slots__ = ("done", "loop", "part", "posted")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        #: (future, exception or None, result) in the order the calls ended
        self.done: deque[tuple[asyncio.Future[Any], BaseException | None, Any]] = deque()
        #: a drain is scheduled on the loop (posted by a thread, or the next part's)
        self.posted = False
        #: outcomes the drain sets a pass, for the batch it is setting (0: none under way)
        self.part = 0

    def put(self, future: asyncio.Future[Any], error: BaseException | None, value: Any) -> None:
        """From a job thread: hand one outcome back (the first of a batch posts the drain)."""
        self.done.append((future, error, value))
        if not self.posted:
            self.posted = True
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody awaits
                self.loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        """On the loop: set the outcomes handed back so far, a third of them a pass."""
        done = self.done
        if not self.part:  # a new batch: its part size
            self.part = max(MIN_PART, -(-len(done) // PARTS))
        if len(done) > self.part:
            for _ in range(self.part):
                _settle(*done.popleft())
            self.loop.call_soon(self.drain)  # still posted: threads append without posting
            return
        self.part = 0
        self.posted = False  # before popping: a result appended after this posts again
        while done:
            _settle(*done.popleft())


def _settle(future: asyncio.Future[Any], error: BaseException | None, value: Any) -> None:
    if future.done():  # cancelled while it ran
        return
    if error is None:
        future.set_result(value)
    elif isinstance(error, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(error)


_Item = tuple[_HandBack, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class JobThreads:
    """Up to ``size`` threads that run calls for an event loop.

    Args:
        size: the most threads started (the worker's concurrency), >= 1.
        name_prefix: thread names are ``<prefix>_<n>``.
    """

    def __init__(self, size: int, name_prefix: str) -> None:
        self._size = size
        self._prefix = name_prefix
        self._calls: deque[_Item] = deque()
        self._lock = threading.Lock()
        #: threads awake and not running a call (about to take one); changed under _lock
        self._searching = 0
        #: the wake locks of the sleeping threads, the last to sleep last (woken first: its
        #: stack is warm, and a light load keeps to few threads); changed under _lock
        self._sleepers: list[threading.Lock] = []
        self._threads: list[threading.Thread] = []
        self._hand_backs: dict[asyncio.AbstractEventLoop, _HandBack] = {}
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
        hand_back = self._hand_backs.get(loop)
        if hand_back is None:
            hand_back = self._hand_backs[loop] = _HandBack(loop)
        future: asyncio.Future[Any] = loop.create_future()
        self._calls.append((hand_back, future, fn, args))
        # A searching thread takes the call. Read without the lock: a thread stops searching
        # only after it re-checked the deque (see _park), so the call is never stranded.
        if self._searching == 0:
            with self._lock:
                self._wake_one()
        return future

    def shutdown(self, *, wait: bool) -> None:
        """Stop the threads once their running call returns; calls not yet taken are
        cancelled. ``wait``: block until the threads have ended."""
        self._closed = True
        with contextlib.suppress(IndexError):
            while True:
                hand_back, future, _, _ = self._calls.popleft()
                hand_back.put(future, asyncio.CancelledError(), None)
        with self._lock:
            for wake in self._sleepers:
                wake.release()
            self._sleepers.clear()
        if wait:
            for thread in self._threads:
                thread.join()

    def _wake_one(self) -> None:
        """Under _lock: make one more thread search (wake a sleeper, or start a thread)."""
        if self._sleepers:
            self._searching += 1
            self._sleepers.pop().release()
        elif len(self._threads) < self._size and not self._closed:
            thread = threading.Thread(
                target=self._work, name=f"{self._prefix}_{len(self._threads)}"
            )
            thread.start()  # it waits for _lock before it counts itself out of searching
            self._threads.append(thread)
            self._searching += 1

    def _park(self, wake: threading.Lock) -> bool:
        """Stop searching and sleep until woken (``wake``, held, is this thread's lock: the
        waker releases it); False once shut down (the thread ends)."""
        with self._lock:
            self._searching -= 1
            if self._calls and not self._closed:  # appended while run() saw us searching
                self._searching += 1
                return True
            if self._closed:
                return False
            self._sleepers.append(wake)
        wake.acquire()  # the waker counted us as searching again
        return not self._closed

    def _work(self) -> None:
        calls = self._calls
        wake = threading.Lock()
        wake.acquire()
        while True:
            try:
                hand_back, future, fn, args = calls.popleft()
            except IndexError:
                if self._park(wake):
                    continue
                return
            with self._lock:
                self._searching -= 1
                if calls and self._searching == 0:  # more wait: the next thread takes them
                    self._wake_one()
            error: BaseException | None = None
            value: Any = None
            if self._closed or future.cancelled():
                error = asyncio.CancelledError()
            else:
                try:
                    value = fn(*args)
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                    # as an Exception: a SystemExit or CancelledError set on the loop's future
                    # would stop the worker's loop, or cancel the task awaiting it
                    error = contained(exc)
            hand_back.put(future, error, value)
            del hand_back, future, fn, args, error, value  # hold no job while searching
            with self._lock:
                self._searching += 1


__all__ = ["JobThreads"]
