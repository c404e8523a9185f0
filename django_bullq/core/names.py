"""What a queue name and a key prefix may be, and the Redis Cluster slots keys hash to.

BullMQ's rules (protocol reference §2.1, §2.5); :class:`~.keys.QueueKeys` builds keys only from
names that passed here, and checks custom job ids against its suffixes.
"""

from __future__ import annotations

from redis.crc import key_slot

from .errors import CrossSlotError, InvalidNameError


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


__all__ = ["check_same_slot", "has_hash_tag", "hash_slot", "validate_queue_name"]
