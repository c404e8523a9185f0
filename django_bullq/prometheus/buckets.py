"""The ``le`` bounds of the Prometheus histograms, and the cumulative counts of one of our
histograms (``django_bullq.core.metrics.histogram``) at those bounds.

The bounds double from 5 ms to 1,310.72 s (about 22 min): 19 bounds and ``+Inf``. Each is an
edge of our log-scale buckets (5 x 2^m ms), so a cumulative count is exact, not interpolated:
the count at a bound is every duration below it. (Durations are whole ms; one of exactly the
bound's ms falls in the next bound, a 1 ms shift Prometheus's ``le`` does not have.) Fewer and
coarser bounds than our 120 buckets keep the series per job name small: 22 per histogram.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.metrics.histogram import bounds

#: The histograms' finite ``le`` bounds, ms (5 ms x 2^m, m = 0..18).
BOUNDS_MS = tuple(5 << m for m in range(19))


def cumulative(counts: Mapping[int, int]) -> list[tuple[str, float]]:
    """Prometheus ``(le, cumulative count)`` pairs of the histogram ``{bucket: count}``.

    Returns:
        One pair per :data:`BOUNDS_MS` bound (``le`` in seconds, as text) then ``("+Inf",
        total)``: what ``HistogramMetricFamily.add_metric`` takes as ``buckets``.
    """
    below = [0] * len(BOUNDS_MS)
    for index, count in counts.items():
        high = bounds(index)[1]
        for i, bound in enumerate(BOUNDS_MS):
            if high <= bound:
                below[i] += count
    pairs = [(_seconds(bound), float(n)) for bound, n in zip(BOUNDS_MS, below, strict=True)]
    pairs.append(("+Inf", float(sum(counts.values()))))
    return pairs


def _seconds(ms: int) -> str:
    """``ms`` as Prometheus writes an ``le`` in seconds: ``"0.005"``, ``"1.28"``, ``"5.0"``."""
    return repr(ms / 1000)
