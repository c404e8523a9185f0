"""The JSON shape of one job as the live pages show it: a socket's ``snapshot`` frame and the
admin's polling endpoint send the same dict (docs/events.md, "Wire protocol")."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..failures import parse_trace
from .bridge import fit_frame

if TYPE_CHECKING:
    from ..core.job import Job

#: Newest log lines a snapshot carries.
SNAPSHOT_LOGS = 200
#: Longest job data (as :func:`pretty_json` writes it, characters) a snapshot carries; longer
#: data stays as the page drew it (a frame would have to cut it).
SNAPSHOT_DATA_CHARS = 16_000


def pretty_json(value: Any) -> str:
    """``value`` as the admin shows JSON: indented by 2, keys sorted, non-ASCII kept; the
    ``repr`` of a value JSON cannot write."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def job_fields(job: Job, state: str | None, logs: list[str]) -> dict[str, Any]:
    """The job as a snapshot's ``job`` object.

    Args:
        job: the job as read from its hash.
        state: its state now (``Job.get_state``), None when unknown.
        logs: its newest log lines (at most :data:`SNAPSHOT_LOGS`), oldest first.

    Returns:
        ``{"id", "name", "state", "progress", "logs", "returnvalue", "failedReason",
        "failedType", "progressReported", "attemptsMade", "attemptsStarted", "priority",
        "delay", "processedBy", "timestamp", "processedOn", "finishedOn", "dataText"}``:
        times in epoch ms (None before they happen), ``delay`` in ms, ``processedBy`` the
        worker's name (None before a worker took it), ``dataText`` the data as
        :func:`pretty_json` writes it, left out when longer than :data:`SNAPSHOT_DATA_CHARS`.
    """
    fields = {
        "id": job.id,
        "name": job.name,
        "state": state,
        "progress": job.progress,
        "logs": logs,
        "returnvalue": job.returnvalue,
        "failedReason": job.failed_reason,
        "failedType": parse_trace(job.stacktrace[-1])[0] if job.stacktrace else None,
        "progressReported": "progress" in job.raw,
        "attemptsMade": job.attempts_made,
        "attemptsStarted": job.attempts_started,
        "priority": job.priority,
        "delay": job.delay,
        "processedBy": job.processed_by,
        "timestamp": job.timestamp,
        "processedOn": job.processed_on,
        "finishedOn": job.finished_on,
    }
    data_text = pretty_json(job.data)
    if len(data_text) <= SNAPSHOT_DATA_CHARS:  # changed by update_data or an edited retry
        fields["dataText"] = data_text
    return fields


def snapshot_frame(
    stream_id: str | None, job: Job | None, state: str | None, logs: list[str]
) -> dict[str, Any]:
    """``{"type": "snapshot", "id": stream_id, "job": {...} | None}``, cut to fit one frame
    (``bridge.MAX_FRAME_BYTES``; the newest log lines kept). ``stream_id`` is the events
    stream position it was read at (None from the polling endpoint)."""
    if job is None:
        return {"type": "snapshot", "id": stream_id, "job": None}
    frame = {"type": "snapshot", "id": stream_id, "job": job_fields(job, state, logs)}
    return fit_frame(frame, "job", ("logs",))
