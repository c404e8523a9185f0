"""Flows: parent/child job trees across queues (BullMQ's ``FlowProducer``), chains, and the
reads and moves of a parent's children (``getDependencies``, ``getChildrenValues``,
``moveToWaitingChildren``). See docs/flows.md.

A tree node is a dict::

    {"name": str, "queue_name": str, "data": JSON value,
     "opts": {JobOptions field: value} or a JobOptions, "children": [node, ...]}

Every node of a flow lives under the producer's key prefix (on Redis Cluster the prefix holds
the hash tag, so all queues of a flow share one slot). Node ids are the custom ``job_id`` or a
random UUID v4, as in BullMQ 6.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import instrument
from .calls import Batch, Call, Read, Steps
from .connection import Connection, as_connection
from .errors import ParentMissing, script_error
from .job import Job
from .names import validate_queue_name
from .options import JobOptions, parent_link
from .queue import Queue
from .serialization import DEFAULT_MAX_PAYLOAD_BYTES, loads

#: A flow node: ``{"name", "queue_name", "data", "opts", "children"}`` (see the module doc).
FlowTree = dict[str, Any]

_NODE_KEYS = {"name", "queue_name", "data", "opts", "children"}


@dataclass
class JobNode:
    """One node of an added or read flow: the :class:`Job` and its children's nodes."""

    job: Job
    children: list[JobNode] = field(default_factory=list)


@dataclass
class _Call:
    queue: Queue
    job: Job
    add: Call[Any]
    parent_key: str
    children: list[_Call]


