"""A form field for one strict-JSON value typed as text, as the admin's job forms take it."""

from __future__ import annotations

import inspect
from typing import Any

from django import forms

from ..core.serialization import loads_str

#: Rows of the JSON text areas.
ROWS = 3
#: Largest JSON text a field takes, in characters (a job's data is for references, not files).
MAX_JSON_CHARS = 100_000


class JsonValueField(forms.CharField):
    """A strict-JSON value typed as text (``NaN`` / ``Infinity`` refused): the cleaned value is
    the decoded value; an empty optional field is :data:`inspect.Parameter.empty`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": ROWS, "cols": 60}))
        kwargs.setdefault("max_length", MAX_JSON_CHARS)
        kwargs.setdefault("strip", True)
        super().__init__(**kwargs)

    def clean(self, value: Any) -> Any:
        text = super().clean(value)
        if text in (None, ""):
            return inspect.Parameter.empty
        try:
            return loads_str(text)
        except ValueError as exc:
            raise forms.ValidationError(f"not JSON: {exc}") from exc


__all__ = ["MAX_JSON_CHARS", "JsonValueField"]
