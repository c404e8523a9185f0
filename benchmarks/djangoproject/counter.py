"""The tally of the bench's tasks, counted from inside the task in whichever process runs it.

In the adapter's own process (``runworker`` run in it, one worker process) a task calls the
adapter's :class:`RunTally` directly. Where the task runs in another process (the workers of
``runworker --processes N``, the pool of ``@task(process=True)``), it sends one datagram per
start and per end to the adapter's Unix socket, whose path is in ``BENCH_TALLY_SOCKET``; a
worker process adds the requests its redis-py clients have sent so far, so the adapter's round
trips include theirs.

``BENCH_PROFILE=path`` writes a cProfile of the adapter's process from the handshake to the end
of the run (Python >= 3.12's cProfile sees every thread) to ``path``.
"""

from __future__ import annotations

import contextlib
import cProfile
import os
import shutil
import signal
import socket
import tempfile
import threading
from typing import Any

from benchmarks.adapters import common

SOCKET_ENV = "BENCH_TALLY_SOCKET"
PROFILE_ENV = "BENCH_PROFILE"


class RunTally(common.Tally):
    """:class:`common.Tally` (its cap starts with the first job: the worker is ready then) that
    ends this process's children (worker processes, a task pool) before it reports."""

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__(spec, sample_rss=spec["kind"] == "memory")
        #: last round-trip count reported by each worker process, by pid
        self.child_round_trips: dict[int, int] = {}
        #: on (``BENCH_PROFILE=path``) from the handshake; its stats are written at the end
        self.profiler: cProfile.Profile | None = None
        #: the directory of the socket of :func:`listen`, removed at the end
        self.socket_dir = ""

    def end(self) -> None:
        count = self.claim_end()
        if count is None:
            return
        kill_children()
        if self.socket_dir:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
        if self.profiler is not None:
            self.profiler.disable()
            self.profiler.dump_stats(os.environ[PROFILE_ENV])
        theirs = sum(self.child_round_trips.values())
        try:
            self.report(count, round_trips=(common.round_trips() or 0) + theirs or None)
        finally:  # a harness gone (broken pipe) must not leave this process behind
            os._exit(1)


#: Set by the adapter in its own process; None in other processes.
TALLY: RunTally | None = None
_sock: socket.socket | None = None
_pid = os.getpid()


def started() -> None:
    """A job of the bench began (call first thing in the task)."""
    if TALLY is not None:
        TALLY.started()
    else:
        _send(b"s")


def done() -> None:
    """A job of the bench ended (call last thing in the task)."""
    if TALLY is not None:
        TALLY.done()
    else:
        _send(b"d %d %d" % (os.getpid(), _sent()))


def _sent() -> int:
    """Requests this process's redis-py clients sent (common's counter, read without a step)."""
    text = repr(common._sends)  # "count(N)": reading it by next() would count one more
    return int(text[text.index("(") + 1 : -1])


def _send(message: bytes) -> None:
    global _sock, _pid
    if _sock is None or _pid != os.getpid():
        _sock, _pid = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM), os.getpid()
        _sock.connect(os.environ[SOCKET_ENV])
    _sock.send(message)


def listen(tally: RunTally) -> None:
    """Count the jobs other processes report: bind the socket, export its path, read it."""
    tally.socket_dir = tempfile.mkdtemp(prefix="bench-tally-")
    path = os.path.join(tally.socket_dir, "tally.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    server.bind(path)
    os.environ[SOCKET_ENV] = path

    def read() -> None:
        while True:
            message = server.recv(64)
            if message == b"s":
                tally.started()
                continue
            _, pid, sent = message.split()
            tally.child_round_trips[int(pid)] = int(sent)
            tally.done()

    threading.Thread(target=read, daemon=True).start()


def kill_children() -> None:
    """SIGKILL every process whose parent is this one (they would outlive ``os._exit``)."""
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its closing paren
        if stat[stat.rindex(")") + 2 :].split()[1] == me:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry), signal.SIGKILL)
