"""Where the metrics live in Redis: one JSON string per queue per minute, and one per hour.

Keys (django_bullq's own, under ``<prefix>:<queue>:bullq:``, so BullMQ's tools ignore them and
``Queue.obliterate``, which sweeps every ``<prefix>:<queue>:*`` key, removes them):

* ``<prefix>:<queue>:bullq:metrics:m:<minute>``: the minute starting at ``minute * 60`` s
  since the epoch; expires :data:`RETENTION_S` after that minute ends.
* ``<prefix>:<queue>:bullq:metrics:h:<hour>``: the same counts summed by hour (what the 72 h
  view reads: 72 keys instead of 4320); expires :data:`RETENTION_S` after the hour ends.
* ``<prefix>:<queue>:bullq:metrics:total`` (:data:`TOTALS`): the all-time totals, a hash that
  only grows (what Prometheus's counters and histograms read; ``lua/mergeMetricTotals-1.lua``):
  field ``n:<job name>`` holds the JSON ``[completed, failed, retried, run, wait, run sum,
  wait sum, rank]`` (the sums in ms; rank 1, 2, ...: the order the names were first kept in),
  ``q:stalled`` the jobs moved back by the stalled check, ``q:names`` the number of names;
  at most :data:`MAX_NAMES` names, then :data:`OTHER` (which has no rank), for good.

Each value is JSON, ``{"<job name>": [completed, failed, retried, run, wait]}``: completed
jobs, jobs failed for good, attempts that failed and were retried, then two dense histograms
``[first bucket, count, count, ...]`` (``[]`` or ``{}`` when empty) of the run durations of
every counted attempt and of the waits before first attempts, in the buckets of
:mod:`~django_bullq.core.metrics.histogram`. ``lua/mergeMetrics-1.lua`` adds a worker's counts
to a bucket atomically, so workers flushing the same minute add up. One string per minute
rather than a hash field per name and bucket: 7 MB instead of 63 MB for 10 busy job names
over 72 h (docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..keys import QueueKeys

#: How long the store keeps a minute (and an hour): 72 h, counted from the bucket's end.
RETENTION_S = 72 * 3600
#: Positions in a name's stored list: the three counts and the two histograms.
COMPLETED, FAILED, RETRIED, RUN, WAIT = range(5)
#: Positions of the sums (ms) of the run and wait durations and of the rank: in the totals only.
RUN_SUM, WAIT_SUM, RANK = 5, 6, 7
#: The key suffix of the all-time totals hash.
TOTALS = "bullq:metrics:total"
#: Job names longer than this are cut to it.
MAX_NAME_CHARS = 200
#: Distinct job names one worker records; the others are counted under :data:`OTHER`.
MAX_NAMES = 100
#: The name the jobs past :data:`MAX_NAMES` are counted under.
OTHER = "(other names)"


def minute_bucket(minute: int) -> str:
    """``bullq:metrics:m:<minute>``, the key suffix of ``minute`` (epoch ms // 60000)."""
    return f"bullq:metrics:m:{minute}"


def hour_bucket(hour: int) -> str:
    """``bullq:metrics:h:<hour>``, the key suffix of ``hour`` (epoch ms // 3600000)."""
    return f"bullq:metrics:h:{hour}"


def minute_key(keys: QueueKeys, minute: int) -> str:
    """``<prefix>:<queue>:bullq:metrics:m:<minute>`` (``minute``: epoch ms // 60000)."""
    return keys[minute_bucket(minute)]


def hour_key(keys: QueueKeys, hour: int) -> str:
    """``<prefix>:<queue>:bullq:metrics:h:<hour>`` (``hour``: epoch ms // 3600000)."""
    return keys[hour_bucket(hour)]


def minute_expiry_s(minute: int) -> int:
    """Epoch s at which the key of ``minute`` expires (:data:`RETENTION_S` after it ends)."""
    return (minute + 1) * 60 + RETENTION_S


def hour_expiry_s(hour: int) -> int:
    """Epoch s at which the key of ``hour`` expires (:data:`RETENTION_S` after it ends)."""
    return (hour + 1) * 3600 + RETENTION_S


def dense(histogram: Mapping[int, int]) -> list[int]:
    """``{bucket: count}`` as stored: ``[first bucket, count, ...]`` ([] when empty)."""
    if not histogram:
        return []
    low, high = min(histogram), max(histogram)
    return [low, *(histogram.get(b, 0) for b in range(low, high + 1))]


def sparse(stored: Any) -> dict[int, int]:
    """A stored dense histogram as ``{bucket: count}`` (anything malformed counts as empty)."""
    if not isinstance(stored, list) or len(stored) < 2:
        return {}
    try:
        first = int(stored[0])
        return {first + i: int(n) for i, n in enumerate(stored[1:]) if n}
    except (TypeError, ValueError):
        return {}