class FlowProducer:
    """Adds job trees atomically across queues (BullMQ ``FlowProducer``).

    Args:
        connection: a Redis URL, a redis-py client or a
            :class:`~django_bullq.core.connection.Connection` (default local Redis).
        prefix: key prefix of every queue in the flows, BullMQ's ``bull`` by default; on
            Redis Cluster it must hold a hash tag such as ``{bull}``.
        max_payload_bytes: largest node ``data`` (bytes of JSON); 0 = no limit.
    """

    def __init__(
        self,
        connection: Any = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "bull",
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        self.connection: Connection = as_connection(connection)
        self.prefix = prefix
        self.max_payload_bytes = max_payload_bytes
        self._queues: dict[str, Queue] = {}
        #: this producer's own instrumentations (beside the global ones)
        self.instrumentations: tuple[instrument.Instrumentation, ...] = ()

    @classmethod
    def for_queue(cls, queue: Queue) -> FlowProducer:
        """A producer on ``queue``'s connection, key prefix and payload limit."""
        return cls(queue.connection, prefix=queue.prefix, max_payload_bytes=queue.max_payload_bytes)

    def queue(self, name: str) -> Queue:
        """The :class:`Queue` named ``name`` under this producer's prefix (cached)."""
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues[name] = Queue(
                name, self.connection, prefix=self.prefix, max_payload_bytes=self.max_payload_bytes
            )
        return queue

    # --- add -------------------------------------------------------------------------------

    def add(self, tree: FlowTree) -> JobNode:
        """Add a flow: every node in one MULTI/EXEC, children before their parent.

        A node with children waits in ``waiting-children`` (event ``waiting-children``) until
        they are done; leaves are enqueued as by :meth:`Queue.add`.

        Args:
            tree: the root node (see the module doc). Child failure policies are the child's
                options ``fail_parent_on_failure``, ``continue_parent_on_failure``,
                ``ignore_dependency_on_failure``, ``remove_dependency_on_failure``. The root
                may carry ``opts.parent`` to hang the flow under an existing job.

        Returns:
            The :class:`JobNode` tree of the added jobs.

        Raises:
            ValueError: malformed node or options (nothing is written).
            InvalidNameError: a bad queue name or job id (nothing is written).
            SerializationError: data not JSON.
            ParentMissing: the root's ``opts.parent`` does not exist.
            ParentNotReplaceable: a duplicate id belongs to another parent.
            CrossSlotError: on Redis Cluster, the root's ``opts.parent`` is in another hash
                slot (nothing is written).
        """
        return self.add_bulk([tree])[0]

    def validate(self, tree: FlowTree) -> None:
        """Check ``tree`` as :meth:`add` does, writing nothing (same errors as :meth:`add`
        raises before it writes: ValueError, InvalidNameError, SerializationError,
        CrossSlotError)."""
        self._plan(tree, None)

    def add_bulk(self, trees: Iterable[FlowTree]) -> list[JobNode]:
        """Add several flows in one MULTI/EXEC (BullMQ ``addBulk``); returns their roots."""
        return self._drive_adds(self._plan_all(trees))

    async def aadd(self, tree: FlowTree) -> JobNode:
        """Async twin of :meth:`add`."""
        return (await self.aadd_bulk([tree]))[0]

    async def aadd_bulk(self, trees: Iterable[FlowTree]) -> list[JobNode]:
        """Async twin of :meth:`add_bulk`."""
        return await self._adrive_adds(self._plan_all(trees))

    def _plan_all(self, trees: Iterable[FlowTree]) -> _Plan:
        """The roots' calls, and the add as instrumentations see it (None: none registered)."""
        trees = list(trees)
        first = trees[0].get("queue_name", "") if trees and isinstance(trees[0], dict) else ""
        seen = instrument.producing(
            self.instrumentations, instrument.ADD_FLOW, str(first), len(trees)
        )
        carry = seen.carry if seen is not None else None
        try:
            return _Plan([self._plan(tree, None, carry) for tree in trees], seen)
        except BaseException as exc:
            if seen is not None:
                seen.end((), exc)
            raise

    def _drive_adds(self, plan: _Plan) -> list[JobNode]:
        """Run :meth:`_add_steps` on the first root's queue (every queue of a producer shares
        its connection)."""
        return plan.roots[0].queue._drive(plan.steps()) if plan.roots else plan.empty()

    async def _adrive_adds(self, plan: _Plan) -> list[JobNode]:
        """Async twin of :meth:`_drive_adds`."""
        return await plan.roots[0].queue._adrive(plan.steps()) if plan.roots else plan.empty()

    @staticmethod
    def _add_steps(roots: list[_Call]) -> Steps[list[JobNode]]:
        """Check that the roots' external parents exist, then add every node, children first,
        in one MULTI/EXEC (all queues of a producer share one connection)."""
        linked = [root for root in roots if root.parent_key]
        if linked:
            exists_each = tuple(("EXISTS", root.parent_key) for root in linked)
            found = yield Read(exists_each, list, transaction=False)
            for root, exists in zip(linked, found, strict=True):
                if not exists:
                    raise ParentMissing(-5, root.job.id, "addFlowJob")
        nodes = _post_order(roots)
        replies = yield Batch(
            tuple(node.add for node in nodes), transaction=True, raise_codes=False
        )
        _check_replies(nodes, replies)
        return [_node(root) for root in roots]

    def _plan(
        self,
        node: FlowTree,
        parent: _Call | None,
        carry: Callable[[str, str, dict[str, Any]], None] | None = None,
    ) -> _Call:
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            raise ValueError(f"a flow node is a dict with a str 'name', got {node!r}")
        unknown = set(node) - _NODE_KEYS
        if unknown:
            raise ValueError(f"flow node {node['name']!r}: unknown key(s) {sorted(unknown)}")
        queue = self.queue(validate_queue_name(node.get("queue_name", "")))
        raw_opts = node.get("opts") or {}
        opts = raw_opts if isinstance(raw_opts, JobOptions) else JobOptions(**raw_opts)
        if parent is not None:
            if opts.parent is not None:
                raise ValueError(f"flow node {node['name']!r}: only the root may set 'parent'")
            opts = opts.merged(parent={"id": parent.job.id, "queue": parent.queue.keys.queue_key})
        job_id = opts.job_id or str(uuid.uuid4())
        children_nodes = node.get("children") or []
        flow = (job_id, parent is not None, bool(children_nodes))
        add, stored, meta = queue._add_call(
            node["name"], node.get("data"), opts, {}, flow=flow, carry=carry
        )
        if not isinstance(children_nodes, list):
            raise ValueError(f"flow node {node['name']!r}: 'children' must be a list")
        job = queue._new_job(job_id, node["name"], node.get("data"), meta, stored)
        parent_key, parent_json = parent_link(stored)
        job.parent_key, job.parent = parent_key or None, loads(parent_json or None)
        call = _Call(queue, job, add, parent_key, [])
        call.children = [self._plan(child, call, carry) for child in children_nodes]
        return call

    # --- read ------------------------------------------------------------------------------

    def get_flow(self, queue_name: str, job_id: str, depth: int = 10) -> JobNode | None:
        """The tree under job ``job_id`` of ``queue_name`` as stored (BullMQ ``getFlow``).

        Args:
            depth: levels to read (1 = the job alone).

        Returns:
            A :class:`JobNode`, or None when the job does not exist. Children whose hash is
            gone are left out.
        """
        return self.queue(queue_name)._drive(self._read_flow(queue_name, job_id, depth))

    async def aget_flow(self, queue_name: str, job_id: str, depth: int = 10) -> JobNode | None:
        """Async twin of :meth:`get_flow`."""
        return await self.queue(queue_name)._adrive(self._read_flow(queue_name, job_id, depth))

    def _read_flow(self, queue_name: str, job_id: str, depth: int) -> Steps[JobNode | None]:
        """The reads of :meth:`get_flow`, depth first (all queues share one connection)."""
        job: Job | None = yield self.queue(queue_name)._job_read(job_id)
        if job is None:
            return None
        node = JobNode(job)
        if depth > 1:
            deps = yield job._dependencies()
            for key in deps["all"]:
                where = self._split(key)
                if where is not None:
                    child = yield from self._read_flow(where[0], where[1], depth - 1)
                    if child is not None:
                        node.children.append(child)
        return node

    def _split(self, job_key: str) -> tuple[str, str] | None:
        queue_key, _, job_id = job_key.rpartition(":")
        head = self.prefix + ":"
        if not queue_key.startswith(head):
            return None
        return queue_key[len(head) :], job_id

    def close(self) -> None:
        """Close the synchronous client's connections."""
        if self.connection.client is not None:
            self.connection.client.close()


@dataclass
class _Plan:
    """The planned calls of an add, and the instrumentations watching it."""

    roots: list[_Call]
    seen: instrument.Producing | None

    def steps(self) -> Steps[list[JobNode]]:
        steps = FlowProducer._add_steps(self.roots)
        return steps if self.seen is None else instrument.observe(self.seen, steps, _pre_order)

    def empty(self) -> list[JobNode]:
        if self.seen is not None:
            self.seen.end((), None)
        return []


def _pre_order(roots: list[JobNode]) -> list[Job]:
    """The jobs of ``roots``, parents before children: the order they were planned in."""
    out: list[Job] = []

    def visit(node: JobNode) -> None:
        out.append(node.job)
        for child in node.children:
            visit(child)

    for root in roots:
        visit(root)
    return out


def _post_order(roots: Sequence[_Call]) -> list[_Call]:
    out: list[_Call] = []

    def visit(call: _Call) -> None:
        for child in call.children:
            visit(child)
        out.append(call)

    for root in roots:
        visit(root)
    return out


def _check_replies(calls: list[_Call], replies: list[Any]) -> None:
    for call, reply in zip(calls, replies, strict=True):
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, int) and reply < 0:
            raise script_error(reply, call.job.id, "addFlowJob")


def _node(call: _Call) -> JobNode:
    return JobNode(call.job, [_node(child) for child in call.children])


def chain(steps: Sequence[FlowTree]) -> FlowTree:
    """A flow tree that runs ``steps`` one after the other.

    Each step becomes the parent of the step before it, so step *n* starts when step *n-1*
    completed and reads its result with ``job.get_children_values()``.

    Args:
        steps: flow nodes without ``children`` (``{"name", "queue_name", "data"?, "opts"?}``),
            first to run first.

    Returns:
        The root node (the last step), to pass to :meth:`FlowProducer.add`.

    Raises:
        ValueError: no steps, or a step that already has children.
    """
    if not steps:
        raise ValueError("a chain needs at least one step")
    tree: FlowTree | None = None
    for step in steps:
        if step.get("children"):
            raise ValueError(f"chain step {step.get('name')!r} must not have children")
        tree = {**step, "children": [tree] if tree is not None else []}
    assert tree is not None
    return tree


__all__ = ["FlowProducer", "JobNode", "chain"]
