"""The former path of the on-commit rule, kept for code that imports ``Pending`` from it.

The code lives in :mod:`django_bullq.producer.transaction`; this module only re-exports it.
"""

from .producer.transaction import (
    Pending,
    asubmit,
    defer,
    new_job_id,
    outbox_enabled,
    submit,
    waits_for_commit,
)

__all__ = [
    "Pending",
    "asubmit",
    "defer",
    "new_job_id",
    "outbox_enabled",
    "submit",
    "waits_for_commit",
]
