"""QueueBase: a queue's name, keys, connection and clients, and the script-call executors
(BullMQ's ``QueueBase``).

:class:`QueueBase` runs what ``django_bullq.core.calls`` builds: one script call (``_run``), a
read of plain commands (``_read``), one client method call (``_command``) or an operation of
several round trips (``_drive``), each with its async twin: the only place where a sync and an
async half both hold logic.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..autopipeline import AutoPipeline
from ..calls import FETCH_KEYS, Batch, Call, Command, Read, Step, Steps, adrive, drive
from ..connection import Connection, ConnectionConfigError, as_connection, is_cluster
from ..errors import JobNotFound
from ..job import Job
from ..keys import QueueKeys
from ..names import has_hash_tag
from ..options import JobOptions
from ..scripts import Scripts, raise_on_code
from ..serialization import DEFAULT_MAX_PAYLOAD_BYTES
from ..threadpipeline import ThreadPipeline

if TYPE_CHECKING:
    from .queue import Queue

T = TypeVar("T")
R = TypeVar("R")

#: Step kind -> the name of its sync executor; the async one is ``_a`` + the name without ``_``.
EXECUTORS: dict[type, str] = {Call: "_run", Batch: "_batch", Read: "_read", Command: "_command"}


@dataclass(frozen=True, slots=True)
class _LoopClients:
    """The clients of one asyncio event loop: asyncio redis client, its scripts, auto-pipeline."""

    loop: asyncio.AbstractEventLoop
    client: Any
    scripts: Scripts
    pipeline: AutoPipeline


class QueueBase:
    """What every part of a queue shares (BullMQ ``QueueBase``); see
    :class:`~django_bullq.core.queue.queue.Queue` for the arguments and errors."""

    def __init__(
        self,
        name: str,
        connection: Any = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "bull",
        default_job_options: JobOptions | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        self.keys = QueueKeys(name, prefix)
        self.name = name
        self.prefix = prefix
        self.connection: Connection = as_connection(connection)
        self.default_job_options = default_job_options or JobOptions()
        self.max_payload_bytes = max_payload_bytes
        self._local = threading.local()
        self._sync_scripts: Scripts | None = None
        self._thread_pipeline: ThreadPipeline | None = None
        self._thread_pipeline_lock = threading.Lock()
        self._fetch_keys = [self.keys[s] for s in FETCH_KEYS]
        #: Whether the queue is on Redis Cluster, where every key of the queue must hash to
        #: one slot (case B32).
        self.is_cluster = (
            self.connection.scheme == "redis+cluster"
            or is_cluster(self.connection.client)
            or is_cluster(self.connection.async_client)
        )
        if self.is_cluster and not has_hash_tag(prefix):
            raise ConnectionConfigError(
                f"queue {name!r}: on Redis Cluster the prefix must hold a hash tag, e.g. "
                f"'{{{prefix}}}', so all keys of a queue share one slot"
            )

    def __repr__(self) -> str:
        return f"<Queue {self.keys.queue_key}>"

    # --- clients ---------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """Synchronous redis-py client."""
        return self.connection.sync_client()

    @property
    def scripts(self) -> Scripts:
        if self._sync_scripts is None:
            self._sync_scripts = Scripts(self.client)
        return self._sync_scripts

    @property
    def pipeline(self) -> ThreadPipeline:
        """The sync client's :class:`~django_bullq.core.threadpipeline.ThreadPipeline`:
        concurrent adds of threads share a write (one per queue, made on first use)."""
        if self._thread_pipeline is None:
            with self._thread_pipeline_lock:
                if self._thread_pipeline is None:
                    self._thread_pipeline = ThreadPipeline(self.client, self.scripts)
        return self._thread_pipeline

    def _loop_clients(self) -> _LoopClients:
        """The running event loop's clients, made on its first use (one set per loop)."""
        loop = asyncio.get_running_loop()
        cached: _LoopClients | None = getattr(self._local, "loop_clients", None)
        if cached is None or cached.loop is not loop:
            client = self.connection.new_async_client()
            scripts = Scripts(client)
            cached = _LoopClients(loop, client, scripts, AutoPipeline(client, scripts))
            self._local.loop_clients = cached
        return cached

    @property
    def aclient(self) -> Any:
        """Asyncio client of the running event loop (one per loop)."""
        return self._loop_clients().client

    @property
    def ascripts(self) -> Scripts:
        """:class:`Scripts` on :attr:`aclient`."""
        return self._loop_clients().scripts

    @property
    def apipeline(self) -> AutoPipeline:
        """The running loop's :class:`AutoPipeline`: concurrent adds share one write."""
        return self._loop_clients().pipeline

    # --- script calls (django_bullq.core.calls) --------------------------------------------

    def _run(self, call: Call[T]) -> T:
        """Run one script call on the sync client; its parsed reply (a ``pipelined`` call goes
        through the :attr:`pipeline`, sharing a write with other threads' calls)."""
        return call.parse(
            (self.pipeline if call.pipelined else self.scripts).run(
                call.script, call.keys, call.args, job_id=call.job_id, raise_codes=call.raise_codes
            )
        )

    async def _arun(self, call: Call[T]) -> T:
        """Async twin of :meth:`_run` (the running loop's client; a ``pipelined`` call goes
        through its auto-pipeline)."""
        if call.pipelined:
            pipeline = self.apipeline
            return call.parse(
                await pipeline.run(call.script, call.keys, call.args, job_id=call.job_id)
            )
        return call.parse(
            await self.ascripts.arun(
                call.script, call.keys, call.args, job_id=call.job_id, raise_codes=call.raise_codes
            )
        )

    def _drive(self, steps: Steps[R]) -> R:
        """Run an operation of several round trips (a generator of calls) to its end."""
        return drive(self._step, steps)

    async def _adrive(self, steps: Steps[R]) -> R:
        """Async twin of :meth:`_drive`."""
        return await adrive(self._astep, steps)

    def _step(self, step: Step) -> Any:
        """Run one step with the sync executor of its kind (:data:`EXECUTORS`)."""
        return getattr(self, EXECUTORS[type(step)])(step)

    async def _astep(self, step: Step) -> Any:
        """Async twin of :meth:`_step`: the kind's async executor (``_a`` + its name)."""
        return await getattr(self, "_a" + EXECUTORS[type(step)][1:])(step)

    def _batch(self, batch: Batch[T]) -> T:
        """Send a batch's script calls in one pipeline (MULTI/EXEC when it asks); its parsed
        replies. Outside a transaction, calls of one script go through the :attr:`pipeline`
        (one write, shared with other threads' calls; it raises their codes itself)."""
        pipeline = self.pipeline
        calls = batch.calls
        if pipeline.enabled and not batch.transaction and len({c.script for c in calls}) == 1:
            pairs = [(call.keys, call.args) for call in calls]
            return batch.parse(pipeline.run_many(calls[0].script, pairs))
        pipe = self.client.pipeline(transaction=batch.transaction)
        for call in batch.calls:
            self.scripts.run(call.script, call.keys, call.args, client=pipe)
        return batch.parse(_checked(batch, pipe.execute()))

    async def _abatch(self, batch: Batch[T]) -> T:
        """Async twin of :meth:`_batch`: outside a transaction, calls of one script go through
        the loop's auto-pipeline, sharing its write with other coroutines' calls (it raises
        their codes itself); on a Redis Cluster a cluster pipeline sends them."""
        pipeline = self.apipeline
        calls = batch.calls
        if pipeline.enabled and not batch.transaction and len({c.script for c in calls}) == 1:
            pairs = [(call.keys, call.args) for call in calls]
            return batch.parse(await pipeline.run_many(calls[0].script, pairs))
        pipe = self.aclient.pipeline(transaction=batch.transaction)
        for call in batch.calls:
            await self.ascripts.arun(call.script, call.keys, call.args, client=pipe)
        return batch.parse(_checked(batch, await pipe.execute()))

    def _read(self, read: Read[T]) -> T:
        """Send plain commands in one MULTI/EXEC; their parsed replies."""
        pipe = self.client.pipeline(transaction=read.transaction)
        for command in read.commands:
            pipe.execute_command(*command)
        return read.parse(pipe.execute(raise_on_error=read.raise_on_error))

    async def _aread(self, read: Read[T]) -> T:
        """Async twin of :meth:`_read`."""
        pipe = self.aclient.pipeline(transaction=read.transaction)
        for command in read.commands:
            pipe.execute_command(*command)
        return read.parse(await pipe.execute(raise_on_error=read.raise_on_error))

    def _command(self, command: Command[T]) -> T:
        """Call one method of the sync client; its parsed return value."""
        return command.parse(getattr(self.client, command.method)(*command.args, **command.kwargs))

    async def _acommand(self, command: Command[T]) -> T:
        """Async twin of :meth:`_command` (the running loop's client)."""
        return command.parse(
            await getattr(self.aclient, command.method)(*command.args, **command.kwargs)
        )

    def fetch_keys(self) -> list[str]:
        """KEYS[1..11] of every script that can fetch a job (built once: hot path)."""
        return self._fetch_keys

    # --- one job (BullMQ ``Job.fromId``; the job schedulers return one too) ---------------

    def get_job(self, job_id: str, *, required: bool = False) -> Job | None:
        """The job with id ``job_id``, or None (``required=True``: raise JobNotFound).

        A key that is not a hash (written there by hand) gives a Job with no fields whose
        :attr:`~django_bullq.core.job.Job.corrupt` says so, not an error."""
        return self._read(self._job_read(job_id, required=required))

    async def aget_job(self, job_id: str, *, required: bool = False) -> Job | None:
        """Async twin of :meth:`get_job`."""
        return await self._aread(self._job_read(job_id, required=required))

    def _job_read(self, job_id: str, *, required: bool = False) -> Read[Job | None]:
        """``HGETALL`` of the job's hash, read as a :class:`Job` (or None, or JobNotFound);
        its error reply (WRONGTYPE) is read as an unreadable Job."""
        job_id = str(job_id)

        def job_or_none(replies: list[Any]) -> Job | None:
            raw = replies[0]
            if not raw:
                if required:
                    raise JobNotFound(-1, job_id, "get_job")
                return None
            return self._job(job_id, raw)

        return Read(
            (("HGETALL", self.keys.job(job_id)),),
            job_or_none,
            transaction=False,
            raise_on_error=False,
        )

    def _job(self, job_id: str, raw: Any) -> Job:
        """A :class:`Job` of this queue from its raw hash (a Job calls :class:`Queue` methods;
        every QueueBase made is a Queue)."""
        return Job.from_hash(cast("Queue", self), job_id, raw)

    def close(self) -> None:
        """Close the synchronous client's connections (asyncio ones close with their loop)."""
        if self._thread_pipeline is not None:
            self._thread_pipeline.close()
        if self.connection.client is not None:
            self.connection.client.close()


def _checked(batch: Batch[Any], replies: list[Any]) -> list[Any]:
    """``replies`` of ``batch``, once every one is in; with ``raise_codes``, the first negative
    integer reply raised as its :class:`~django_bullq.core.errors.ScriptError`."""
    if batch.raise_codes:
        for call, reply in zip(batch.calls, replies, strict=True):
            raise_on_code(reply, call.script, call.job_id)
    return replies
