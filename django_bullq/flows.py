"""Flows in the Django layer: a :class:`~django_bullq.FlowProducer` built from ``BULLQ``
settings, and helpers to add trees made of ``task.node(...)`` calls (docs/flows.md)."""

from __future__ import annotations

from typing import Any

from .conf import get_queue
from .core.flow import FlowProducer, JobNode, chain


def flow_producer(queue: str | None = None) -> FlowProducer:
    """A FlowProducer on the connection and prefix of queue ``queue`` (default queue).

    Every queue of a flow shares that prefix (and, on Redis Cluster, its hash tag).

    Raises:
        ConfigurationError: unknown connection alias. InvalidNameError: bad queue name.
    """
    base = get_queue(queue)
    return FlowProducer(base.connection, prefix=base.prefix,
                        max_payload_bytes=base.max_payload_bytes)


def add_flow(tree: dict[str, Any]) -> JobNode:
    """Add ``tree`` (nodes from ``task.node(...)``) atomically; see FlowProducer.add."""
    return flow_producer(tree.get("queue_name")).add(tree)


async def aadd_flow(tree: dict[str, Any]) -> JobNode:
    """Async twin of :func:`add_flow`."""
    return await flow_producer(tree.get("queue_name")).aadd(tree)


def add_chain(steps: list[dict[str, Any]]) -> JobNode:
    """Run ``steps`` (nodes from ``task.node(...)``) one after the other; see ``chain``."""
    return add_flow(chain(steps))


async def aadd_chain(steps: list[dict[str, Any]]) -> JobNode:
    """Async twin of :func:`add_chain`."""
    return await aadd_flow(chain(steps))


__all__ = ["aadd_chain", "aadd_flow", "add_chain", "add_flow", "flow_producer"]
