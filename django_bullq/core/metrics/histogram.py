"""The fixed log-scale histogram of durations the metrics keep (run and wait times, in ms).

Buckets (HdrHistogram's layout with two sub-bits): 0, 1, 2 and 3 ms are exact; from 4 ms on,
each power of two is cut in four equal buckets (4-5, 5-6, 6-7, 7-8, 8-10, 10-12, ... ms), so a
bucket is at most a quarter of its lower bound wide. Reading a percentile as the bucket's
midpoint is then within 12.5 % of the true value. Durations of :data:`MAX_MS` or more share
the last bucket. The index costs one ``int.bit_length`` and a shift: the worker computes one
per run and one per wait.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Durations (ms) at or above this share the last bucket (about 24.9 days).
MAX_MS = 2**31 - 1
#: The last bucket's index.
LAST = 4 * (31 - 2) + 3


def bucket(ms: int) -> int:
    """The bucket index of a duration of ``ms`` ms (negative counts as 0; 0..:data:`LAST`)."""
    if ms < 4:
        return ms if ms > 0 else 0
    if ms > MAX_MS:
        ms = MAX_MS
    bits = ms.bit_length()
    return 4 * (bits - 2) + (ms >> (bits - 3)) - 4


def bounds(index: int) -> tuple[int, int]:
    """``(low, high)`` ms of bucket ``index``: durations ``low <= ms < high`` fall in it.

    Raises:
        ValueError: ``index`` outside 0..:data:`LAST`.
    """
    if not 0 <= index <= LAST:
        raise ValueError(f"no histogram bucket {index}")
    if index < 4:
        return index, index + 1
    bits, top = index // 4 + 2, index % 4 + 4
    return top << (bits - 3), (top + 1) << (bits - 3)


def representative(index: int) -> float:
    """The ms a percentile falling in bucket ``index`` is read as: the exact value of the
    first four buckets, the midpoint of the others."""
    low, high = bounds(index)
    return float(low) if index < 4 else (low + high) / 2


def percentile(counts: Mapping[int, int], fraction: float) -> float | None:
    """The ``fraction`` (0..1, e.g. 0.95) percentile in ms of a histogram ``{bucket: count}``;
    None when it holds no duration."""
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = max(1.0, fraction * total)  # the rank-th smallest duration (nearest rank)
    seen = 0
    for index in sorted(counts):
        seen += counts[index]
        if seen >= rank:
            return representative(index)
    return representative(max(counts))


def merge(into: dict[int, int], other: Mapping[int, int]) -> None:
    """Add the counts of ``other`` to ``into`` (in place)."""
    for index, count in other.items():
        into[index] = into.get(index, 0) + count
