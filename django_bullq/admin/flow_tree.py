"""A job's flow as the job page shows it: the tree from its root down, across queues.

BullMQ links a flow through its job hashes: a child's ``parentKey`` names its parent's job key
(``<prefix>:<queue>:<id>``), a parent's ``dependencies`` set and ``processed`` / ``failed``
hashes name its children. :func:`flow_view` climbs ``parentKey`` to the highest job still in
Redis, then reads the tree depth first, each node with its state, up to a node limit (a
fan-out of thousands of children would not make a page).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..core.errors import BullqError
from ..core.flow import FlowProducer
from .data import split_job_key

if TYPE_CHECKING:
    from ..core.job import Job
    from ..core.queue import Queue

#: Nodes read per page (root and descendants, depth first).
MAX_NODES = 100
#: Levels climbed to the root, and read below it.
MAX_DEPTH = 10


@dataclass(frozen=True)
class FlowRow:
    """One node of the tree, in depth-first order."""

    #: 0 for the root, 1 for its children, ...
    depth: int
    #: The node's queue and job id (its page: ``admin:django_bullq_job``).
    queue: str
    job_id: str
    #: Its job name, as any producer wrote it (escape it).
    name: str
    #: Its state (``"unknown"`` when gone meanwhile).
    state: str
    #: True for the job whose page this is.
    current: bool


@dataclass(frozen=True)
class FlowView:
    """The rows of a flow, and whether :data:`MAX_NODES` cut it."""

    rows: list[FlowRow]
    truncated: bool


def flow_view(
    queue: Queue, job: Job, *, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH
) -> FlowView | None:
    """The flow ``job`` is part of, or None when it has no parent and no children.

    Args:
        queue: the job's queue (its connection and prefix reach the other queues).
        job: the job of the page.
        max_nodes: nodes read at most. max_depth: levels climbed up, and read down.

    Returns:
        The rows from the highest ancestor still in Redis down, children in the order they
        were added (timestamp, then name).
    """
    producer = FlowProducer.for_queue(queue)
    root_queue, root = queue.name, job
    for _ in range(max_depth):
        where = split_job_key(root.parent_key, queue.prefix) if root.parent_key else None
        if where is None:
            break
        parent = producer.queue(where[0]).get_job(where[1])
        if parent is None:
            break  # removed or trimmed: the tree starts at the highest job left
        root_queue, root = where[0], parent
    rows: list[FlowRow] = []
    truncated = _walk(
        producer, root_queue, root, 0, (queue.name, job.id), rows, max_nodes, max_depth
    )
    if len(rows) == 1 and not job.parent_key:
        return None  # no parent, no children: not part of a flow
    return FlowView(rows, truncated)


def _walk(
    producer: FlowProducer,
    queue_name: str,
    job: Job,
    depth: int,
    current: tuple[str, str],
    rows: list[FlowRow],
    max_nodes: int,
    max_depth: int,
) -> bool:
    """Append ``job`` and its descendants to ``rows``; True when the node limit cut it."""
    if len(rows) >= max_nodes:
        return True
    queue = producer.queue(queue_name)
    rows.append(
        FlowRow(
            depth,
            queue_name,
            job.id,
            job.name,
            queue.get_job_state(job.id),
            (queue_name, job.id) == current,
        )
    )
    if depth + 1 >= max_depth:
        return False
    try:
        keys = job.get_dependencies()["all"]
    except BullqError:
        return False
    children: list[tuple[str, Job]] = []
    for key in keys:
        where = split_job_key(key, producer.prefix)
        child = producer.queue(where[0]).get_job(where[1]) if where else None
        if where is not None and child is not None:
            children.append((where[0], child))
    children.sort(key=lambda pair: (pair[1].timestamp, pair[1].name, pair[1].id))
    for child_queue, child in children:
        if _walk(producer, child_queue, child, depth + 1, current, rows, max_nodes, max_depth):
            return True
    return False


def flow_html(view: FlowView) -> SafeString:
    """The flow as a list whose items carry ``bullq-depth-<n>`` (the stylesheet indents them;
    no inline style, for the admin's CSP), each a link to the node's page, its queue and id,
    and its state; the page's own job in ``<strong>``. Everything from Redis is escaped."""
    items = format_html_join(
        "",
        '<li class="bullq-depth-{}"><a href="{}">{}</a> <span class="bullq-flow-where">{} · {}'
        '</span> <span class="bullq-flow-state bullq-flow-{}">{}</span></li>',
        (
            (
                min(row.depth, MAX_DEPTH),
                reverse(
                    "admin:django_bullq_job", kwargs={"queue": row.queue, "job_id": row.job_id}
                ),
                format_html("<strong>{}</strong>", row.name) if row.current else row.name,
                row.queue,
                row.job_id,
                row.state.replace(" ", "-"),
                row.state,
            )
            for row in view.rows
        ),
    )
    more = (
        format_html('<p class="help">The first {} jobs of the flow are shown.</p>', len(view.rows))
        if view.truncated
        else ""
    )
    return format_html('<ul class="bullq-flow">{}</ul>{}', items, more)


__all__ = ["MAX_DEPTH", "MAX_NODES", "FlowRow", "FlowView", "flow_html", "flow_view"]
