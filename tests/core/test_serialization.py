"""Strict JSON (django_bullq/core/serialization.py): what is refused and what round-trips."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
import redis

from django_bullq import Queue
from django_bullq.core.errors import SerializationError
from django_bullq.core.serialization import dumps, loads, loads_str, to_str

UNICODE_VALUES: list[Any] = [
    {"emoji": "🚀👩‍👩‍👧‍👦", "flag": "🇺🇦"},
    {"rtl": "שלום עולם", "arabic": "مرحبا", "mixed": "abc \u202e def"},
    {"nul": "a\u0000b", "controls": "\t\n\r\x1f"},
    ["é", "ß", "漢字", "\U0010ffff"],
    "plain string",
    None,
    [1, 2.5, -0.0, 10**20, True, False],
]


def test_compact_and_unicode_kept_as_is() -> None:
    assert dumps({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    assert dumps("\u0000") == '"\\u0000"'


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"x": [math.nan]}])
def test_nan_and_infinity_are_refused(value: Any) -> None:
    with pytest.raises(SerializationError, match="not JSON-serialisable"):
        dumps(value)


@pytest.mark.parametrize("value", ["\ud800", {"k": "a\udfffb"}, ["\udc00"]])
def test_lone_surrogates_are_refused(value: Any) -> None:
    with pytest.raises(SerializationError, match="not valid Unicode"):
        dumps(value)


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes", Decimal("1.5"), {("t",): 1}])
def test_non_json_values_are_refused_naming_what(value: Any) -> None:
    with pytest.raises(SerializationError, match="argument 'x' of task app.f"):
        dumps(value, "argument 'x' of task app.f")


def test_serialization_error_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        dumps(object())


def test_too_deep_nesting_is_refused() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(SerializationError):
        dumps(deep)


class Enum(int):
    """An int subclass, as an ``IntEnum`` member is one."""


@pytest.mark.parametrize(
    "value",
    [*UNICODE_VALUES, {"args": [1], "kwargs": {}}, {"b": 1, "a": [{"x": None}]}, Enum(3), 1e300],
)
def test_text_is_json_dumps_compact(value: Any) -> None:
    """The cached encoder writes exactly what ``json.dumps`` with the same options writes."""
    import json

    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert dumps(value) == expected


def test_a_value_that_holds_itself_is_refused() -> None:
    """No circular-reference bookkeeping is kept between calls: a cycle ends in the recursion
    limit, read as a :class:`SerializationError`, and the next call still works."""
    cycle: list[Any] = [1]
    cycle.append(cycle)
    with pytest.raises(SerializationError, match="data of task t"):
        dumps(cycle, "data of task t")
    assert dumps([cycle[0]]) == "[1]"


def test_encoding_from_many_threads_at_once() -> None:
    """One encoder serves every thread (nothing of a call is kept in it)."""
    from concurrent.futures import ThreadPoolExecutor

    values = [{"args": [i, "x" * (i % 50)], "kwargs": {"k": [i] * (i % 7)}} for i in range(2000)]
    with ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(dumps, values))
    assert [loads(t) for t in texts] == values


@pytest.mark.parametrize("value", UNICODE_VALUES)
def test_round_trip_in_memory(value: Any) -> None:
    assert loads(dumps(value)) == value
    assert loads(dumps(value).encode("utf-8")) == value


@pytest.mark.parametrize("value", UNICODE_VALUES)
def test_round_trip_through_redis(queue: Queue, r: redis.Redis, value: Any) -> None:
    job = queue.add("app.tasks.echo", value)
    stored = r.hget(queue.keys.job(job.id), "data")
    assert stored == dumps(value)
    assert loads(stored) == value


def test_loads_default_and_invalid_text() -> None:
    assert loads(None, default={}) == {}
    with pytest.raises(ValueError):
        loads("{not json")
    with pytest.raises(ValueError):
        loads("NaN-ish")


def test_to_str() -> None:
    assert to_str(None) is None
    assert to_str("a") == "a"
    assert to_str(b"\xc3\xa9") == "é"
    assert to_str(b"\xff") == "\ufffd"
    assert to_str(12) == "12"


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", '{"x":NaN}'])
def test_loads_refuses_non_standard_constants(text: str) -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        loads(text)


@pytest.mark.parametrize(
    "text", [' {"a": 1} ', "1\n", "\t[]", '"x"', "0", "-0.5e3", '{"a":[1,{"b":null}]}', "[]"]
)
def test_loads_reads_what_json_loads_reads(text: str) -> None:
    """The scanner-first decode gives ``json.loads``' value, whitespace around it included."""
    import json

    assert loads(text) == json.loads(text)
    assert loads_str(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a":1}x', "1 2", "[1,]", "", " ", '{"a"}', "tru"])
def test_loads_refuses_what_json_loads_refuses_with_its_error(text: str) -> None:
    import json

    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        loads_str(text)
    assert (got.value.msg, got.value.pos) == (expected.value.msg, expected.value.pos)


def test_loads_of_text_nested_too_deeply_is_a_value_error() -> None:
    """The decoders raise RecursionError past the interpreter's limit; ``loads`` and
    ``loads_str`` promise ValueError for text they cannot read (the job hash decode catches
    that), so a deep value must not escape as a RecursionError."""
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ValueError, match="nested too deeply"):
        loads(deep)
    with pytest.raises(ValueError, match="nested too deeply"):
        loads_str(" " + deep)  # the decode() path too


def test_a_value_that_holds_itself_is_named_as_such() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(SerializationError, match="holds itself"):
        dumps(cycle, "data of task t")
