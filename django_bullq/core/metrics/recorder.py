"""The worker's metrics recorder: counts and duration histograms per job name and minute,
aggregated in memory and added to Redis every few seconds in one pipelined write.

Per job the worker pays a few dict operations (no Redis call): :meth:`MetricsRecorder.record`
adds one to the outcome's count and one to a bucket of the run histogram (and of the wait
histogram on a job's first attempt). :meth:`MetricsRecorder.aflush` sends what was gathered as
one ``mergeMetrics`` call per minute it touched (usually one), pipelined
(:mod:`~django_bullq.core.metrics.store`), once a minute one per hour, and one
``mergeMetricTotals`` call adding the same counts (and the stalled jobs the worker's check
moved back, :meth:`MetricsRecorder.add_stalled`) to the all-time totals; the worker calls it
every :data:`FLUSH_INTERVAL_S` s and once when it stops (hours included). A merge decodes and
re-encodes its bucket's JSON in Redis (hundreds of µs for a busy hour): paid per flush per
worker, not per job.

A flush that fails (Redis unreachable) drops its counts rather than keep them for the next
one: some of its calls may have been applied, and sending them again would count those
twice. The worker loses at most one flush's worth (a few seconds) of metrics per failure;
its jobs are not affected (a flush is a duty of its own, beside the fetch loop).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from .. import calls
from . import store
from .histogram import bucket, merge

if TYPE_CHECKING:
    from ..job import Job
    from ..keys import QueueKeys
    from ..queue import Queue

#: s between two flushes of a running worker.
FLUSH_INTERVAL_S = 5.0
#: s between two sends of the hour rollups: an hour's key is the largest one to merge, so
#: its merge (Redis CPU) is paid once a minute per worker, not at every flush.
HOUR_FLUSH_INTERVAL_S = 60.0
#: s the flush at the worker's stop may take before its counts are given up.
CLOSE_FLUSH_TIMEOUT_S = 2.0

_RUN, _WAIT = store.RUN, store.WAIT
_RUN_SUM, _WAIT_SUM = store.RUN_SUM, store.WAIT_SUM


def _new_entry() -> list[Any]:
    """``[completed, failed, retried, {bucket: n}, {bucket: n}, run sum ms, wait sum ms]``."""
    return [0, 0, 0, {}, {}, 0, 0]


class MetricsRecorder:
    """Counts of one queue's finished attempts, waiting to be flushed.

    Args:
        keys: the queue's :class:`~django_bullq.core.keys.QueueKeys`.

    Only the worker's event loop calls it (no lock).
    """

    def __init__(self, keys: QueueKeys) -> None:
        self.keys = keys
        #: minute -> stored name -> an entry of :func:`_new_entry`
        self._minutes: dict[int, dict[str, list[Any]]] = {}
        #: the minute last recorded, and its entries by the job's own name (the hot path's
        #: one lookup; several names may share the entry of store.OTHER)
        self._minute = -1
        self._current: dict[str, list[Any]] = {}
        #: hour -> stored name -> entry: the flushed minutes' counts not yet added to the hour
        self._hours: dict[int, dict[str, list[Any]]] = {}
        #: monotonic s when the hours were last sent (the first flush sends them)
        self._hours_sent = -HOUR_FLUSH_INTERVAL_S
        #: job name -> the name it is stored under (cut, or store.OTHER past MAX_NAMES)
        self._names: dict[str, str] = {}
        #: stored name -> entry: the flushed minutes' counts not yet added to the totals
        self._totals: dict[str, list[Any]] = {}
        #: stalled jobs the worker's check moved back, not yet added to the totals
        self._stalled = 0
        #: flushes that failed since the recorder was made
        self.dropped_flushes = 0

    def record(self, job: Job, outcome: int, finished_ms: int) -> None:
        """Count one attempt of ``job`` that ended at ``finished_ms`` (epoch ms).

        Args:
            job: the job as fetched (``processed_on``, ``timestamp``, ``delay``,
                ``attempts_made`` before this attempt).
            outcome: :data:`~django_bullq.core.metrics.store.COMPLETED`, ``FAILED`` (for
                good) or ``RETRIED``.
            finished_ms: the ``now`` the attempt's end was written with (``finishedOn``).

        The run is ``finished_ms - processedOn``; the wait, counted on the first attempt
        only, is ``processedOn - (timestamp + delay)``: from when the job could run to its
        start. Clocks that disagree give 0, not a negative duration. Never raises: a
        fetched job's times are ints (junk reads as 0, ``job_hash.decode_ints``), so the
        worker's finish, already written, cannot fail here.
        """
        minute = finished_ms // 60_000
        if minute != self._minute:
            self._minute, self._current = minute, {}
        entry = self._current.get(job.name)
        if entry is None:
            entry = self._entry(minute, job.name)
        entry[outcome] += 1
        started = job.processed_on
        if started:
            run = entry[_RUN]
            ran = max(0, finished_ms - started)
            b = bucket(ran)
            run[b] = run.get(b, 0) + 1
            entry[_RUN_SUM] += ran
            if not job.attempts_made:
                wait = entry[_WAIT]
                waited = max(0, started - job.timestamp - (job.delay or 0))
                b = bucket(waited)
                wait[b] = wait.get(b, 0) + 1
                entry[_WAIT_SUM] += waited

    def _entry(self, minute: int, name: str) -> list[Any]:
        """The entry of job name ``name`` in ``minute`` (made when new)."""
        stored = self._names.get(name)
        if stored is None:
            stored = name[: store.MAX_NAME_CHARS]
            if len(self._names) >= store.MAX_NAMES:
                stored = store.OTHER
            self._names[name] = stored
        names = self._minutes.setdefault(minute, {})
        entry = names.get(stored)
        if entry is None:
            entry = names[stored] = _new_entry()
        self._current[name] = entry
        return entry

    @property
    def pending(self) -> int:
        """(minute or hour, name) entries waiting for a flush."""
        return sum(len(n) for n in self._minutes.values()) + sum(
            len(n) for n in self._hours.values()
        )

    def add_stalled(self, jobs: int) -> None:
        """Count ``jobs`` the worker's stalled check moved back to wait (added to the totals'
        ``q:stalled`` at the next flush)."""
        self._stalled += jobs

    def _buckets(self, *, hours: bool) -> dict[str, tuple[int, dict[str, list[Any]]]]:
        """What to send now, by key suffix: ``-> (expire at s, {name: entry})``, an entry
        being a :func:`_new_entry` list: every pending minute, and (``hours``) every pending
        hour; what is returned is no longer pending. The minutes are also added to the
        totals the next ``mergeMetricTotals`` call sends."""
        minutes, self._minutes = self._minutes, {}
        self._minute, self._current = -1, {}
        found: dict[str, tuple[int, dict[str, list[Any]]]] = {}
        for minute, names in minutes.items():
            found[store.minute_bucket(minute)] = (store.minute_expiry_s(minute), names)
            hour_names = self._hours.setdefault(minute // 60, {})
            for name, entry in names.items():
                for into in (
                    hour_names.setdefault(name, _new_entry()),
                    self._totals.setdefault(name, _new_entry()),
                ):
                    for i in (0, 1, 2, _RUN_SUM, _WAIT_SUM):
                        into[i] += entry[i]
                    for i in (_RUN, _WAIT):
                        merge(into[i], entry[i])
        if hours:
            for hour, names in self._hours.items():
                found[store.hour_bucket(hour)] = (store.hour_expiry_s(hour), names)
            self._hours = {}
        return found

    async def aflush(self, queue: Queue, *, final: bool = False) -> int:
        """Add the counts gathered since the last flush to Redis, in one pipelined write:
        every minute touched, and the hours too when :data:`HOUR_FLUSH_INTERVAL_S` s have
        passed since they were last sent (or ``final``: the worker is stopping).

        Args:
            queue: the recorder's queue (its async client and scripts send the write).
            final: send the hours whatever the time.

        Returns:
            How many keys were written: minutes, hours and the totals (0: nothing to
            write, no round trip).

        Raises:
            redis.exceptions.ConnectionError, TimeoutError, OSError: Redis could not be
                reached; the counts of this flush are dropped (see the module's docstring).
        """
        now = time.monotonic()
        hours = final or now - self._hours_sent >= HOUR_FLUSH_INTERVAL_S
        batch = []
        for key, (expire_at, names) in self._buckets(hours=hours).items():
            delta = {
                name: [e[0], e[1], e[2], store.dense(e[_RUN]), store.dense(e[_WAIT])]
                for name, e in names.items()
            }
            text = json.dumps(delta, separators=(",", ":"))
            batch.append(calls.merge_metrics(self.keys, key, delta=text, expire_at_s=expire_at))
        if hours:
            self._hours_sent = now
        totals = self._totals_call()
        sends: list[Awaitable[Any]] = [queue._abatch(calls.Batch(tuple(batch)))] if batch else []
        if totals is not None:
            sends.append(queue._arun(totals))
        if not sends:
            return 0
        try:
            # one batch per script, at once: both go through the loop's auto-pipeline (one
            # write); a batch of two scripts would take a pooled connection of its own, which
            # a network cut leaves hanging for the socket timeout
            await asyncio.gather(*sends)
        except BaseException:
            self.dropped_flushes += 1
            raise
        return len(batch) + (totals is not None)

    def _totals_call(self) -> calls.Call[Any] | None:
        """The ``mergeMetricTotals`` call of what the flushed minutes and the stalled check
        added since the last flush (None: nothing); what it carries is no longer pending."""
        totals, self._totals = self._totals, {}
        stalled, self._stalled = self._stalled, 0
        if not totals and not stalled:
            return None
        delta = {
            name: [
                *e[:_RUN],
                store.dense(e[_RUN]),
                store.dense(e[_WAIT]),
                e[_RUN_SUM],
                e[_WAIT_SUM],
            ]
            for name, e in totals.items()
        }
        return calls.merge_metric_totals(
            self.keys,
            store.TOTALS,
            delta=json.dumps(delta, separators=(",", ":")),
            stalled=stalled,
            max_names=store.MAX_NAMES,
            other=store.OTHER,
        )
