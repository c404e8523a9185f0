"""Flows in the Django layer: a :class:`~django_bullq.FlowProducer` built from ``BULLQ``
settings, and helpers to add trees made of ``task.node(...)`` calls (docs/flows.md)."""

from __future__ import annotations

from typing import Any

from .conf import ConfigurationError, get_config, get_queue, queue_config
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


def check_one_home(tree: dict[str, Any]) -> None:
    """Refuse a flow whose queues live on different connections or under different prefixes.

    One flow is written in one MULTI/EXEC under one prefix; a node whose queue is configured
    elsewhere (``BULLQ["QUEUES"][name]["CONNECTION"]`` / ``["PREFIX"]``) would be written where
    its workers never look. Nothing is written when this raises.

    Raises:
        ConfigurationError: two queues of the tree differ in connection alias or prefix.
    """
    root = queue_config(tree.get("queue_name") or get_config()["DEFAULT_QUEUE"])
    home = (root["CONNECTION"], root["PREFIX"])
    stack = [tree]
    while stack:
        node = stack.pop()
        name = node.get("queue_name") if isinstance(node, dict) else None
        if isinstance(name, str) and name:
            entry = queue_config(name)
            if (entry["CONNECTION"], entry["PREFIX"]) != home:
                raise ConfigurationError(
                    f"flow node {node.get('name')!r}: queue {name!r} is on connection "
                    f"{entry['CONNECTION']!r} with prefix {entry['PREFIX']!r}, but the flow's "
                    f"root queue {tree.get('queue_name')!r} is on {home[0]!r} with prefix "
                    f"{home[1]!r}; one flow must stay on one connection and one prefix")
        if isinstance(node, dict) and isinstance(node.get("children"), list):
            stack.extend(node["children"])


def add_flow(tree: dict[str, Any]) -> JobNode:
    """Add ``tree`` (nodes from ``task.node(...)``) atomically; see FlowProducer.add.

    Raises:
        ConfigurationError: the tree's queues are on different connections or prefixes.
    """
    check_one_home(tree)
    return flow_producer(tree.get("queue_name")).add(tree)


async def aadd_flow(tree: dict[str, Any]) -> JobNode:
    """Async twin of :func:`add_flow`."""
    check_one_home(tree)
    return await flow_producer(tree.get("queue_name")).aadd(tree)


def add_chain(steps: list[dict[str, Any]]) -> JobNode:
    """Run ``steps`` (nodes from ``task.node(...)``) one after the other; see ``chain``."""
    return add_flow(chain(steps))


async def aadd_chain(steps: list[dict[str, Any]]) -> JobNode:
    """Async twin of :func:`add_chain`."""
    return await aadd_flow(chain(steps))


__all__ = ["aadd_chain", "aadd_flow", "add_chain", "add_flow", "check_one_home", "flow_producer"]
