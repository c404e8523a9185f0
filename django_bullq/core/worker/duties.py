"""The worker's periodic duties: heartbeat, lock renewal (BullMQ ``extendLocks``), the shared
stalled check (``moveStalledJobsToWait``) and the retention sweep, each run every interval and
retried soon after a failure."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from .. import calls, heartbeat
from ..metrics.recorder import CLOSE_FLUSH_TIMEOUT_S, FLUSH_INTERVAL_S
from ..options import normalize_keep, now_ms
from ..serialization import to_str
from .options import DUTY_RETRY_S
from .outage import is_outage, outages
from .state import WorkerState

logger = logging.getLogger("django_bullq.worker")


class Duties(WorkerState):
    """The worker's periodic duties (a mixin of :class:`~django_bullq.core.worker.Worker`)."""

    def _start_duties(self) -> list[asyncio.Task[None]]:
        """Start every duty the options ask for (the control channel aside).

        Returns:
            Their tasks (cancel them to stop the duties).
        """
        opts = self.opts
        timers = [
            asyncio.create_task(self._every(heartbeat.INTERVAL_S, self._heartbeat, at_start=True)),
            asyncio.create_task(
                self._every(opts.stalled_interval / 1000, self._check_stalled, at_start=True)
            ),
        ]
        if not opts.skip_lock_renewal:
            timers.append(
                asyncio.create_task(self._every(opts.lock_duration / 2000, self._extend_locks))
            )
        if opts.maintenance_interval_ms > 0:
            timers.append(
                asyncio.create_task(
                    self._every(opts.maintenance_interval_ms / 1000, self._enforce_retention)
                )
            )
        if self._metrics is not None:
            timers.append(asyncio.create_task(self._every(FLUSH_INTERVAL_S, self._flush_metrics)))
        return timers

    async def _flush_metrics(self, *, final: bool = False) -> None:
        """Add the metrics gathered since the last flush to Redis (docs/metrics.md).

        A periodic flush is shielded from the stop that cancels the duties: what it took
        from the recorder would be lost with it; :meth:`_last_flush` waits for it instead.
        """
        if self._metrics is None:
            return
        if final:
            await self._metrics.aflush(self.queue, final=True)
            return
        flush = self._flushing = asyncio.ensure_future(self._metrics.aflush(self.queue))
        flush.add_done_callback(_retrieved)
        await asyncio.shield(flush)

    async def _last_flush(self) -> None:
        """The flush of a stopping worker: bounded in time, and never an error (an outage
        at the stop loses these seconds of metrics, not the stop)."""
        if self._metrics is None:
            return
        in_flight = self._flushing
        if in_flight is not None and not in_flight.done():  # its counts are not pending
            await asyncio.wait([in_flight], timeout=CLOSE_FLUSH_TIMEOUT_S)
        try:
            await asyncio.wait_for(self._flush_metrics(final=True), CLOSE_FLUSH_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - metrics must not fail a stop
            logger.debug("worker %s: last metrics flush failed: %s", self.queue.name, exc)

    async def _heartbeat(self) -> None:
        """Write the heartbeat key, only while the fetch loop is alive (docs/reliability.md)."""
        if not self.is_fetch_loop_alive():
            if not self._closing:
                logger.warning("worker %s: fetch loop stuck; heartbeat withheld", self.queue.name)
            return
        info = {
            "queue": self.queue.name,
            "started": self._started_ms,
            "processed": self.processed,
            "failed": self.failed,
            "active": len(self._running),
            "concurrency": self.opts.concurrency,
        }
        await heartbeat.abeat(self.queue.aclient, self.queue.keys, self.heartbeat_name, info)

    async def _every(
        self, seconds: float, duty: Callable[[], Awaitable[None]], *, at_start: bool = False
    ) -> None:
        if not at_start:
            await asyncio.sleep(seconds)
        failures = 0
        while True:
            pause = seconds
            try:
                await duty()  # the fetch loop logs "reconnected": a duty may skip Redis
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - periodic duties retry soon
                failures += 1
                if is_outage(exc):  # logged once per outage, not once per duty per second
                    outages.failed(self.queue.connection.address(), exc, consecutive=failures)
                else:
                    logger.warning("worker %s: %s failed: %s", self.queue.name, duty.__name__, exc)
                # A pooled connection that died in an outage fails its first use after it;
                # try again within a second rather than a whole interval (heartbeat, locks).
                pause = min(seconds, DUTY_RETRY_S)
            await asyncio.sleep(pause)

    async def _extend_locks(self) -> None:
        pairs: list[str] = []
        for job in list(self._running.values()):
            if job.token:
                pairs += [job.id, job.token]
        if not pairs:
            return
        q = self.queue
        # Through the pipeline, so a finish sent before this renewal is also run before it.
        lost = await self._pipeline.call(
            calls.extend_locks(q.keys, lock_duration=self.opts.lock_duration, pairs=pairs)
        )
        for raw_id in lost or []:
            job_id = to_str(raw_id) or ""
            if job_id in self._running and job_id not in self._ending:
                logger.warning("worker %s: lost the lock of job %s", q.name, job_id)

    async def _check_stalled(self) -> None:
        q = self.queue
        stalled = await q._arun(
            calls.move_stalled_jobs_to_wait(
                q.keys,
                max_stalled_count=self.opts.max_stalled_count,
                now=now_ms(),
                stalled_interval=self.opts.stalled_interval,
            )
        )
        for job_id in stalled or []:
            logger.warning(
                "worker %s: job %s stalled and was moved back to wait", q.name, to_str(job_id)
            )
        if stalled and self._metrics is not None:  # the totals' stalled counter
            self._metrics.add_stalled(len(stalled))

    async def _enforce_retention(self) -> None:
        """Apply removeOnComplete/removeOnFail on quiet queues too (case B35)."""
        q = self.queue
        for target in ("completed", "failed"):
            default = (
                self.opts.remove_on_complete if target == "completed" else self.opts.remove_on_fail
            )
            count, age, limit = normalize_keep(default)
            await q._arun(
                calls.clean_finished(
                    q.keys,
                    target,
                    now=now_ms(),
                    default_count=count,
                    default_age=age,
                    limit=limit,
                    opts_field="removeOnComplete" if target == "completed" else "removeOnFail",
                )
            )


def _retrieved(flush: asyncio.Future[int]) -> None:
    """Mark a shielded flush's error seen: its awaiter may have been cancelled, and the
    error (an outage: the flush's counts are dropped) is counted by the recorder."""
    if not flush.cancelled():
        flush.exception()
