"""Helpers shared by the Django-layer tests."""

from __future__ import annotations

from typing import Any

from django_bullq.worker.group import WorkerGroup, run_workers


def burst(*queue_names: str, **overrides: Any) -> WorkerGroup:
    """Run Django workers in this process until the queues are idle (no signal handlers)."""
    overrides.setdefault("drain_delay", 0.2)
    return run_workers(list(queue_names), burst=True, handle_signals=False, **overrides)
