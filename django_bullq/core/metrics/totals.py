"""The all-time totals of a queue's job metrics, as read from Redis: what Prometheus's counters
and histograms are built from (docs/observability.md).

The hash ``<prefix>:<queue>:bullq:metrics:total`` (``store.TOTALS``, written by every
worker's flush through ``lua/mergeMetricTotals-1.lua``) only grows: it never expires and keeps
at most ``store.MAX_NAMES`` (100) job names for good (the rest under ``store.OTHER``),
so each count read from it is monotonic while the queue lives (``Queue.obliterate`` removes
it, which Prometheus reads as a counter reset).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..calls import Read
from ..keys import QueueKeys
from ..serialization import to_str
from . import store


@dataclass
class NameTotals:
    """The totals of one job name since the queue's first flush.

    Attributes:
        completed, failed, retried: jobs completed, jobs failed for good, attempts retried.
        run, wait: histograms ``{bucket: count}`` (``core.metrics.histogram``) of every counted
            attempt's run and of first attempts' waits, ms.
        run_sum_ms, wait_sum_ms: the sums of those durations, ms.
        rank: 1, 2, ...: the order the name was first kept in; 0 for ``store.OTHER``.
    """

    completed: int = 0
    failed: int = 0
    retried: int = 0
    run: dict[int, int] = field(default_factory=dict)
    wait: dict[int, int] = field(default_factory=dict)
    run_sum_ms: int = 0
    wait_sum_ms: int = 0
    rank: int = 0


@dataclass
class Totals:
    """A queue's totals: ``names`` (stored job name -> :class:`NameTotals`) and ``stalled``
    (jobs the stalled check moved back to wait)."""

    names: dict[str, NameTotals] = field(default_factory=dict)
    stalled: int = 0


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def name_totals(stored: Any) -> NameTotals:
    """A stored ``n:<name>`` value (JSON text) as :class:`NameTotals`; junk reads as zeros."""
    try:
        entry = json.loads(to_str(stored) or "")
    except ValueError:
        entry = None
    if not isinstance(entry, list):
        return NameTotals()
    entry = [*entry, *([0] * (8 - len(entry)))]
    return NameTotals(
        completed=_int(entry[store.COMPLETED]),
        failed=_int(entry[store.FAILED]),
        retried=_int(entry[store.RETRIED]),
        run=store.sparse(entry[store.RUN]),
        wait=store.sparse(entry[store.WAIT]),
        run_sum_ms=_int(entry[store.RUN_SUM]),
        wait_sum_ms=_int(entry[store.WAIT_SUM]),
        rank=_int(entry[store.RANK]),
    )


def parse_totals(fields: Mapping[Any, Any]) -> Totals:
    """The ``HGETALL`` reply of the totals hash as :class:`Totals` (fields other than
    ``n:<name>`` and ``q:stalled`` are ignored)."""
    totals = Totals()
    for raw_key, value in fields.items():
        key = to_str(raw_key) or ""
        if key.startswith("n:"):
            totals.names[key[2:]] = name_totals(value)
        elif key == "q:stalled":
            totals.stalled = _int(to_str(value))
    return totals


def read_totals(keys: QueueKeys) -> Read[Totals]:
    """The queue's :class:`Totals` in one ``HGETALL`` (run by ``Queue._read``)."""
    return Read((("HGETALL", keys[store.TOTALS]),), lambda replies: parse_totals(replies[0]))
