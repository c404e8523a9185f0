"""QueueKeys: the one place that spells BullMQ's Redis key names (``<prefix>:<queue>:<suffix>``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from redis.crc import key_slot

from .errors import CrossSlotError, InvalidNameError

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


def validate_queue_name(name: str) -> str:
    """Return ``name`` if it is usable as a BullMQ queue name.

    Rule (our contract for case B13/B32): non-empty, no ``:`` (keys are split at the last
    colon, so a colon would make flow references ambiguous), no ``{``/``}`` (they would hijack a
    Redis Cluster hash tag), no whitespace control characters.

    Raises:
        InvalidNameError: the name breaks the rule.
    """
    if not isinstance(name, str) or not name:
        raise InvalidNameError("queue name must be a non-empty string")
    for ch in (":", "{", "}"):
        if ch in name:
            raise InvalidNameError(f"queue name {name!r} must not contain {ch!r}")
    if any(c in name for c in "\r\n\t\x00"):
        raise InvalidNameError(f"queue name {name!r} must not contain control characters")
    return name


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


def has_hash_tag(prefix: str) -> bool:
    """True when ``prefix`` holds a non-empty Redis Cluster hash tag (``{bull}``, ``a{x}b``)."""
    start = prefix.find("{")
    end = prefix.find("}", start + 1) if start >= 0 else -1
    return end > start + 1


def hash_slot(key: str) -> int:
    """The Redis Cluster slot (0..16383) of ``key``: CRC16 of its hash tag, or of the whole key."""
    return int(key_slot(key.encode("utf-8")))


def check_same_slot(queue_key: str, parent_job_key: str) -> None:
    """Refuse a parent link between two hash slots (Redis Cluster only; case B32).

    Args:
        queue_key: ``<prefix>:<queue>`` of the job being added.
        parent_job_key: ``<prefix>:<queue>:<id>`` of its parent.

    Raises:
        CrossSlotError: the two keys hash to different slots.
    """
    if hash_slot(queue_key) != hash_slot(parent_job_key):
        raise CrossSlotError(
            f"parent {parent_job_key!r} is in Redis Cluster slot {hash_slot(parent_job_key)} "
            f"but queue {queue_key!r} is in slot {hash_slot(queue_key)}: a flow's queues must "
            "share one hash tag in their prefix, e.g. '{bull}'"
        )


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
