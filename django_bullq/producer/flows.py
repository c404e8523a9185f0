"""Flows in the Django layer: a :class:`~django_bullq.FlowProducer` built from ``BULLQ``
settings, and helpers to add trees made of ``task.node(...)`` calls (docs/flows.md), under the
on-commit rule of :mod:`django_bullq.producer.transaction`."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from ..conf import get_config, get_queue, queue_config
from ..core.flow import FlowProducer, JobNode, chain
from ..core.options import JobOptions
from ..exceptions import ConfigurationError
from .transaction import Pending, defer, new_job_id, waits_for_commit


def flow_producer(queue: str | None = None) -> FlowProducer:
    """A FlowProducer on the connection and prefix of queue ``queue`` (default queue).

    Every queue of a flow shares that prefix (and, on Redis Cluster, its hash tag).

    Raises:
        ConfigurationError: unknown connection alias. InvalidNameError: bad queue name.
    """
    return FlowProducer.for_queue(get_queue(queue))


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
                    f"{home[1]!r}; one flow must stay on one connection and one prefix"
                )
        if isinstance(node, dict) and isinstance(node.get("children"), list):
            stack.extend(node["children"])


def add_flow(
    tree: dict[str, Any],
    *,
    database: str = "default",
    on_commit: bool = True,
    outbox: bool | None = None,
) -> JobNode | Pending[JobNode]:
    """Add ``tree`` (nodes from ``task.node(...)``) atomically; see FlowProducer.add.

    The on-commit rule of ``enqueue`` (:mod:`django_bullq.producer.transaction`): inside
    ``transaction.atomic(using=database)`` the flow is added when that transaction commits
    (through the transactional outbox when it is on), and a rollback adds nothing.

    Args:
        tree: the root node. database: the alias whose commit a deferred add waits for.
        on_commit: False adds at once, inside the transaction too. outbox: None follows
            ``BULLQ["OUTBOX"]["ENABLED"]``; True / False.

    Returns:
        The root :class:`JobNode`; inside ``atomic()``, a
        :class:`~django_bullq.producer.transaction.Pending` whose ``id`` is the root job's id at
        once (every node without a ``job_id`` gets one in advance) and whose ``result`` is the root
        JobNode after the commit.

    Raises:
        ConfigurationError: the tree's queues are on different connections or prefixes, or
            ``outbox=True`` with the outbox disabled. ValueError / InvalidNameError /
            SerializationError: a bad node (at the call, also when the add waits).
    """
    producer = _producer_of(tree)
    if not waits_for_commit(database, on_commit=on_commit):
        return producer.add(tree)
    tree = with_job_ids(tree)
    producer.validate(tree)  # bad nodes raise here, not at the commit
    root = producer.queue(tree["queue_name"])
    root_id = _opts(tree)["job_id"]

    def to_outbox() -> int:
        from .outbox import write_flow

        pk: int = write_flow(database, tree).pk
        return pk

    pending: Pending[JobNode] = Pending(
        f"flow {tree['name']!r} (root id {root_id})", id=root_id, queue_name=root.name
    )
    return defer(
        functools.partial(producer.add, tree),
        to_outbox,
        pending,
        database=database,
        on_commit=on_commit,
        outbox=outbox,
    )


async def aadd_flow(
    tree: dict[str, Any],
    *,
    database: str = "default",
    on_commit: bool = True,
    outbox: bool | None = None,
) -> JobNode | Pending[JobNode]:
    """Async twin of :func:`add_flow` (inside ``atomic()``: as :func:`add_flow`)."""
    return (
        add_flow(tree, database=database, on_commit=on_commit, outbox=outbox)
        if waits_for_commit(database, on_commit=on_commit)
        else await _producer_of(tree).aadd(tree)
    )


def _producer_of(tree: dict[str, Any]) -> FlowProducer:
    """The FlowProducer of the tree's root queue, once the tree is checked to stay on one
    connection and prefix."""
    check_one_home(tree)
    return flow_producer(tree.get("queue_name"))


def add_chain(
    steps: list[dict[str, Any]],
    *,
    database: str = "default",
    on_commit: bool = True,
    outbox: bool | None = None,
) -> JobNode | Pending[JobNode]:
    """Run ``steps`` (nodes from ``task.node(...)``) one after the other; see ``chain``.

    Same on-commit rule, arguments and returns as :func:`add_flow` (the root is the last step).
    """
    return add_flow(chain(steps), database=database, on_commit=on_commit, outbox=outbox)


async def aadd_chain(
    steps: list[dict[str, Any]],
    *,
    database: str = "default",
    on_commit: bool = True,
    outbox: bool | None = None,
) -> JobNode | Pending[JobNode]:
    """Async twin of :func:`add_chain`."""
    return await aadd_flow(chain(steps), database=database, on_commit=on_commit, outbox=outbox)


def with_job_ids(tree: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``tree`` in which every node has a ``job_id`` (given ones are kept; others get
    :func:`~django_bullq.producer.transaction.new_job_id`, a UUID v4 as BullMQ 6 gives nodes)."""
    opts = _opts(tree)
    opts["job_id"] = opts.get("job_id") or new_job_id()
    children = tree.get("children")
    copy = {**tree, "opts": opts}
    if isinstance(children, list):
        copy["children"] = [
            with_job_ids(child) if isinstance(child, dict) else child for child in children
        ]
    return copy


def _opts(node: dict[str, Any]) -> dict[str, Any]:
    raw = node.get("opts") or {}
    if isinstance(raw, JobOptions):
        return {k: v for k, v in dataclasses.asdict(raw).items() if v is not None}
    return dict(raw)


__all__ = [
    "aadd_chain",
    "aadd_flow",
    "add_chain",
    "add_flow",
    "check_one_home",
    "flow_producer",
    "with_job_ids",
]
