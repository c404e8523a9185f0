"""The admin reads job data and form input as JSON with the core's strict decoder: text nested
deeper than the decoder reads is "not JSON" (a form error, a job that does not match), never a
RecursionError and a 500 (a helper's trial, stop 29), and NaN is refused as the worker
refuses it."""

from __future__ import annotations

import inspect

import pytest
from django import forms

from django_bullq.admin.filter_form import parse_value
from django_bullq.admin.json_field import JsonValueField
from django_bullq.admin.search import JobFilter, text_matches

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_job_whose_data_nests_too_deeply_matches_no_data_filter() -> None:
    assert JobFilter(path=("a",)).matches("n", 0, DEEP) is False
    assert JobFilter(path=("a",), value=1).matches("n", 0, DEEP) is False
    assert text_matches(DEEP + "\\u00e9", "é") is False
    assert JobFilter(path=("a",), value=1).matches("n", 0, '{"a":1}') is True


def test_form_json_nested_too_deeply_or_nan_is_a_form_error() -> None:
    field = JsonValueField(required=False)
    deep = "[" * 40_000 + "]" * 40_000  # under the field's 100,000 characters
    for text in (deep, "NaN", "[1, Infinity]"):
        with pytest.raises(forms.ValidationError, match="not JSON"):
            field.clean(text)
    assert field.clean('{"a": [1]}') == {"a": [1]}
    assert field.clean("") is inspect.Parameter.empty


def test_a_filter_value_that_nests_too_deeply_is_taken_as_text() -> None:
    assert parse_value(DEEP) == DEEP
    assert parse_value("42") == 42 and parse_value("alice") == "alice"
