"""A queue's limits over every worker, ours and BullMQ's: the global rate limit, a manual rate
limit, global concurrency, and deduplication keys (protocol §5.12-§5.14)."""

from __future__ import annotations

from .. import limits
from .base import QueueBase


class QueueLimits(QueueBase):
    """The limit setters of :class:`~django_bullq.core.queue.queue.Queue` (a mixin of it)."""

    def set_global_rate_limit(self, max_jobs: int, duration_ms: int) -> None:
        """At most ``max_jobs`` activations per ``duration_ms`` ms over every worker, ours and
        BullMQ's (BullMQ ``setGlobalRateLimit``: ``meta.max`` / ``meta.duration``).

        A worker's own ``limiter_duration`` wins over ``duration_ms`` (BullMQ's rule), while
        ``max_jobs`` wins over the worker's ``limiter_max``.

        Raises:
            ValueError: ``max_jobs`` or ``duration_ms`` not a positive int.
        """
        self.client.hset(self.keys["meta"], mapping=limits.rate_limit_meta(max_jobs, duration_ms))

    async def aset_global_rate_limit(self, max_jobs: int, duration_ms: int) -> None:
        """Async twin of :meth:`set_global_rate_limit`."""
        await self.aclient.hset(
            self.keys["meta"], mapping=limits.rate_limit_meta(max_jobs, duration_ms)
        )

    def remove_global_rate_limit(self) -> None:
        """Lift the queue-wide rate limit (BullMQ ``removeGlobalRateLimit``)."""
        self.client.hdel(self.keys["meta"], "max", "duration")

    async def aremove_global_rate_limit(self) -> None:
        """Async twin of :meth:`remove_global_rate_limit`."""
        await self.aclient.hdel(self.keys["meta"], "max", "duration")

    def rate_limit(self, ms: int) -> None:
        """Rate-limit the whole queue for ``ms`` ms (BullMQ ``Queue.rateLimit``:
        ``SET limiter 9007199254740991 PX ms``).

        Workers with a limiter (``limiter_max`` or :meth:`set_global_rate_limit`) stop fetching
        until it expires; inside a job, raise :class:`RateLimitError` next so the job goes back
        to wait without spending an attempt.

        Raises:
            ValueError: ``ms`` not a positive int.
        """
        self.client.set(self.keys["limiter"], limits.MANUAL_LIMIT, px=limits.positive_ms(ms))

    async def arate_limit(self, ms: int) -> None:
        """Async twin of :meth:`rate_limit`."""
        await self.aclient.set(self.keys["limiter"], limits.MANUAL_LIMIT, px=limits.positive_ms(ms))

    def remove_rate_limit_key(self) -> int:
        """Delete the limiter key, ending the current window at once; returns keys deleted."""
        return int(self.client.delete(self.keys["limiter"]))

    async def aremove_rate_limit_key(self) -> int:
        """Async twin of :meth:`remove_rate_limit_key`."""
        return int(await self.aclient.delete(self.keys["limiter"]))

    def set_global_concurrency(self, concurrency: int) -> None:
        """At most ``concurrency`` active jobs in this queue over every worker (BullMQ
        ``setGlobalConcurrency``: ``meta.concurrency``).

        Raises:
            ValueError: not an int >= 1.
        """
        self.client.hset(self.keys["meta"], "concurrency", limits.positive_int(concurrency))

    async def aset_global_concurrency(self, concurrency: int) -> None:
        """Async twin of :meth:`set_global_concurrency`."""
        await self.aclient.hset(self.keys["meta"], "concurrency", limits.positive_int(concurrency))

    def remove_global_concurrency(self) -> None:
        """Lift the global concurrency cap (BullMQ ``removeGlobalConcurrency``)."""
        self.client.hdel(self.keys["meta"], "concurrency")

    async def aremove_global_concurrency(self) -> None:
        """Async twin of :meth:`remove_global_concurrency`."""
        await self.aclient.hdel(self.keys["meta"], "concurrency")

    def remove_deduplication_key(self, dedup_id: str) -> int:
        """Free deduplication id ``dedup_id`` now, so the next add with it creates a job
        (BullMQ ``removeDeduplicationKey``). Returns 1 when a key was deleted, else 0."""
        return int(self.client.delete(self.keys.de(dedup_id)))

    async def aremove_deduplication_key(self, dedup_id: str) -> int:
        """Async twin of :meth:`remove_deduplication_key`."""
        return int(await self.aclient.delete(self.keys.de(dedup_id)))


__all__ = ["QueueLimits"]
