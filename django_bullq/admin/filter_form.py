"""The job filter's GET form: every field in the query string, so a filtered page is a bookmark.

The fields and what they filter are in :mod:`django_bullq.admin.search`; this module turns a
request's GET (or an action's POST) into a :class:`~django_bullq.admin.search.JobFilter`.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from datetime import datetime
from typing import Any

from django import forms
from django.utils import timezone

from ..core.serialization import loads_str
from .search import MISSING, JobFilter

#: Longest ``id`` / ``name`` / ``q`` / ``path`` / ``value`` accepted, in characters.
MAX_TEXT = 500
#: A dotted path: segments without dots, none empty (a digit segment indexes a list).
_PATH = re.compile(r"^[^.\s][^.]*(\.[^.]+)*$")


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
            until_ms=_ms(cleaned.get("until"), end=str(self.data.get("until", ""))),
            text=str(cleaned.get("q") or ""),
            path=tuple(path.split(".")) if path else (),
            value=parse_value(value) if path and value != "" else MISSING,
        )


#: The filter's query-string fields, in the order the page writes them.
FILTER_FIELDS = ("id", "name", "since", "until", "q", "path", "value")


def query_items(data: Any) -> dict[str, str]:
    """The non-empty filter fields of a request's GET or POST ``data``, as sent: what a
    link or a hidden input carries to keep the filter."""
    return {name: str(data.get(name)) for name in FILTER_FIELDS if data.get(name)}


def _ms(moment: datetime | None, *, end: str = "") -> int | None:
    """``moment`` as ms since the epoch; naive times are in the current time zone. As an
    upper bound (``end``: the text sent) it includes the whole minute or second it names."""
    if moment is None:
        return None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    ms = int(moment.timestamp() * 1000)
    if end and moment.microsecond == 0:
        ms += 999 if end.count(":") >= 2 else 59_999
    return ms


def describe(flt: JobFilter) -> dict[str, Any]:
    """The filter as a plain dict (for the live JSON and the log message)."""
    shown = asdict(flt)
    shown["path"] = ".".join(flt.path)
    shown["value"] = flt.value if flt.has_value else None
    return {k: v for k, v in shown.items() if v not in ("", None)}


def parse_value(text: str) -> Any:
    """The ``value`` field decoded: JSON when it parses (``42``, ``true``, ``"42"``), else the
    text itself (``alice``)."""
    try:
        return loads_str(text)
    except ValueError:
        return text
