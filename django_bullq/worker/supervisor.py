"""``runworker --processes N``: a supervisor that keeps N worker processes running.

* every child is ``python -m django runworker <args>`` in its own session (so a terminal's
  Ctrl-C reaches it once, through the supervisor);
* SIGTERM/SIGINT are forwarded once to every child (first: graceful, second: at once);
* a child that exits with :data:`RECYCLE_EXIT` (it reached ``--max-jobs`` or ``--max-memory``)
  is replaced at once;
* a child that dies otherwise (non-zero exit, killed) is replaced after a short back-off; more
  than ``max_restarts`` such deaths within ``restart_window_s`` is a crash loop: the supervisor
  stops the other children and exits non-zero;
* a child that exits 0 on its own (``--burst`` found the queues idle) is not replaced.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

logger = logging.getLogger("django_bullq.worker")

#: Exit code of a worker process that stopped to be recycled (BSD EX_TEMPFAIL).
RECYCLE_EXIT = 75
#: Unexpected deaths tolerated within RESTART_WINDOW_S before the supervisor gives up.
MAX_RESTARTS = 5
RESTART_WINDOW_S = 60.0


class Supervisor:
    """Run ``count`` child processes built by ``command(i)`` (i = 1..count) and keep them alive.

    Args:
        count: number of children (>= 1).
        command: argv of child i.
        env: environment of the children.
        max_restarts: crash-loop bound: deaths allowed per ``restart_window_s``.
        restart_window_s: the crash-loop window, in seconds.
        poll_s: seconds between checks of the children.
    """

    def __init__(
        self,
        count: int,
        command: Callable[[int], Sequence[str]],
        env: Mapping[str, str] | None = None,
        *,
        max_restarts: int = MAX_RESTARTS,
        restart_window_s: float = RESTART_WINDOW_S,
        poll_s: float = 0.05,
    ) -> None:
        if count < 1:
            raise ValueError("count must be >= 1")
        self.count = count
        self.command = command
        self.env = dict(env) if env is not None else None
        self.max_restarts = max_restarts
        self.restart_window_s = restart_window_s
        self.poll_s = poll_s
        self.children: dict[int, subprocess.Popen[Any]] = {}
        self.pending: dict[int, float] = {}  # slot -> monotonic time of its restart
        self.forwarded: set[int] = set()
        self.deaths: deque[float] = deque()
        self.codes: list[int] = []
        self.restarts = 0
        self.recycled = 0
        self.gave_up = False

    def spawn(self, slot: int) -> None:
        child = subprocess.Popen(list(self.command(slot)), env=self.env, start_new_session=True)
        self.children[slot] = child
        logger.info("supervisor: worker process %d started (pid %d)", slot, child.pid)

    def forward(self, signum: int, _frame: Any = None) -> None:
        """Signal handler: pass ``signum`` to every live child; no restarts after it."""
        self.forwarded.add(signum)
        self.pending.clear()
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signum)

    def run(self) -> int:
        """Start the children and supervise them until all have stopped for good.

        Returns:
            The highest exit code of the children's final exits (a child ended by a forwarded
            signal counts 0), at least 1 after a crash loop.
        """
        previous = {
            sig: signal.signal(sig, self.forward) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            for slot in range(1, self.count + 1):
                if not self.forwarded:  # a signal during start-up: start no more children
                    self.spawn(slot)
            while self.children or self.pending:
                self._reap()
                self._restart_due()
                time.sleep(self.poll_s)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        code = max(self.codes, default=0)
        return max(code, 1) if self.gave_up else code

    def _reap(self) -> None:
        for slot, child in list(self.children.items()):
            code = child.poll()
            if code is None:
                continue
            del self.children[slot]
            self._on_exit(slot, child.pid, code)

    def _on_exit(self, slot: int, pid: int, code: int) -> None:
        if self.forwarded or self.gave_up:
            # A child the forwarded signal ended before its handlers were installed had no job.
            self.codes.append(0 if -code in self.forwarded else code)
            return
        if code == RECYCLE_EXIT:
            self.recycled += 1
            logger.info(
                "supervisor: worker process %d (pid %d) recycled; starting a new one", slot, pid
            )
            self.spawn(slot)
            return
        if code == 0:
            self.codes.append(0)
            return
        now = time.monotonic()
        self.deaths.append(now)
        while self.deaths and self.deaths[0] < now - self.restart_window_s:
            self.deaths.popleft()
        if len(self.deaths) > self.max_restarts:
            logger.error(
                "supervisor: worker process %d (pid %d) exited with %d; %d deaths "
                "within %.0f s: giving up",
                slot,
                pid,
                code,
                len(self.deaths),
                self.restart_window_s,
            )
            self.codes.append(code)
            self.gave_up = True
            self.pending.clear()
            for child in self.children.values():
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            return
        delay = min(0.1 * 2 ** (len(self.deaths) - 1), 5.0)
        logger.warning(
            "supervisor: worker process %d (pid %d) died (exit %d); replacing it in %.1f s",
            slot,
            pid,
            code,
            delay,
        )
        self.restarts += 1
        self.pending[slot] = now + delay

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot, due in list(self.pending.items()):
            if due <= now:
                del self.pending[slot]
                self.spawn(slot)


def run_processes(
    count: int,
    worker_args: Sequence[str],
    name: str | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run and supervise ``count`` copies of ``runworker <worker_args>`` as child processes.

    Each child is a full worker process (its own event loop, thread pool and Redis connections;
    the Lua core makes them safe to run side by side). SIGTERM/SIGINT are forwarded to every
    child, so the first signal is graceful in all of them and a second one stops them at once.
    A child that dies is replaced, one that recycles itself (``--max-jobs``, ``--max-memory``)
    too; see :class:`~django_bullq.worker.supervisor.Supervisor`.

    Args:
        count: number of processes (>= 1).
        worker_args: command-line arguments for each child's ``runworker`` (without
            ``--processes`` and ``--name``).
        name: worker name; child i (1-based) is named ``<name>-<i>`` so that dashboards and
            ``processedBy`` tell the processes apart (a replacement keeps the name).
        env: variables added to the children's environment.

    Returns:
        The highest final exit code of the children (0 when all stopped cleanly; at least 1
        when the supervisor gave up on a crash loop).
    """
    import os
    import sys

    from django.conf import settings

    child_env = {**os.environ, **(env or {})}
    child_env["DJANGO_SETTINGS_MODULE"] = settings.SETTINGS_MODULE
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    child_env["BULLQ_SUPERVISED"] = "1"
    from ..checks import runworker_owner

    # `bullq runworker` when another app (Channels) owns the name `runworker`
    own = runworker_owner() == "django_bullq"
    command = [sys.executable, "-m", "django", *(["runworker"] if own else ["bullq", "runworker"])]
    command += worker_args

    def child(slot: int) -> list[str]:
        return [*command, *(["--name", f"{name}-{slot}"] if name else [])]

    supervisor = Supervisor(count, child, child_env)
    logger.info("runworker: supervising %d worker processes", count)
    return supervisor.run()
