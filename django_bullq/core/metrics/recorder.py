"""The worker's metrics recorder: counts and duration histograms per job name and minute,
aggregated in memory and added to Redis every few seconds in one pipelined write.

Per job the worker pays a few dict operations (no Redis call): :meth:`MetricsRecorder.record`
adds one to the outcome's count and one to a bucket of the run histogram (and of the wait
histogram on a job's first attempt). :meth:`MetricsRecorder.aflush` sends what was gathered as
``HINCRBY`` on the minute's and the hour's hashes plus their ``EXPIREAT``
(:mod:`~django_bullq.core.metrics.store`); the worker calls it every :data:`FLUSH_INTERVAL_S`
s and once when it stops.

A flush that fails (Redis unreachable) drops its counts rather than keep them for the next
one: some of its commands may have been applied, and sending them again would count those
twice. The worker loses at most one flush's worth (a few seconds) of metrics per failure;
its jobs are not affected (a flush is a duty of its own, beside the fetch loop).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from . import store
from .histogram import LAST, bucket

if TYPE_CHECKING:
    from ..job import Job
    from ..keys import QueueKeys

#: s between two flushes of a running worker.
FLUSH_INTERVAL_S = 5.0
#: s the flush at the worker's stop may take before its counts are given up.
CLOSE_FLUSH_TIMEOUT_S = 2.0

#: The field slots of the run and wait histogram buckets, by bucket index.
_RUN_SLOTS = tuple(f"{store.RUN}{i}" for i in range(LAST + 1))
_WAIT_SLOTS = tuple(f"{store.WAIT}{i}" for i in range(LAST + 1))

#: What :meth:`MetricsRecorder.record` takes as ``outcome``.
OUTCOMES = (store.COMPLETED, store.FAILED, store.RETRIED)


class MetricsRecorder:
    """Counts of one queue's finished attempts, waiting to be flushed.

    Args:
        keys: the queue's :class:`~django_bullq.core.keys.QueueKeys`.

    Only the worker's event loop calls it (no lock).
    """

    def __init__(self, keys: QueueKeys) -> None:
        self.keys = keys
        #: (minute, stored name, slot) -> count since the last flush
        self._counts: defaultdict[tuple[int, str, str], int] = defaultdict(int)
        #: job name -> the name it is stored under (cut, or store.OTHER past MAX_NAMES)
        self._names: dict[str, str] = {}
        #: flushes that failed since the recorder was made
        self.dropped_flushes = 0

    def record(self, job: Job, outcome: str, finished_ms: int) -> None:
        """Count one attempt of ``job`` that ended at ``finished_ms`` (epoch ms).

        Args:
            job: the job as fetched (``processed_on``, ``timestamp``, ``delay``,
                ``attempts_made`` before this attempt).
            outcome: :data:`~django_bullq.core.metrics.store.COMPLETED`, ``FAILED`` (for
                good) or ``RETRIED``.
            finished_ms: the ``now`` the attempt's end was written with (``finishedOn``).

        The run is ``finished_ms - processedOn``; the wait, counted on the first attempt
        only, is ``processedOn - (timestamp + delay)``: from when the job could run to its
        start. Clocks that disagree give 0, not a negative duration.
        """
        name = self._names.get(job.name)
        if name is None:
            name = self._admit(job.name)
        minute = finished_ms // 60_000
        counts = self._counts
        counts[(minute, name, outcome)] += 1
        started = job.processed_on
        if started:
            counts[(minute, name, _RUN_SLOTS[bucket(finished_ms - started)])] += 1
            if not job.attempts_made:
                ready = job.timestamp + (job.delay or 0)
                counts[(minute, name, _WAIT_SLOTS[bucket(started - ready)])] += 1

    def _admit(self, name: str) -> str:
        stored = name[: store.MAX_NAME_CHARS]
        if len(self._names) >= store.MAX_NAMES:
            stored = store.OTHER
        self._names[name] = stored
        return stored

    @property
    def pending(self) -> int:
        """Distinct (minute, name, slot) counts waiting for the next flush."""
        return len(self._counts)

    async def aflush(self, client: Any) -> int:
        """Add the counts gathered since the last flush to Redis, in one pipelined write.

        Args:
            client: an async redis-py client (the queue's ``aclient``).

        Returns:
            How many fields were incremented (0: nothing to write, no round trip).

        Raises:
            redis.exceptions.ConnectionError, TimeoutError, OSError: Redis could not be
                reached; the counts of this flush are dropped (see the module's docstring).
        """
        if not self._counts:
            return 0
        counts, self._counts = self._counts, defaultdict(int)
        hours: defaultdict[tuple[int, str], int] = defaultdict(int)
        minutes: set[int] = set()
        pipe = client.pipeline(transaction=False)
        for (minute, name, slot), count in counts.items():
            field = f"{slot}:{name}"
            pipe.hincrby(store.minute_key(self.keys, minute), field, count)
            hours[(minute // 60, field)] += count
            minutes.add(minute)
        for (hour, field), count in hours.items():
            pipe.hincrby(store.hour_key(self.keys, hour), field, count)
        for minute in minutes:
            pipe.expireat(store.minute_key(self.keys, minute), store.minute_expiry_s(minute))
        for hour in {hour for hour, _ in hours}:
            pipe.expireat(store.hour_key(self.keys, hour), store.hour_expiry_s(hour))
        try:
            await pipe.execute()
        except BaseException:
            self.dropped_flushes += 1
            raise
        return len(counts) + len(hours)
