"""The outbox relay: passes that move the rows a transaction left in the outbox to Redis.

``runworker`` relays the whole backlog when it starts (:func:`relay_backlog`) and again every
``BULLQ["OUTBOX"]["POLL_INTERVAL"]`` s (:func:`arelay_forever`); each pass (:func:`relay_all`)
moves up to ``BATCH_SIZE`` rows per database, oldest first, each in its own transaction
(:func:`~django_bullq.producer.outbox.relay_row`'s move, exactly once). A Redis outage ends
a pass and is logged once (``_RelayOutage``); a row whose move fails for another reason
is held out of the passes for :data:`HOLD_S` s (``_HeldRows``), so it neither holds back
the rows behind it nor logs on every pass.
"""

from __future__ import annotations

import asyncio
import logging
import time

from django.db import close_old_connections

from ..conf import bullq_settings
from .outbox import _UNREACHABLE, _move_row

logger = logging.getLogger("django_bullq.outbox")


def relay(database: str, limit: int | None = None) -> int:
    """Move up to ``limit`` rows of ``database``'s outbox to Redis, oldest first.

    Args:
        database: database alias. limit: rows per call (default ``BATCH_SIZE``).

    Returns:
        How many rows this call moved.
    """
    from ..models import OutboxJob

    limit = limit or int(bullq_settings.OUTBOX["BATCH_SIZE"])
    pks = list(
        OutboxJob.objects.using(database)
        .exclude(pk__in=_held.pks(database))
        .order_by("created_at", "id")
        .values_list("pk", flat=True)[:limit]
    )
    moved = 0
    for index, pk in enumerate(pks):
        try:
            moved += _move_row(database, pk, None)
        except _UNREACHABLE as exc:  # the rest would meet it too: the pass ends
            _outage.failed(database, len(pks) - index, exc)
            return moved
        except Exception:
            _held.hold(database, pk)
            logger.exception(
                "outbox: write of row %s on database %r not moved to Redis; tried again in %d s",
                pk,
                database,
                HOLD_S,
            )
    if pks:  # an empty outbox says nothing of Redis
        _outage.reached(database, moved)
    return moved


#: seconds a row whose move failed (bad data, a refused add) is left out of the relay's
#: passes before it is tried again, so it neither holds back the rows behind it nor logs a
#: traceback on every pass
HOLD_S = 60
#: at most this many rows are held per database (the oldest hold is dropped first)
MAX_HELD = 10_000


class _HeldRows:
    """The rows whose move failed recently, per database, left out of the relay's passes for
    :data:`HOLD_S` s."""

    def __init__(self) -> None:
        #: database alias -> {pk: monotonic time (s) its move failed}
        self.since: dict[str, dict[int, float]] = {}
        #: rows held so far (a pass that moved nothing and held nothing new ends a backlog)
        self.count = 0

    def hold(self, database: str, pk: int) -> None:
        held = self.since.setdefault(database, {})
        held[pk] = time.monotonic()
        self.count += 1
        while len(held) > MAX_HELD:
            del held[next(iter(held))]

    def pks(self, database: str) -> list[int]:
        """The rows of ``database`` still held (those held longer than HOLD_S are let go)."""
        held = self.since.get(database, {})
        now = time.monotonic()
        for pk in [pk for pk, at in held.items() if now - at >= HOLD_S]:
            del held[pk]
        return list(held)


_held = _HeldRows()


class _RelayOutage:
    """The relay's log of a Redis outage: one WARNING when a pass first meets it, one INFO
    when a pass gets through again, DEBUG in between (``runworker`` relays once a second)."""

    def __init__(self) -> None:
        #: database alias -> monotonic time (s) the outage was first met
        self.since: dict[str, float] = {}

    def failed(self, database: str, waiting: int, exc: BaseException) -> None:
        if database in self.since:
            logger.debug("outbox: Redis still unreachable: %s", exc)
            return
        self.since[database] = time.monotonic()
        logger.warning(
            "outbox: Redis unreachable; %s rows of database %r wait in the outbox and are "
            "moved once it is back (%s)",
            waiting,
            database,
            exc,
        )

    def reached(self, database: str, moved: int) -> None:
        since = self.since.pop(database, None)
        if since is not None:
            logger.info(
                "outbox: Redis reachable again after %.1f s; %s rows of database %r moved",
                time.monotonic() - since,
                moved,
                database,
            )


_outage = _RelayOutage()


def relay_all() -> int:
    """One relay pass over every database of ``BULLQ["OUTBOX"]["DATABASES"]``.

    Returns:
        Jobs added. Database errors are logged, never raised (the worker keeps running).
    """
    moved = 0
    for database in bullq_settings.OUTBOX["DATABASES"]:
        try:
            moved += relay(database)
        except Exception:
            logger.exception("outbox: relay pass over database %r failed", database)
    close_old_connections()
    return moved


def relay_backlog() -> int:
    """:func:`relay_all` passes until one moves nothing, so a backlog larger than
    ``BATCH_SIZE`` goes in one go (a ``--burst`` run relays every row, not the first batch).

    Returns:
        Jobs added. A row that fails to relay is logged and held out of the passes for
        :data:`HOLD_S` s, so the rows behind it still go; the passes end when one moves no row
        and holds no new one.
    """
    moved = 0
    while True:
        held = _held.count
        passed = relay_all()
        moved += passed
        if not passed and _held.count == held:
            return moved


def rows_left() -> int:
    """The outbox rows of every database of ``BULLQ["OUTBOX"]["DATABASES"]`` not yet relayed
    (0 for a database that cannot be read: its error is logged)."""
    from ..models import OutboxJob

    left = 0
    for database in bullq_settings.OUTBOX["DATABASES"]:
        try:
            left += OutboxJob.objects.using(database).count()
        except Exception:
            logger.exception("outbox: counting the rows of database %r failed", database)
    close_old_connections()
    return left


async def arelay_forever(interval_s: float) -> None:
    """Run :func:`relay_backlog` in a thread every ``interval_s`` s until cancelled
    (``runworker``)."""
    while True:
        await asyncio.to_thread(relay_backlog)
        await asyncio.sleep(interval_s)


__all__ = [
    "HOLD_S",
    "MAX_HELD",
    "arelay_forever",
    "relay",
    "relay_all",
    "relay_backlog",
    "rows_left",
]
