"""What a running worker knows: the state its fetch loop, job runs, outcomes and duties share.

:class:`WorkerState` is the base of :class:`~django_bullq.core.worker.Worker`; the concept
modules (``execution``, ``outcome``, ``duties``) are mixins over it, so each reads the same
attributes without reaching into another's.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import uuid
from collections.abc import Sequence
from typing import Any

from .. import heartbeat, instrument
from ..autopipeline import AutoPipeline
from ..cancel import CancelToken
from ..job import Job
from ..metrics import MetricsRecorder
from ..queue import Queue
from ..serialization import to_str
from .options import LOOP_SLACK_S, Dispatcher, JobHook, Processor, WorkerOptions
from .threads import JobThreads


class WorkerState:
    """The attributes of one worker (see :class:`~django_bullq.core.worker.Worker` for the args).

    Raises:
        ValueError: ``concurrency`` < 1, or ``limiter_max`` without ``limiter_duration``.
    """

    def __init__(
        self,
        queue: Queue,
        processor: Processor,
        options: WorkerOptions | None = None,
        hooks: Sequence[tuple[JobHook, JobHook]] = (),
        instrumentations: Sequence[instrument.Instrumentation] = (),
    ) -> None:
        self.queue = queue
        self.processor = processor
        self.opts = options or WorkerOptions()
        if self.opts.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.opts.limiter_max > 0 and self.opts.limiter_duration <= 0:
            raise ValueError("limiter_max needs limiter_duration > 0 (ms), as BullMQ's limiter")
        self.hooks = list(hooks)
        #: this worker's own instrumentations, beside the global ones, that see each attempt
        self.instrumentations = tuple(instrumentations)
        self.id = uuid.uuid4().hex
        self._token_seq = 0
        self._running: dict[str, Job] = {}
        self._slots: set[asyncio.Task[None]] = set()
        self._closing = False
        self._force = False
        self._paused_locally = False
        self._wake: asyncio.Event | None = None
        self._slot_freed: asyncio.Event | None = None
        self._executor: JobThreads | None = None
        self._blocking: Any = None
        self._block_task: asyncio.Task[Any] | None = None
        self._timers: list[asyncio.Task[None]] = []
        self._is_async = inspect.iscoroutinefunction(processor)
        #: a Dispatcher's route (it decides per job between the loop and a thread), else None
        self._route = processor.route if isinstance(processor, Dispatcher) else None
        self.processed = 0
        self.failed = 0
        #: attempts that failed and were retried (back to wait, or delayed by their backoff)
        self.retried = 0
        #: monotonic time (s) before which this worker does not fetch (manual rate limit)
        self._limit_until = 0.0
        self._cancel_tokens: dict[str, CancelToken] = {}
        #: name under which the heartbeat is written (``<prefix>:<queue>:bullq:workers:<name>``)
        self.heartbeat_name = self.opts.name or heartbeat.default_name(self.id)
        #: loop time (s) by which the fetch loop must pass its next checkpoint to count as alive
        self._loop_deadline = 0.0
        self._started_ms = 0
        #: fetches sent together on the next pass of the fetch loop (doubles while they all
        #: find a job, back to 1 when one finds none: a trickle costs one fetch per job)
        self._fetch_batch = 1
        self._pipe: AutoPipeline | None = None
        #: ids of jobs whose ending call (finish, retry, delay) is on its way: their lock may
        #: be gone by the time a renewal sent beside it runs, which is no lost lock
        self._ending: set[str] = set()
        #: counts and durations of finished attempts, flushed by a duty (None: not recorded)
        self._metrics = MetricsRecorder(queue.keys) if self.opts.record_metrics else None
        #: the periodic metrics flush under way (shielded: a stop lets it finish)
        self._flushing: asyncio.Future[int] | None = None

    @property
    def _threads(self) -> JobThreads:
        """The running worker's job threads (made by ``arun``)."""
        assert self._executor is not None, "the worker is not running"
        return self._executor

    @property
    def _pipeline(self) -> AutoPipeline:
        """The running worker's pipeline (made by ``arun``)."""
        assert self._pipe is not None, "the worker is not running"
        return self._pipe

    def _checkpoint(self, wait_s: float) -> None:
        """The fetch loop is here and will pass again within ``wait_s`` s plus slack."""
        with contextlib.suppress(RuntimeError):
            self._loop_deadline = asyncio.get_running_loop().time() + wait_s + LOOP_SLACK_S

    def is_fetch_loop_alive(self) -> bool:
        """True while the fetch loop keeps passing its checkpoints (it is not stuck)."""
        return not self._closing and asyncio.get_running_loop().time() <= self._loop_deadline

    def _parse_fetch(self, reply: Any, token: str) -> tuple[Job | None, int, float]:
        """Decode BullMQ's fetch tuple: (job, rate-limit ttl ms, next due ms)."""
        if not isinstance(reply, list) or len(reply) < 4:
            return None, 0, 0.0
        fields, job_id, ttl, due = reply[0], reply[1], reply[2], reply[3]
        if job_id and job_id != 0:
            job = Job.from_hash(self.queue, to_str(job_id) or "", fields)
            job.token = token
            return job, 0, 0.0
        return None, int(ttl or 0), parse_score(due)


def parse_score(value: Any) -> float:
    """A marker / due-time score as float ms; accepts what any BullMQ writes (may be fractional)."""
    try:
        return float(to_str(value) or 0)
    except (TypeError, ValueError):
        return 0.0
