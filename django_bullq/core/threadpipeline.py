"""Group commit: the script calls threads make while a write is in flight go out in the next one.

redis-py's sync client takes a pooled connection per call, writes one command and waits for its
reply; ten threads adding jobs (the views of a threaded WSGI server) pay ten round trips where
one write would carry all ten. :class:`ThreadPipeline` does for threads what
:class:`~django_bullq.core.autopipeline.AutoPipeline` does for coroutines, without a thread of
its own: the first thread to call becomes the writer (the leader) and sends its call at once; calls
other threads make while that write is in flight queue up, and once its replies are in the
leader hands the writing over to the first of them, which sends everything queued meanwhile in
one pipeline, and so on. A lone thread pays exactly one round trip, as it would alone.
One write is under way at a time: letting a second one start while the first waits for its
replies made more, smaller writes and no more adds per second (10 threads adding no-op jobs on
2 cores, where the threads' own Python work is the bound).

What goes over the wire is the same ``EVALSHA`` each call would send alone (no MULTI), so every
call stays its own atomic script run and other BullMQ clients see nothing new. The write goes out
on a connection the client's pool makes, as a redis-py pipeline (``transaction=False``) would send
it, so the client's settings apply as to any call: its ``Retry`` (a dropped connection is
retried as a single call is), timeouts, TLS, Sentinel.

Failure rules (as :class:`~django_bullq.core.autopipeline.AutoPipeline`'s):

- A Redis error reply (a Lua error, NOSCRIPT) and a negative code belong to their own call
  only. After NOSCRIPT (SCRIPT FLUSH, a restarted Redis) the script is loaded once for all the
  calls of the write that met it and they go out again; one that meets NOSCRIPT twice is sent as
  ``EVAL`` of its source.
- An argument that cannot be packed is its own caller's error: the write is then sent call by
  call, each caller getting its own outcome.
- A connection error or timeout the client's retries did not overcome fails every call of the
  write (their outcome is unknown, as with any client) with that redis ``ConnectionError`` /
  ``TimeoutError``; calls queued after it go out in the next write.

Redis Cluster clients (their pipeline refuses ``EVALSHA``), and clients of a library other than
redis-py and valkey-py, fall back to one :meth:`Scripts.run` per call.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from .clients import (
    CLIENT_ERRORS,
    NOSCRIPT_ERRORS,
    OUTAGE_ERRORS,
    RESPONSE_ERRORS,
    UNREACHABLE_ERRORS,
    can_pipeline,
)
from .packing import hiredis_packer
from .scripts import Scripts, raise_on_code, settle_replies

#: A slot's reply before its write was read.
_UNSET: Any = object()
#: s this pipeline's connection may sit unused before a write first checks that the server has
#: not closed it (a restart, a failover, an idle timeout), as redis-py's pool checks each
#: connection it hands out; a write soon after the last one (a busy producer) skips the check.
IDLE_CHECK_S = 0.1


class _Slot:
    """One thread's call: its command, and its reply or error once the write is read.

    ``gate`` is held from the start and released once, by the thread that filled the slot or
    that hands this thread the writing (``lead``). Only a caller's first slot has one (the
    caller waits on it); the other slots of a :meth:`ThreadPipeline.run_many` have None.
    """

    __slots__ = ("command", "error", "gate", "lead", "name", "reply")

    def __init__(self, name: str, command: tuple[Any, ...], *, gated: bool = True) -> None:
        self.name = name
        self.command = command
        self.reply: Any = _UNSET
        self.error: BaseException | None = None
        self.lead = False
        self.gate: threading.Lock | None = None
        if gated:
            self.gate = threading.Lock()
            self.gate.acquire()


class ThreadPipeline:
    """Group-commits the script calls of the threads using one sync client.

    Args:
        client: a sync ``redis.Redis`` or ``valkey.Valkey`` (its pool and settings carry
            every write).
        scripts: the :class:`Scripts` registered on ``client``.

    Thread-safe; no thread of its own, and one connection (made by the client's pool with its
    settings) that only the thread writing uses; :meth:`close` closes it.
    """

    def __init__(self, client: Any, scripts: Scripts) -> None:
        self._client = client
        self._scripts = scripts
        self._lock = threading.Lock()
        self._pending: list[_Slot] = []
        self._busy = False
        self._pool: Any = getattr(client, "connection_pool", None)
        self._conn: Any = None
        #: monotonic s of the connection's last exchange
        self._used_at = 0.0
        _pipelines.add(self)
        #: Whether calls are group-committed; on Redis Cluster (and a client of a library
        #: other than redis-py and valkey-py) they go one by one.
        self.enabled = can_pipeline(client)
        self._hiredis = hiredis_packer(self._pool) if self.enabled else None
        #: writes sent and calls carried (for tests and benchmarks)
        self.writes = 0
        self.calls = 0

    def run(
        self,
        name: str,
        keys: Sequence[str],
        args: Sequence[Any],
        *,
        job_id: str | None = None,
        raise_codes: bool = True,
    ) -> Any:
        """Run script ``name`` as :meth:`Scripts.run` does, sharing a write with other threads.

        Returns:
            The script's raw reply.

        Raises:
            ScriptError: the script answered a negative error code (with ``raise_codes``).
            BullqError: ``keys`` is not the script's number of KEYS.
            redis.exceptions.ResponseError: the script raised an error in Redis.
            redis.exceptions.ConnectionError / TimeoutError: the connection failed and the
                client's retries gave up (the call may or may not have run).
        """
        if not self.enabled:
            return self._scripts.run(name, keys, args, job_id=job_id, raise_codes=raise_codes)
        slot = _Slot(name, self._scripts.evalsha_command(name, keys, args))
        self._commit([slot])
        if slot.error is not None:
            raise slot.error
        return raise_on_code(slot.reply, name, job_id) if raise_codes else slot.reply

    def run_many(
        self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        """:meth:`AutoPipeline.run_many <django_bullq.core.autopipeline.AutoPipeline.run_many>`
        for threads: the calls in one write, shared with the calls of other threads; the
        replies as :func:`~django_bullq.core.scripts.settle_replies` gives them."""
        if not self.enabled:
            return [self._scripts.run(name, keys, args) for keys, args in calls]
        command = self._scripts.evalsha_command
        slots = [_Slot(name, command(name, k, a), gated=not i) for i, (k, a) in enumerate(calls)]
        if slots:
            self._commit(slots)
        return settle_replies(
            [slot.reply if slot.error is None else slot.error for slot in slots], name
        )

    def _commit(self, slots: list[_Slot]) -> None:
        """Queue ``slots`` (one caller's, so they go in one write) and return once their
        replies are in: written by this thread when no write is under way or when the writing
        is handed to it, else by the thread writing then."""
        own = slots[0]
        with self._lock:
            self._pending.extend(slots)
            lead = not self._busy
            self._busy = True
        if not lead and own.gate is not None:  # a caller's first slot always has its gate
            own.gate.acquire()  # released with the replies, or to hand this thread the writing
        if lead or own.lead:
            self._lead(own)

    def _lead(self, own: _Slot) -> None:
        """Write every queued call (``own`` among them), hand the writing to the next queued
        thread, then wake the callers of this write."""
        with self._lock:
            batch, self._pending = self._pending, []
        try:
            self._write(batch)
        finally:
            for slot in batch:
                if slot.reply is _UNSET and slot.error is None:  # interrupted mid-write
                    slot.error = RedisConnectionError("the thread writing this call was stopped")
            with self._lock:
                following = self._pending[0] if self._pending else None
                if following is None:
                    self._busy = False
                else:
                    following.lead = True
            if following is not None and following.gate is not None:
                following.gate.release()  # a caller's first slot: pending starts with one
            for slot in batch:
                if slot is not own and slot.gate is not None:
                    slot.gate.release()

    def _write(self, batch: list[_Slot]) -> None:
        """Send ``batch`` in one pipeline and fill each slot with its reply or error."""
        try:
            replies = self._send([slot.command for slot in batch])
        except UNREACHABLE_ERRORS as exc:
            for slot in batch:
                slot.error = exc
            return
        except Exception:  # noqa: BLE001 - DataError, TypeError: a bad argument, not sent
            replies = [self._alone(slot.command) for slot in batch]
        missing = [slot for slot, reply in zip(batch, replies, strict=True) if _noscript(reply)]
        if missing:
            self._rerun(missing)
        for slot, reply in zip(batch, replies, strict=True):
            if slot in missing:
                continue
            if isinstance(reply, BaseException):
                slot.error = reply
            else:
                slot.reply = reply

    def _send(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """The replies of ``commands`` sent in one write; an error reply in its place.

        As a redis-py pipeline (``transaction=False``) sends them, without its per-command
        bookkeeping: packed by hiredis where it fits (:func:`hiredis_packer`), the exchange
        retried by the connection's ``Retry`` after a connection error (the connection is
        dropped first). The connection is this pipeline's own, made by the pool with its
        settings but never one of its slots (as :class:`~django_bullq.core.autopipeline.
        AutoPipeline`'s): only the thread writing uses it, and taking one from the pool and
        giving it back cost about 20 us per write. It is dropped whenever replies may be left
        unread.
        """
        conn = self._conn
        if conn is None:
            conn = self._conn = self._pool.make_connection()
        elif time.monotonic() - self._used_at > IDLE_CHECK_S:
            _drop_if_closed(conn)
        try:
            data = (
                _coalesce([self._hiredis(command) for command in commands])
                if self._hiredis is not None
                else conn.pack_commands(commands)
            )
            replies: list[Any] = conn.retry.call_with_retry(
                lambda: _exchange(conn, data, len(commands)), lambda _error: conn.disconnect()
            )
        except BaseException:
            conn.disconnect()  # replies may be left unread: the next write connects again
            raise
        self._used_at = time.monotonic()
        self.writes += 1
        self.calls += len(commands)
        return replies

    def close(self) -> None:
        """Close this pipeline's connection (a later call opens a new one)."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.disconnect()

    def _after_fork(self) -> None:
        """In a forked child: forget the parent's writes under way and its connection."""
        self._lock = threading.Lock()
        self._pending = []
        self._busy = False
        self._conn = None

    def _alone(self, command: tuple[Any, ...]) -> Any:
        """``command``'s reply, sent by itself; its error in its place."""
        try:
            return self._send([command])[0]
        except Exception as exc:  # noqa: BLE001 - this call's own outcome
            return exc

    def _rerun(self, missing: list[_Slot]) -> None:
        """Calls that met NOSCRIPT: load each script once, send them again in one write; one
        that meets NOSCRIPT again is sent as ``EVAL`` of its source."""
        for name in {slot.name for slot in missing}:
            with contextlib.suppress(*CLIENT_ERRORS):  # the EVAL below needs no loaded script
                self._scripts.load(name)
        try:
            replies = self._send([slot.command for slot in missing])
        except Exception as exc:  # noqa: BLE001 - every one of them gets it
            replies = [exc] * len(missing)
        for slot, reply in zip(missing, replies, strict=True):
            if _noscript(reply):
                try:
                    reply = self._scripts.eval_evalsha(slot.name, slot.command)
                except Exception as exc:  # noqa: BLE001 - this call's own outcome
                    reply = exc
            if isinstance(reply, BaseException):
                slot.error = reply
            else:
                slot.reply = reply


#: Every ThreadPipeline, for :func:`_after_fork` (a weak set: a pipeline's queue owns it).
_pipelines: weakref.WeakSet[ThreadPipeline] = weakref.WeakSet()


def _after_fork() -> None:
    for pipeline in list(_pipelines):
        pipeline._after_fork()


os.register_at_fork(after_in_child=_after_fork)


def _drop_if_closed(conn: Any) -> None:
    """Disconnect ``conn`` if the server closed it (or sent what nobody asked for): the next
    send connects again instead of failing on a dead socket."""
    try:
        if conn.can_read(timeout=0):
            conn.disconnect()
    except OUTAGE_ERRORS:
        conn.disconnect()


def _exchange(conn: Any, data: list[bytes], count: int) -> list[Any]:
    """Send ``data`` (``count`` packed commands) on ``conn`` and read their ``count`` replies;
    an error reply in its place.

    An unconnected ``conn`` is connected by its own ``connect()`` first: redis-py 7 and 8 connect
    inside ``send_packed_command`` without the class's ``connect()``, which skips Sentinel's
    master lookup (``SentinelManagedConnection`` would reach its default ``localhost:6379``).
    """
    if conn._sock is None:
        conn.connect()
    conn.send_packed_command(data)
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(conn.read_response())
        except RESPONSE_ERRORS as exc:
            replies.append(exc)
    return replies


#: Packed commands up to this many bytes are joined into one buffer (redis-py's own
#: ``pack_commands`` joins below 6,000); a larger one is sent as it is, not copied.
_JOIN_BELOW_BYTES = 64 * 1024


def _coalesce(packed: list[bytes]) -> list[bytes]:
    """``packed`` as few buffers: redis-py's sync ``send_packed_command`` makes one
    ``sendall`` system call per item, which for a bulk add of 1,000 jobs was 1,000 calls."""
    if len(packed) == 1:
        return packed
    buffers: list[bytes] = []
    small: list[bytes] = []
    for piece in packed:
        if len(piece) < _JOIN_BELOW_BYTES:
            small.append(piece)
            continue
        if small:
            buffers.append(b"".join(small))
            small = []
        buffers.append(piece)
    if small:
        buffers.append(b"".join(small))
    return buffers


def _noscript(reply: Any) -> bool:
    return isinstance(reply, NOSCRIPT_ERRORS)


__all__ = ["ThreadPipeline"]
