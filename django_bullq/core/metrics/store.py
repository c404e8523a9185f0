"""Where the metrics live in Redis: one hash per queue per minute, and one per hour.

Keys (django_bullq's own, under ``<prefix>:<queue>:bullq:``, so BullMQ's tools ignore them and
``Queue.obliterate``, which sweeps every ``<prefix>:<queue>:*`` key, removes them):

* ``<prefix>:<queue>:bullq:metrics:m:<minute>``: the minute starting at ``minute * 60`` s
  since the epoch; expires :data:`RETENTION_S` after that minute ends.
* ``<prefix>:<queue>:bullq:metrics:h:<hour>``: the same counts summed by hour (what the 72 h
  view reads: 72 hashes instead of 4320); expires :data:`RETENTION_S` after the hour ends.

Fields are ``<slot>:<job name>`` (the slot has no ``:``, so any name splits back): ``c``
completed, ``f`` failed for good, ``r`` attempts failed and retried, ``d<i>`` attempts whose
run took a duration of histogram bucket ``i``, ``w<i>`` jobs that waited a duration of bucket
``i`` before their first attempt (:mod:`~django_bullq.core.metrics.histogram`). Values are
counts, written with ``HINCRBY``, so workers flushing the same minute add up.
"""

from __future__ import annotations

from ..keys import QueueKeys

#: How long the store keeps a minute (and an hour): 72 h, plus the bucket itself.
RETENTION_S = 72 * 3600
#: Slot of completed jobs, of jobs failed for good, of attempts that failed and will retry.
COMPLETED, FAILED, RETRIED = "c", "f", "r"
#: Prefix of the run-duration and wait-duration histogram slots (``d12``, ``w3``).
RUN, WAIT = "d", "w"
#: Job names longer than this are cut to it (a field per name and slot: bounded size).
MAX_NAME_CHARS = 200
#: Distinct job names one worker records; the others are counted under :data:`OTHER`.
MAX_NAMES = 100
#: The name the jobs past :data:`MAX_NAMES` are counted under.
OTHER = "(other names)"


def minute_key(keys: QueueKeys, minute: int) -> str:
    """``<prefix>:<queue>:bullq:metrics:m:<minute>`` (``minute``: epoch ms // 60000)."""
    return keys[f"bullq:metrics:m:{minute}"]


def hour_key(keys: QueueKeys, hour: int) -> str:
    """``<prefix>:<queue>:bullq:metrics:h:<hour>`` (``hour``: epoch ms // 3600000)."""
    return keys[f"bullq:metrics:h:{hour}"]


def minute_expiry_s(minute: int) -> int:
    """Epoch s at which the hash of ``minute`` expires (:data:`RETENTION_S` after it ends)."""
    return (minute + 1) * 60 + RETENTION_S


def hour_expiry_s(hour: int) -> int:
    """Epoch s at which the hash of ``hour`` expires (:data:`RETENTION_S` after it ends)."""
    return (hour + 1) * 3600 + RETENTION_S


def split_field(field: str) -> tuple[str, str]:
    """``(slot, job name)`` of a stored field ``<slot>:<name>``; ``("", "")`` if malformed."""
    slot, sep, name = field.partition(":")
    return (slot, name) if sep else ("", "")
