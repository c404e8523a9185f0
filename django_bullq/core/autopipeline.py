"""Auto-pipelining: the script calls of one event-loop pass go out in one write on one connection.

redis-py's asyncio client takes a pooled connection per call, writes one command, waits for its
reply and gives the connection back; a worker running ten jobs at once keeps ten connections
busy and pays that round for every job. :class:`AutoPipeline` works as ioredis does for Node
BullMQ: callers queue ``EVALSHA`` commands, a writer task sends everything queued since its last
pass in one write, and a reader task reads the replies in order and hands each to its caller.
Several writes may be in flight at once, so Redis and the worker overlap instead of taking
turns.

What goes over the wire is the same ``EVALSHA`` each call would send alone (no MULTI), so every
call stays its own atomic script run and other BullMQ clients see nothing new.

Failure rules:

- A Redis error reply (a Lua error, NOSCRIPT) belongs to its own call only. After NOSCRIPT (SCRIPT
  FLUSH, a restarted Redis) the script is loaded once for all the callers that met it and their
  calls go out again; a call that meets NOSCRIPT twice is sent as EVAL of its source.
- An argument that cannot be packed is its own caller's error; the others still go out.
- A connection error or timeout fails every call sent on that connection (their outcome is
  unknown, as with any client) and the connection is dropped; calls queued after it go out on a
  new one. Whatever the transport raised, callers see a client ``ConnectionError`` (or
  ``TimeoutError``), the errors they retry: the client library's own (redis-py's or
  valkey-py's, :mod:`~django_bullq.core.clients`), or redis-py's for a reset.
- A caller that stops waiting (cancelled) does not desynchronise the connection: its reply is
  still read and dropped.
- Once a connection is up, the client's ``socket_timeout`` bounds the wait for the next reply
  while calls are in flight (writes included): one timer per connection, re-armed as replies
  come, instead of the timeout that redis-py sets up around every read and every write (about
  a tenth of a no-op job's CPU on the worker's loop). It expires as a client ``TimeoutError``.
  While it connects, redis-py's ``socket_connect_timeout`` and its handshake's reads under
  ``socket_timeout`` apply, as before.

Redis Cluster clients (no connection pool), and clients of a library other than redis-py and
valkey-py, fall back to one :meth:`Scripts.arun` per call.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError

from .calls.call import Call
from .clients import (
    CLIENT_ERRORS,
    NOSCRIPT_ERRORS,
    OUTAGE_ERRORS,
    RESPONSE_ERRORS,
    can_pipeline,
)
from .packing import hiredis_pack
from .pipeline_link import Link, can_read, connection_error, disconnect, fail, timeout_error
from .scripts import Scripts, raise_on_code, settle_replies

T = TypeVar("T")

#: s a link may sit with nothing in flight before a write checks that the server has not closed
#: it (as :data:`~django_bullq.core.threadpipeline.IDLE_CHECK_S` for threads).
IDLE_CHECK_S = 0.1


class AutoPipeline:
    """Pipelines the script calls of one asyncio client over one of its connections.

    Args:
        client: a ``redis.asyncio.Redis`` or ``valkey.asyncio.Valkey`` (its pool supplies
            the connection and its settings: encoding, timeouts, TLS, Sentinel).
        scripts: the :class:`Scripts` registered on ``client``.

    Use one per event loop; :meth:`aclose` closes its connection.
    """

    def __init__(self, client: Any, scripts: Scripts) -> None:
        self._client = client
        self._scripts = scripts
        self._pool = getattr(client, "connection_pool", None) if can_pipeline(client) else None
        self._pending: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []
        self._writer: asyncio.Task[None] | None = None
        self._link: Link | None = None
        self._connecting: Link | None = None
        self._restart_writer = False
        self._closed = False
        #: connections being closed by the watchdog (held: the loop keeps weak references)
        self._closing: set[asyncio.Future[None]] = set()
        #: script loads under way after NOSCRIPT, one per script name
        self._loading: dict[str, asyncio.Future[Any]] = {}
        #: writes sent and calls carried (for tests and benchmarks)
        self.writes = 0
        self.calls = 0

    @property
    def enabled(self) -> bool:
        """Whether calls are pipelined; not for a client without a connection pool (Redis
        Cluster) nor one of a library it does not know
        (:func:`~django_bullq.core.clients.can_pipeline`), whose calls go one by one."""
        return self._pool is not None

    async def run(
        self, name: str, keys: Sequence[str], args: Sequence[Any], *, job_id: str | None = None
    ) -> Any:
        """Run script ``name`` as :meth:`Scripts.arun` does, sharing a write with other calls.

        Returns:
            The script's raw reply.

        Raises:
            ScriptError: the script answered a negative error code (as ``Scripts.arun``).
            redis.exceptions.ResponseError: the script raised an error in Redis.
            redis.exceptions.ConnectionError / TimeoutError: the connection failed before the
                reply was read (the call may or may not have run).
        """
        if not self.enabled or self._closed:
            return await self._scripts.arun(name, keys, args, job_id=job_id)
        try:
            result = await self._submit(name, keys, args)
        except NOSCRIPT_ERRORS:
            # SCRIPT FLUSH or a restarted Redis: the script did not run; load it, send again.
            result = (await self._rerun(name, [(keys, args)]))[0]
            if isinstance(result, BaseException):
                raise result from None
        return raise_on_code(result, name, job_id)

    async def call(self, call: Call[T]) -> T:
        """Run ``call`` as :meth:`run` does; its parsed reply."""
        reply = await self.run(call.script, call.keys, call.args, job_id=call.job_id)
        return call.parse(reply)

    async def run_many(
        self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        """Run script ``name`` once per ``(keys, args)`` of ``calls``, all in one write.

        Not atomic as a whole (BullMQ ``addBulk`` semantics): each call is its own script run.

        Returns:
            The raw replies, in the order of ``calls``.

        Raises:
            The first error among the calls (see :meth:`run`), once every reply is in; the
            calls before and after it have run.
        """
        if not self.enabled or self._closed:
            return [await self._scripts.arun(name, keys, args) for keys, args in calls]
        futures = [self._submit(name, keys, args) for keys, args in calls]
        replies: list[Any] = list(await asyncio.gather(*futures, return_exceptions=True))
        missing = [i for i, reply in enumerate(replies) if isinstance(reply, NOSCRIPT_ERRORS)]
        if missing:
            # Those did not run: load the script and run them, before raising any error.
            again = await self._rerun(name, [calls[i] for i in missing])
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
        return settle_replies(replies, name)

    async def _rerun(
        self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        """Run calls that met NOSCRIPT again: replies or exceptions, in the order of ``calls``.

        The script is loaded once for every caller that met NOSCRIPT (one connection, not one
        per caller: a pass of hundreds of calls would drain the pool), then the calls go out
        through the pipeline again; one that meets NOSCRIPT again (flushed once more) is sent
        as ``EVAL`` of its source (:meth:`Scripts.aeval`), which no flush can refuse.
        """
        replies: list[Any] = [NoScriptError("NOSCRIPT")] * len(calls)
        with contextlib.suppress(*CLIENT_ERRORS):  # Scripts.arun below loads it then
            await self._load(name)
        if not self._closed:
            replies = list(
                await asyncio.gather(
                    *(self._submit(name, keys, args) for keys, args in calls),
                    return_exceptions=True,
                )
            )
        for i, (keys, args) in enumerate(calls):
            if isinstance(replies[i], NOSCRIPT_ERRORS):
                try:
                    replies[i] = await self._scripts.aeval(name, keys, args)
                except Exception as exc:  # noqa: BLE001 - this call's own outcome
                    replies[i] = exc
        return replies

    async def _load(self, name: str) -> None:
        """``SCRIPT LOAD`` script ``name``, once for all the callers waiting for it."""
        loading = self._loading.get(name)
        if loading is None:
            loading = asyncio.ensure_future(self._scripts.aload(name))
            self._loading[name] = loading

            def done(future: asyncio.Future[Any]) -> None:
                self._loading.pop(name, None)
                if not future.cancelled():
                    future.exception()  # retrieved, even when every waiter gave up

            loading.add_done_callback(done)
        await asyncio.shield(loading)

    def _submit(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> asyncio.Future[Any]:
        """Queue one ``EVALSHA`` for the writer; the future gets its reply."""
        command = self._scripts.evalsha_command(name, keys, args)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((command, future))
        if self._writer is None:
            self._writer = asyncio.create_task(self._write())
        return future

    async def reset(self, reason: str) -> None:
        """Drop the connection: calls in flight fail with ``ConnectionError(reason)``.

        For a caller that gave up on a reply (a hung network): later calls go out on a new
        connection instead of queueing behind replies that may never come.
        """
        link = self._link
        if link is not None:
            await self._drop(link, RedisConnectionError(reason))
            if self._connecting is link and self._writer is not None:
                # stuck connecting to a server that does not answer
                self._restart_writer = True
                self._writer.cancel()

    async def aclose(self) -> None:
        """Wait for the calls in flight, then close the connection."""
        self._closed = True
        while self._writer is not None:
            # wait() does not raise the writer's cancel (a reset, the watchdog): only our own
            await asyncio.wait({self._writer})
        link, self._link = self._link, None
        if link is not None:
            if link.reader is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(link.reader)
            await disconnect(link)

    # --- writer and reader -------------------------------------------------------------------

    async def _write(self) -> None:
        """Send what was queued, pass after pass, until nothing is left."""
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                if not any(not fut.done() for _, fut in batch):
                    continue
                link = await self._live_link()
                data, live = self._pack(link.conn, batch)
                if not live:
                    continue
                # In flight from now on, in send order: a reset or a failure fails them too.
                if not link.inflight:
                    self._watch_from_now(link)
                link.inflight.extend(live)
                if not await self._send(link, data):
                    continue
                self.writes += 1
                self.calls += len(live)
                if link.reader is None:
                    link.reader = asyncio.create_task(self._read(link))
        finally:
            self._writer = None
            restart, self._restart_writer = self._restart_writer, False
            if restart and self._pending and not self._closed:
                # reset() cancelled this writer mid-connect; later calls need a writer
                self._writer = asyncio.create_task(self._write())

    async def _live_link(self) -> Link:
        """:meth:`_current_link`, after dropping it if it sat idle and the server closed it
        meanwhile (a restart, a failover: nobody was reading, so nobody noticed), as redis-py's
        pool checks a connection before it hands it out. Busy links skip the check."""
        link = self._current_link()
        idle = not link.inflight and link.conn.is_connected
        if idle and asyncio.get_running_loop().time() - link.used_at > IDLE_CHECK_S:
            try:
                closed = await can_read(link.conn)  # EOF, or data nobody asked for
            except OUTAGE_ERRORS:
                closed = True
            if closed:
                await self._drop(link, RedisConnectionError("closed by the server while idle"))
                link = self._current_link()
        return link

    def _current_link(self) -> Link:
        """The link to write on: the current one, or a new one when it is gone or dead."""
        link = self._link
        if link is None or link.dead:
            assert self._pool is not None
            # A connection of our own (the pool's settings, not one of its slots): it never
            # goes back to the pool, so no other caller meets its unread replies.
            link = self._link = Link(self._pool.make_connection())
        return link

    async def _send(self, link: Link, data: Any) -> bool:
        """Connect ``link`` if need be and send ``data``; False when the link failed or was
        reset meanwhile (its calls in flight are failed with it)."""
        try:
            if not link.conn.is_connected:
                self._connecting = link
                try:
                    await link.conn.connect()
                finally:
                    self._connecting = None
                link.connected(asyncio.get_running_loop().time())
            if not link.dead:
                await link.conn.send_packed_command(data, check_health=False)
                link.used_at = asyncio.get_running_loop().time()
        except Exception as exc:  # noqa: BLE001 - every caller gets the error
            await self._drop(link, connection_error(exc))
            return False
        if link.dead:  # reset, or its reader failed, while this write was under way
            await disconnect(link)
            return False
        return True

    async def _read(self, link: Link) -> None:
        """Read replies in order while calls are in flight on ``link``."""
        quota = _quota(len(link.inflight))
        loop = asyncio.get_running_loop()
        try:
            while link.inflight and not link.dead:
                try:
                    reply: Any = await link.conn.read_response()
                except RESPONSE_ERRORS as exc:
                    reply = exc
                except BaseException as exc:
                    await self._drop(link, connection_error(exc))
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    return
                if link.dead:  # reset() failed the calls in flight while this read waited
                    return
                link.progress_at = loop.time()
                future = link.inflight.popleft()
                if not future.done():
                    if isinstance(reply, RESPONSE_ERRORS):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
                quota -= 1
                if quota <= 0:
                    # Let the callers just answered run (and queue their next calls) before
                    # reading on: their next write then overlaps Redis's work on the rest,
                    # instead of Redis and this process taking turns.
                    await asyncio.sleep(0)
                    quota = _quota(len(link.inflight))
        finally:
            link.reader = None

    def _watch_from_now(self, link: Link) -> None:
        """Calls go in flight on an idle ``link``: from now on a reply is due within its
        timeout (the watchdog is armed once, and re-arms itself while calls are in flight)."""
        loop = asyncio.get_running_loop()
        link.progress_at = loop.time()
        if link.timeout_s is not None and link.watchdog is None:
            link.watchdog = loop.call_at(link.progress_at + link.timeout_s, self._watch, link)

    def _watch(self, link: Link) -> None:
        """The watchdog's timer: fail ``link`` if no reply came within its timeout, else wait
        until the timeout of the last reply."""
        link.watchdog = None
        if link.dead or not link.inflight or link.timeout_s is None:
            return
        loop = asyncio.get_running_loop()
        if self._connecting is link:  # redis-py's connect and handshake timeouts apply
            link.progress_at = loop.time()
        due = link.progress_at + link.timeout_s
        if loop.time() < due:
            link.watchdog = loop.call_at(due, self._watch, link)
            return
        self._fail_link(link, timeout_error(link.conn, link.timeout_s))
        if link.reader is not None:
            link.reader.cancel()  # it waits for a reply that did not come
        closing = asyncio.ensure_future(disconnect(link))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def _drop(self, link: Link, exc: BaseException) -> None:
        """Fail every call in flight on ``link`` and close its connection."""
        if not link.dead:
            self._fail_link(link, exc)
            await disconnect(link)

    def _fail_link(self, link: Link, exc: BaseException) -> None:
        """Mark ``link`` dead and fail every call in flight on it with ``exc``."""
        link.dead = True
        if link.watchdog is not None:
            link.watchdog.cancel()
            link.watchdog = None
        if self._link is link:
            self._link = None
        while link.inflight:
            fail(link.inflight.popleft(), exc)

    @staticmethod
    def _pack(
        conn: Any, batch: list[tuple[tuple[Any, ...], asyncio.Future[Any]]]
    ) -> tuple[list[bytes], list[asyncio.Future[Any]]]:
        """The bytes of the batch's calls still awaited, and their futures, in order.

        A call whose arguments cannot be packed fails alone (its caller's error, not the
        connection's): the others go out.
        """
        hiredis = hiredis_pack(conn)
        pack: Callable[[tuple[Any, ...]], bytes | list[bytes]] = (
            hiredis if hiredis is not None else lambda cmd: conn.pack_command(*cmd)
        )
        data: list[bytes] = []
        live: list[asyncio.Future[Any]] = []
        for cmd, future in batch:
            if future.done():
                continue
            try:
                packed = pack(cmd)
            except Exception as exc:  # noqa: BLE001 - DataError, TypeError: a bad argument
                future.set_exception(exc)
                continue
            if isinstance(packed, bytes):
                data.append(packed)
            else:
                data.extend(packed)
            live.append(future)
        return data, live


def _quota(inflight: int) -> int:
    """Replies to hand out before yielding: a third of those in flight, at least 6.

    Tuned on no-op jobs (2 cores, uvloop): yielding more often makes more, smaller writes (more
    Redis CPU per job); less often, and Redis and the worker take turns again.
    """
    return max(6, inflight // 3)


__all__ = ["AutoPipeline"]
