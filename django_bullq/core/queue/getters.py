"""QueueGetters: counts, states, ids, jobs, outcomes, metrics and limit reads (BullMQ's
``QueueGetters``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .. import calls, limits
from ..calls import Call, Command, Read, Steps, operations, reads
from ..errors import JobNotFound, JobTimeoutError
from ..job import STATES, Job
from ..keys import QueueKeys
from ..serialization import loads, to_str
from .base import QueueBase


class QueueGetters(QueueBase):
    """Reads of a queue (BullMQ ``QueueGetters``); nothing here writes."""

    # --- counts, states, ids, jobs --------------------------------------------------------

    def _states(self, states: Sequence[str]) -> list[str]:
        chosen = list(states) or list(STATES)
        for s in chosen:
            if s not in STATES and s != "paused":
                raise ValueError(f"unknown job state {s!r}; expected one of {STATES}")
        return chosen

    def get_job_counts(self, *states: str) -> dict[str, int]:
        """Jobs per state, read atomically (BullMQ ``getJobCounts``).

        Args:
            states: state names (default: all of :data:`~django_bullq.core.job.STATES`).
                ``waiting`` counts the wait list; a legacy v5 ``paused`` list can be asked for.

        Returns:
            ``{state: count}``.
        """
        return self._read(reads.job_counts(self.keys, self._states(states)))

    async def aget_job_counts(self, *states: str) -> dict[str, int]:
        """Async twin of :meth:`get_job_counts`."""
        return await self._aread(reads.job_counts(self.keys, self._states(states)))

    def count(self) -> int:
        """Jobs not yet started: waiting + delayed + prioritized + waiting-children."""
        return sum(
            self.get_job_counts("waiting", "delayed", "prioritized", "waiting-children").values()
        )

    def get_job_state(self, job_id: str) -> str:
        """BullMQ state of a job: a name from :data:`STATES`, or ``"unknown"``."""
        return self._read(reads.job_state(self.keys, str(job_id)))

    async def aget_job_state(self, job_id: str) -> str:
        """Async twin of :meth:`get_job_state`."""
        return await self._aread(reads.job_state(self.keys, str(job_id)))

    def get_job_ids(
        self, *states: str, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[str]:
        """Job ids in the given states, newest first unless ``asc`` (BullMQ ``getRanges``)."""
        return self._read(reads.job_ids(self.keys, self._states(states), start, end, asc=asc))

    def get_job_fields(
        self, job_ids: Sequence[str], fields: Sequence[str]
    ) -> list[list[Any] | None]:
        """``fields`` of each job of ``job_ids``, in one call (``getJobFields``: many jobs read
        at the cost of one command, for walks over thousands of them).

        Returns:
            One list of values (bytes, or None for a field the job has not) per id, in order;
            None for a job that does not exist (all its fields absent).
        """
        return _present(self._run(_fields_call(self.keys, job_ids, fields)))

    async def aget_job_fields(
        self, job_ids: Sequence[str], fields: Sequence[str]
    ) -> list[list[Any] | None]:
        """Async twin of :meth:`get_job_fields`."""
        return _present(await self._arun(_fields_call(self.keys, job_ids, fields)))

    async def aget_job_ids(
        self, *states: str, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[str]:
        """Async twin of :meth:`get_job_ids`."""
        return await self._aread(
            reads.job_ids(self.keys, self._states(states), start, end, asc=asc)
        )

    def get_jobs(self, *states: str, start: int = 0, end: int = -1, asc: bool = False) -> list[Job]:
        """Jobs in the given states (ids without a hash are skipped; BullMQ ``getJobs``)."""
        return self._drive(self._jobs(self._states(states), start, end, asc=asc))

    async def aget_jobs(
        self, *states: str, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[Job]:
        """Async twin of :meth:`get_jobs`."""
        return await self._adrive(self._jobs(self._states(states), start, end, asc=asc))

    def _jobs(self, states: list[str], start: int, end: int, *, asc: bool) -> Steps[list[Job]]:
        hashes = yield from reads.job_hashes(self.keys, states, start, end, asc=asc)
        return [self._job(i, raw) for i, raw in hashes]

    # --- outcome and wait -----------------------------------------------------------------

    def _outcome_read(self, job_id: str) -> Read[tuple[tuple[str, Any] | None, str, bool]]:
        """The last events id and the job's outcome fields, read atomically."""
        job_key = self.keys.job(job_id)
        commands = (
            ("XREVRANGE", self.keys["events"], "+", "-", "COUNT", 1),
            ("ZSCORE", self.keys["completed"], job_id),
            ("ZSCORE", self.keys["failed"], job_id),
            ("HMGET", job_key, "returnvalue", "failedReason", "finishedOn"),
            ("EXISTS", job_key),
        )
        return Read(commands, self._outcome)

    @staticmethod
    def _outcome(replies: list[Any]) -> tuple[tuple[str, Any] | None, str, bool]:
        """(outcome or None, last events id, job hash exists) from :meth:`_outcome_read`."""
        last, completed, failed, (ret, reason, finished), exists = replies
        last_id = to_str(last[0][0]) if last else "0-0"
        if completed is not None or (finished is not None and reason is None):
            return ("completed", loads(ret) if ret is not None else None), last_id or "0-0", True
        if failed is not None or finished is not None:
            return ("failed", to_str(reason)), last_id or "0-0", True
        return None, last_id or "0-0", bool(exists)

    def _search_events(self, entries: list[Any], job_id: str) -> tuple[str, Any] | None:
        """The outcome of ``job_id`` from events (newest first); for jobs removed at finish."""
        for _, raw in entries:
            fields = {to_str(k): to_str(v) for k, v in raw.items()}
            if fields.get("jobId") != job_id:
                continue
            if fields.get("event") == "completed":
                return ("completed", loads(fields.get("returnvalue")))
            if fields.get("event") == "failed":
                return ("failed", fields.get("failedReason"))
        return None

    def _missing(self, job_id: str, found: tuple[str, Any] | None) -> tuple[str, Any]:
        if found is None:
            raise JobNotFound(-1, job_id, "wait")
        return found

    def finished_outcome(self, job_id: str) -> tuple[str, Any] | None:
        """``("completed", returnvalue)``, ``("failed", reason)`` or None while unfinished.

        A job removed when it finished (removeOnComplete / removeOnFail) is answered from the
        events stream.

        Raises:
            JobNotFound: no such job, and no finish event of it in the events stream.
        """
        return self._drive(self._poll_outcome(job_id))[0]

    def _poll_outcome(self, job_id: str) -> Steps[tuple[tuple[str, Any] | None, str]]:
        """(outcome or None, last events id); a job removed at finish is looked up in events."""
        outcome, last_id, exists = yield self._outcome_read(job_id)
        if outcome is None and not exists:
            entries = yield Command("xrevrange", (self.keys["events"],), {"count": 20_000})
            outcome = self._missing(job_id, self._search_events(entries, job_id))
        return outcome, last_id

    async def afinished_outcome(self, job_id: str) -> tuple[str, Any] | None:
        """Async twin of :meth:`finished_outcome`."""
        return (await self._adrive(self._poll_outcome(job_id)))[0]

    def wait_until_finished(self, job_id: str, timeout: float | None = 30.0) -> tuple[str, Any]:
        """Block until the job finishes (BullMQ ``waitUntilFinished``).

        Reads the state, then sleeps in ``XREAD BLOCK`` on the events stream from the entry
        seen with that state, so any new event wakes it at once (no polling delay).

        Args:
            timeout: seconds; None waits without limit.

        Returns:
            ``("completed", returnvalue)`` or ``("failed", failedReason)``.

        Raises:
            JobTimeoutError: not finished within ``timeout``. JobNotFound: no such job.
        """
        return self._drive(self._wait(job_id, timeout))

    async def await_finished(self, job_id: str, timeout: float | None = 30.0) -> tuple[str, Any]:
        """Async twin of :meth:`wait_until_finished`."""
        return await self._adrive(self._wait(job_id, timeout))

    def _wait(self, job_id: str, timeout: float | None) -> Steps[tuple[str, Any]]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            outcome, last_id = yield from self._poll_outcome(job_id)
            if outcome is not None:
                return outcome
            block_ms = self._block_ms(deadline, job_id, timeout)
            yield Command(
                "xread", ({self.keys["events"]: last_id},), {"count": 1, "block": block_ms}
            )

    @staticmethod
    def _block_ms(deadline: float | None, job_id: str, timeout: float | None) -> int:
        if deadline is None:
            return 1000
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise JobTimeoutError(f"job {job_id} did not finish within {timeout} s")
        # at most 1 s per block: well under any client socket timeout
        return max(1, min(int(remaining * 1000), 1000))

    # --- paused, metrics ------------------------------------------------------------------

    def is_paused(self) -> bool:
        """True while ``meta.paused`` exists."""
        return bool(self.client.hexists(self.keys["meta"], "paused"))

    async def ais_paused(self) -> bool:
        """Async twin of :meth:`is_paused`."""
        return bool(await self.aclient.hexists(self.keys["meta"], "paused"))

    def get_metrics(self, kind: str, start: int = 0, end: int = -1) -> operations.Metrics:
        """Per-minute ``"completed"``/``"failed"`` counts as a
        :class:`~django_bullq.core.calls.operations.Metrics` (BullMQ ``getMetrics``)."""
        return self._read(operations.get_metrics(self.keys, kind, start, end))

    async def aget_metrics(self, kind: str, start: int = 0, end: int = -1) -> operations.Metrics:
        """Async twin of :meth:`get_metrics`."""
        return await self._aread(operations.get_metrics(self.keys, kind, start, end))

    # --- rate limits, global concurrency, deduplication (protocol §5.12-§5.14) ------------

    def get_global_rate_limit(self) -> dict[str, int] | None:
        """``{"max": jobs, "duration": ms}``, or None when unset (BullMQ ``getGlobalRateLimit``)."""
        return limits.parse_rate_limit(self.client.hmget(self.keys["meta"], "max", "duration"))

    async def aget_global_rate_limit(self) -> dict[str, int] | None:
        """Async twin of :meth:`get_global_rate_limit`."""
        return limits.parse_rate_limit(
            await self.aclient.hmget(self.keys["meta"], "max", "duration")
        )

    def get_rate_limit_ttl(self, max_jobs: int | None = None) -> int:
        """ms until the current rate-limit window ends, 0 when not limited now (BullMQ
        ``getRateLimitTtl``): with ``max_jobs`` (or ``meta.max``) only when the window is full;
        with neither, the limiter key's remaining TTL (a manual
        :meth:`~django_bullq.core.queue.limiting.QueueLimits.rate_limit`)."""
        return limits.rate_limit_ttl(
            self._run_limiter_read(self.client.pipeline(), max_jobs).execute(), max_jobs
        )

    async def aget_rate_limit_ttl(self, max_jobs: int | None = None) -> int:
        """Async twin of :meth:`get_rate_limit_ttl`."""
        pipe = self._run_limiter_read(self.aclient.pipeline(), max_jobs)
        return limits.rate_limit_ttl(await pipe.execute(), max_jobs)

    def _run_limiter_read(self, pipe: Any, max_jobs: int | None) -> Any:
        pipe.hget(self.keys["meta"], "max")
        pipe.get(self.keys["limiter"])
        pipe.pttl(self.keys["limiter"])
        return pipe

    def get_global_concurrency(self) -> int | None:
        """The global concurrency cap, or None when unset (BullMQ ``getGlobalConcurrency``)."""
        return limits.parse_int(self.client.hget(self.keys["meta"], "concurrency"))

    async def aget_global_concurrency(self) -> int | None:
        """Async twin of :meth:`get_global_concurrency`."""
        return limits.parse_int(await self.aclient.hget(self.keys["meta"], "concurrency"))

    def get_deduplication_job_id(self, dedup_id: str) -> str | None:
        """Id of the job owning deduplication id ``dedup_id``, or None (BullMQ
        ``getDeduplicationJobId``: ``GET de:<id>``)."""
        return to_str(self.client.get(self.keys.de(dedup_id)))

    async def aget_deduplication_job_id(self, dedup_id: str) -> str | None:
        """Async twin of :meth:`get_deduplication_job_id`."""
        return to_str(await self.aclient.get(self.keys.de(dedup_id)))


def _fields_call(keys: QueueKeys, job_ids: Sequence[str], fields: Sequence[str]) -> Call[list[Any]]:
    return calls.get_job_fields(keys, field_count=len(fields), fields_and_ids=[*fields, *job_ids])


def _present(rows: list[list[Any]]) -> list[list[Any] | None]:
    """``getJobFields``'s rows, None for a job with none of the fields (it does not exist)."""
    return [row if any(v is not None for v in row) else None for row in rows]
