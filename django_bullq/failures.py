"""Reading a failed attempt's stack trace: its exception type and message.

A job's ``stacktrace`` holds one entry per failed attempt (newest last), written by whichever
worker ran it: ours and PyPI BullMQ's write Python's ``traceback.format_exception`` text, Node
BullMQ's ``err.stack``. ``failedReason`` is only the message (BullMQ's format), so the admin
reads the type from the trace. Pure Python: the admin pages and the live snapshots use it.
"""

from __future__ import annotations

import re

#: An exception line: ``ValueError: message``, ``pkg.mod.Error``, ``TypeError`` alone.
_EXCEPTION_LINE = re.compile(
    r"^(?P<type>[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?::\s?(?P<msg>.*))?$"
)
#: Python's frame lines (``  File "x.py", line 3, in f``), Node's (``    at f (x.js:1:2)``).
_PY_FRAME = re.compile(r'^\s+File "')
_NODE_FRAME = re.compile(r"^\s+at\s")


def parse_trace(trace: str) -> tuple[str | None, str]:
    """The exception type and message of one ``stacktrace`` entry.

    Python: the first unindented line after the last frame (``  File "…"``), with the lines
    after it (a multi-line message). Node: the first line, up to the first ``    at`` frame.

    Args:
        trace: one entry of a job's ``stacktrace`` (text).

    Returns:
        ``(type, message)``: ``type`` a (dotted) class name, or None when the text is not a
        trace in either format, and then ``message`` is the whole text, stripped.
    """
    lines = trace.strip("\n").splitlines()
    frames = [i for i, line in enumerate(lines) if _PY_FRAME.match(line)]
    if frames:
        rest = lines[frames[-1] + 1 :]
        for i, line in enumerate(rest):
            if line and not line[0].isspace():
                return _split(line, rest[i + 1 :])
        return None, trace.strip()
    node_frames = [i for i, line in enumerate(lines) if _NODE_FRAME.match(line)]
    if node_frames and node_frames[0] > 0:
        return _split(lines[0], lines[1 : node_frames[0]])
    return None, trace.strip()


def _split(line: str, more: list[str]) -> tuple[str | None, str]:
    found = _EXCEPTION_LINE.match(line)
    if found is None:
        return None, "\n".join([line, *more]).strip()
    message = "\n".join([found.group("msg") or "", *more]).strip()
    return found.group("type"), message


__all__ = ["parse_trace"]
