"""The job index's write: one batch of rows upserted by ``(queue, job_id)`` in one statement.

The recorder (:mod:`django_bullq.recorder`) writes thousands of rows a second; a model
instance per row and a compiled ``bulk_create`` cost four times the Python time of the write
itself (measured: docs/search.md), so a batch is one ``INSERT ... ON CONFLICT (queue, job_id)
DO UPDATE`` (PostgreSQL and SQLite >= 3.24 spell it alike): on PostgreSQL its rows are
``unnest`` of one array per column (``data``, the job's own JSON text, cast to ``jsonb``),
elsewhere a ``VALUES`` list. The columns are :class:`~django_bullq.models.JobRecord`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections, transaction

#: The columns of a row, in the order of a row tuple.
COLUMNS = (
    "queue",
    "job_id",
    "name",
    "state",
    "timestamp",
    "finished_on",
    "data",
    "text",
    "failed_reason",
    "attempts_made",
)
#: Rows per statement on SQLite, ten parameters each, under its limit of 32766.
ROWS_PER_STATEMENT = 1000


def upsert(database: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` (tuples in :data:`COLUMNS` order; ``data`` a JSON text or None), a row
    whose ``(queue, job_id)`` exists replacing it, in one transaction of ``database``.

    Raises:
        django.db.DatabaseError: the write failed (nothing of the batch is kept).
    """
    if not rows:
        return
    connection = connections[database]
    with transaction.atomic(using=database), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            columns = [list(column) for column in zip(*rows, strict=True)]
            cursor.execute(_statement(connection, _UNNEST), columns)
            return
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            chunk = rows[start : start + ROWS_PER_STATEMENT]
            values = ", ".join(["(" + ", ".join(["%s"] * len(COLUMNS)) + ")"] * len(chunk))
            cursor.execute(
                _statement(connection, f"VALUES {values}"), [v for r in chunk for v in r]
            )


#: PostgreSQL: the batch as one array per column (ten parameters, whatever its size).
_UNNEST = (
    "SELECT q, j, n, s, t, f, CAST(d AS jsonb), x, r, a FROM unnest("
    "%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[], %s::bigint[], "
    "%s::text[], %s::text[], %s::text[], %s::integer[]) AS u(q, j, n, s, t, f, d, x, r, a)"
)


def _statement(connection: Any, source: str) -> str:
    from .models import JobRecord

    quote = connection.ops.quote_name
    updates = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in COLUMNS[2:])
    return (
        f"INSERT INTO {quote(JobRecord._meta.db_table)} ({', '.join(map(quote, COLUMNS))}) "
        f"{source} ON CONFLICT ({quote('queue')}, {quote('job_id')}) DO UPDATE SET {updates}"
    )
