"""QueueKeys: the one place that spells BullMQ's Redis key names (``<prefix>:<queue>:<suffix>``).

Also what a custom job id may be: not a number, not a key suffix (its hash would overwrite
that key). Queue names and Cluster slots: :mod:`django_bullq.core.names`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import InvalidNameError
from .names import validate_queue_name

#: Queue-level key suffixes of BullMQ's v6 layout (protocol reference §2.2).
SUFFIXES = (
    "wait",
    "paused",
    "active",
    "prioritized",
    "pc",
    "delayed",
    "waiting-children",
    "completed",
    "failed",
    "marker",
    "meta",
    "events",
    "id",
    "stalled",
    "stalled-check",
    "limiter",
    "repeat",
    "metrics:completed",
    "metrics:failed",
)


_DIGITS = re.compile(r"^\d+$")


def validate_job_id(job_id: str) -> str:
    """Return ``job_id`` if it is usable as a custom job id.

    Rule (one rule for every shape, case B13): non-empty; not purely decimal digits (collides with
    auto ids); no ``:`` at all; BullMQ's reserved ``0`` is covered by the digit rule; not the
    suffix of a queue-level key (``wait``, ``meta``, ``id``, ...), since the job hash
    ``<prefix>:<queue>:<jobId>`` would then be that key.

    Raises:
        InvalidNameError: the id breaks the rule.
    """
    if not isinstance(job_id, str) or not job_id:
        raise InvalidNameError("custom job id must be a non-empty string")
    if _DIGITS.match(job_id):
        raise InvalidNameError(
            f"custom job id {job_id!r} must not be an integer: it would collide with auto ids"
        )
    if ":" in job_id:
        raise InvalidNameError(f"custom job id {job_id!r} must not contain ':'")
    if job_id in SUFFIXES:
        raise InvalidNameError(
            f"custom job id {job_id!r} is the name of a queue key: its job hash would overwrite it"
        )
    return job_id


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """Key names of one queue.

    Args:
        name: queue name (validated by :func:`validate_queue_name`).
        prefix: key prefix, BullMQ's default ``bull``. Put a hash tag here for Redis Cluster,
            e.g. ``{bull}``, so every queue (and cross-queue flows) lands in one slot.
    """

    name: str
    prefix: str = "bull"
    #: Full key names of suffix tuples, filled by :func:`~django_bullq.core.calls.builders.key_set`.
    key_sets: dict[tuple[str, ...], tuple[str, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    #: ``<prefix>:<queue>``: the "queue key" of BullMQ (used in a child's ``parent`` field).
    queue_key: str = field(init=False, repr=False, compare=False)
    #: ``<prefix>:<queue>:`` with the trailing colon; job keys are this plus the job id (set
    #: once: every script call of the worker's hot path sends it).
    key_prefix: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_queue_name(self.name)
        if not self.prefix:
            raise InvalidNameError("key prefix must be non-empty")
        object.__setattr__(self, "queue_key", f"{self.prefix}:{self.name}")
        object.__setattr__(self, "key_prefix", f"{self.prefix}:{self.name}:")

    def __getitem__(self, suffix: str) -> str:
        return f"{self.prefix}:{self.name}:{suffix}"

    def job(self, job_id: str) -> str:
        """Full job hash key ``<prefix>:<queue>:<jobId>``."""
        return f"{self.prefix}:{self.name}:{job_id}"

    def de(self, dedup_id: str) -> str:
        """Deduplication key ``<prefix>:<queue>:de:<id>``."""
        return f"{self.prefix}:{self.name}:de:{dedup_id}"
