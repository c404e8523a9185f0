"""The queue page's job filter: what it keeps (:class:`JobFilter`) and how one job matches.

A filter is any of ``id`` (one job, any state), ``name`` (the job name, exact), ``since`` /
``until`` (a time range: the finish time in completed and failed, the creation time in the
other states, as the lists are ordered), ``q`` (text in the data, case-insensitive) and
``path`` + ``value`` (a JSON path into the data, ``user.id`` = ``42``; ``path`` alone: the
path exists). The GET form is :mod:`~django_bullq.admin.filter_form`; Redis is walked by
:mod:`~django_bullq.admin.scan`, the job index read by :mod:`~django_bullq.admin.index_search`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.serialization import loads_str

#: States whose list is ordered by finish time (the zset score is ``finishedOn``).
FINISHED_STATES = ("completed", "failed")
#: The ``value`` of a filter that has none (the path only has to exist).
MISSING = object()


@dataclass(frozen=True)
class JobFilter:
    """A validated filter; empty strings and None mean "not filtered by this".

    ``since_ms`` / ``until_ms`` are ms since the epoch (inclusive bounds); ``path`` is the
    list of segments of the JSON path; ``value`` is the decoded JSON of the ``value`` field
    (``42``, ``true``, ``"x"``), or the text itself when it is not JSON.
    """

    id: str = ""
    name: str = ""
    since_ms: int | None = None
    until_ms: int | None = None
    text: str = ""
    path: Sequence[str] = ()
    value: Any = MISSING

    @property
    def active(self) -> bool:
        """True when anything is filtered."""
        return self != JobFilter()

    @property
    def has_value(self) -> bool:
        """True when ``path`` is compared with a value (not only "exists")."""
        return self.value is not MISSING

    def matches(self, name: str, timestamp_ms: int | None, raw_data: str) -> bool:
        """Whether a job with this ``name``, filtered time (``timestamp_ms``: the finish or
        creation time, see the module) and raw data JSON text passes (the id is not checked
        here: an id filter reads the one job)."""
        if self.name and name != self.name:
            return False
        if not self._in_range(timestamp_ms):
            return False
        if self.text and not text_matches(raw_data, self.text):
            return False
        return not self.path or self._path_matches(raw_data)

    def _in_range(self, ms: int | None) -> bool:
        if ms is None:
            return self.since_ms is None and self.until_ms is None
        after = self.since_ms is None or ms >= self.since_ms
        return after and (self.until_ms is None or ms <= self.until_ms)

    def _path_matches(self, raw_data: str) -> bool:
        wanted = self.value
        if self.has_value and isinstance(wanted, str | int) and not isinstance(wanted, bool):
            probe = str(wanted)
            if probe.isascii() and probe.isalnum() and probe not in raw_data:
                return False  # cheap pre-check before parsing the JSON
        try:
            found = resolve(loads_str(raw_data), self.path)
        except (TypeError, ValueError):
            return False
        if found is MISSING:
            return False
        return not self.has_value or same_value(found, self.value)


def text_matches(raw_data: str, text: str) -> bool:
    """Whether ``text`` (case-folded) is in the data JSON ``raw_data``.

    The raw text is searched first; JSON written with ``\\u`` escapes is decoded and searched
    again, so non-ASCII text is found either way."""
    needle = text.casefold()
    if needle in raw_data.casefold():
        return True
    if "\\u" not in raw_data:
        return False
    try:
        decoded = json.dumps(loads_str(raw_data), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return False
    return needle in decoded.casefold()


def resolve(value: Any, path: Sequence[str]) -> Any:
    """The value at ``path`` in decoded JSON ``value`` (a digit segment indexes a list), or
    the module's missing marker when the path does not exist."""
    for segment in path:
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return MISSING
    return value


def same_value(found: Any, wanted: Any) -> bool:
    """JSON equality, with ``True`` never equal to ``1`` (Python's ``==`` says it is)."""
    if isinstance(found, bool) or isinstance(wanted, bool):
        return type(found) is type(wanted) and found == wanted
    return bool(found == wanted)
