"""A queue's workers as Redis sees them: the connections named like BullMQ workers.

A BullMQ worker (Node, PyPI, ours) names its connections ``<prefix>:<base64(queue name)>``,
with ``:w:<worker name>`` after it when the worker has a name; BullMQ's ``Queue.getWorkers``
reads them from ``CLIENT LIST``. :class:`ClientLists` reads ``CLIENT LIST`` once per Redis
server for a page or a scrape that looks at many queues; :func:`worker_connections` picks a
queue's connections from it.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from .serialization import to_str

if TYPE_CHECKING:
    from .queue import Queue


class ClientLists:
    """``CLIENT LIST`` read once per Redis server (per connection pool), on first use."""

    def __init__(self) -> None:
        self._lists: dict[int, list[dict[str, Any]]] = {}

    def of(self, queue: Queue) -> list[dict[str, Any]]:
        """The clients of ``queue``'s server (its connection pool's), read on first use."""
        pool = id(queue.client.connection_pool)
        if pool not in self._lists:
            self._lists[pool] = queue.client.client_list()
        return self._lists[pool]


def worker_connections(
    queue: Queue, clients: ClientLists | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The connections of ``queue``'s workers (BullMQ ``Queue.getWorkers``).

    Args:
        queue: the queue. clients: a :class:`ClientLists` shared by many queues; None reads
            ``CLIENT LIST`` for this queue alone.

    Returns:
        ``[(worker name, or "" for an unnamed worker, the CLIENT LIST entry)]``.
    """
    base = f"{queue.prefix}:{base64.b64encode(queue.name.encode()).decode()}"
    listed = clients.of(queue) if clients is not None else queue.client.client_list()
    found = []
    for client in listed:
        name = to_str(client.get("name")) or ""
        if name == base:
            found.append(("", client))
        elif name.startswith(base + ":w:"):
            found.append((name[len(base) + 3 :], client))
    return found


__all__ = ["ClientLists", "worker_connections"]
