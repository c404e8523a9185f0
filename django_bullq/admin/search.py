"""The queue page's job filter: its GET form and the match of one job against it.

A filter is any of ``id`` (one job, any state), ``name`` (the job name, exact), ``since`` /
``until`` (a time range: the finish time in completed and failed, the creation time in the
other states, as the lists are ordered), ``q`` (text in the data, case-insensitive) and
``path`` + ``value`` (a JSON path into the data, ``user.id`` = ``42``; ``path`` alone: the
path exists). Every field is in the query string, so a filtered page is bookmarkable. The
walk over Redis is :mod:`django_bullq.admin.scan`, the index of finished jobs
:mod:`django_bullq.admin.index_search`.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django import forms
from django.utils import timezone

#: States whose list is ordered by finish time (the zset score is ``finishedOn``).
FINISHED_STATES = ("completed", "failed")
#: Longest ``q`` / ``path`` / ``value`` accepted, in characters.
MAX_TEXT = 500
#: A path segment: a key, or a list index when it is all digits.
_PATH = re.compile(r"^[^.\s][^.]*(\.[^.]+)*$")
_MISSING = object()


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
    path: tuple[str, ...] = ()
    value: Any = _MISSING

    @property
    def active(self) -> bool:
        """True when anything is filtered."""
        return self != JobFilter()

    @property
    def has_value(self) -> bool:
        """True when ``path`` is compared with a value (not only "exists")."""
        return self.value is not _MISSING

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

    def _in_range(self, timestamp_ms: int | None) -> bool:
        if self.since_ms is None and self.until_ms is None:
            return True
        if timestamp_ms is None:
            return False
        if self.since_ms is not None and timestamp_ms < self.since_ms:
            return False
        return self.until_ms is None or timestamp_ms <= self.until_ms

    def _path_matches(self, raw_data: str) -> bool:
        wanted = self.value
        if self.has_value and isinstance(wanted, str | int) and not isinstance(wanted, bool):
            probe = str(wanted)
            if probe.isascii() and probe.isalnum() and probe not in raw_data:
                return False  # cheap pre-check before parsing the JSON
        try:
            found = resolve(json.loads(raw_data), self.path)
        except (TypeError, ValueError):
            return False
        if found is _MISSING:
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
        decoded = json.dumps(json.loads(raw_data), ensure_ascii=False)
    except (TypeError, ValueError):
        return False
    return needle in decoded.casefold()


def resolve(value: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in decoded JSON ``value`` (a digit segment indexes a list), or
    the module's missing marker when the path does not exist."""
    for segment in path:
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return _MISSING
    return value


def same_value(found: Any, wanted: Any) -> bool:
    """JSON equality, with ``True`` never equal to ``1`` (Python's ``==`` says it is)."""
    if isinstance(found, bool) or isinstance(wanted, bool):
        return type(found) is type(wanted) and found == wanted
    return bool(found == wanted)


def parse_value(text: str) -> Any:
    """The ``value`` field decoded: JSON when it parses (``42``, ``true``, ``"42"``), else the
    text itself (``alice``)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


class JobFilterForm(forms.Form):
    """The filter's GET fields (all optional; see the module): ``id``, ``name``, ``since``,
    ``until`` (``YYYY-MM-DDTHH:MM[:SS]`` in the current time zone, as a ``datetime-local``
    input sends), ``q``, ``path``, ``value`` and ``cursor`` (jobs already walked by a
    filtered list, for its "continue" link; 0 from the start)."""

    id = forms.CharField(required=False, max_length=MAX_TEXT)
    name = forms.CharField(required=False, max_length=MAX_TEXT)
    since = forms.DateTimeField(required=False)
    until = forms.DateTimeField(required=False)
    q = forms.CharField(required=False, max_length=MAX_TEXT)
    path = forms.CharField(required=False, max_length=MAX_TEXT)
    value = forms.CharField(required=False, max_length=MAX_TEXT, strip=False)
    cursor = forms.IntegerField(required=False, min_value=0)

    def clean_path(self) -> str:
        path = str(self.cleaned_data["path"])
        if path and not _PATH.match(path):
            raise forms.ValidationError("a dotted path such as user.id or items.0.sku")
        return path

    def clean_cursor(self) -> int:
        cursor = self.cleaned_data["cursor"]
        return 0 if cursor is None else int(cursor)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("value") and not cleaned.get("path"):
            self.add_error("value", "a value needs a path")
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since > until:
            self.add_error("until", "until is before since")
        return cleaned

    def job_filter(self) -> JobFilter:
        """The valid fields as a :class:`JobFilter` (invalid ones are left out)."""
        cleaned = getattr(self, "cleaned_data", {})
        path = str(cleaned.get("path") or "")
        value = cleaned.get("value") or ""
        return JobFilter(
            id=str(cleaned.get("id") or ""),
            name=str(cleaned.get("name") or ""),
            since_ms=_ms(cleaned.get("since")),
            until_ms=_ms(cleaned.get("until"), end=True),
            text=str(cleaned.get("q") or ""),
            path=tuple(path.split(".")) if path else (),
            value=parse_value(value) if path and value != "" else _MISSING,
        )


#: The filter's query-string fields, in the order the page writes them.
FILTER_FIELDS = ("id", "name", "since", "until", "q", "path", "value")


def query_items(data: Any) -> dict[str, str]:
    """The non-empty filter fields of a request's GET or POST ``data``, as sent: what a
    link or a hidden input carries to keep the filter."""
    return {name: str(data.get(name)) for name in FILTER_FIELDS if data.get(name)}


def _ms(moment: datetime | None, *, end: bool = False) -> int | None:
    """``moment`` as ms since the epoch; naive times are in the current time zone. With
    ``end`` a time given to the minute includes its whole minute."""
    if moment is None:
        return None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    ms = int(moment.timestamp() * 1000)
    if end and moment.second == 0 and moment.microsecond == 0:
        ms += 59_999
    return ms


def describe(flt: JobFilter) -> dict[str, Any]:
    """The filter as a plain dict (for the live JSON and the log message)."""
    shown = asdict(flt)
    shown["path"] = ".".join(flt.path)
    shown["value"] = flt.value if flt.has_value else None
    return {k: v for k, v in shown.items() if v not in ("", None)}
