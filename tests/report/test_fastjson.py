"""The fast --json writer is json.dumps(x, indent=2, ensure_ascii=False, allow_nan=False),
byte for byte, errors included, on arbitrary JSON-like values; and jsonout.render keeps its
non-finite and surrogate handling on top of it."""

from __future__ import annotations

import enum
import json
import math
import re
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from forensics.report.render import fastjson, jsonout


def _reference(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)


def _outcome(dump, value: Any) -> tuple[str, str]:
    try:
        return ("ok", dump(value))
    except (ValueError, TypeError) as exc:
        return (type(exc).__name__, "")


class Colour(enum.IntEnum):
    RED = 1


class Kind(enum.StrEnum):
    A = "a"


TEXT = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), max_size=6
)  # any code point: controls, quotes, backslashes, lone surrogates, astral
KEYS = st.one_of(
    TEXT,
    st.sampled_from(["id", "rule", "path", "line", "source", "\x00", '"', "\\", "\ud800"]),
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
    st.sampled_from([Colour.RED, Kind.A, 0.1, -0.0, 1e300, "\x00", "\u2028", "\udcff"]),
)


def _records(inner: st.SearchStrategy) -> st.SearchStrategy:
    """Lists of dicts that often share keys: the shape the templated path writes."""
    record = st.fixed_dictionaries(
        {"id": LEAVES, "source": st.fixed_dictionaries({"path": LEAVES, "line": LEAVES})},
        optional={
            "extra": inner,
            "evidence": LEAVES,
            "data": st.dictionaries(st.sampled_from(["n", "m"]), LEAVES, min_size=1, max_size=2),
        },
    )
    return st.lists(record | inner, max_size=6)


VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(KEYS, inner, max_size=5)
        | st.dictionaries(
            st.one_of(st.integers(), st.floats(), st.booleans(), st.none()), inner, max_size=3
        )
        | st.dictionaries(KEYS, inner, max_size=3).map(OrderedDict)
        | _records(inner)
    ),
    max_leaves=40,
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_fast_writer_equals_json_dumps(value):
    assert _outcome(fastjson.dumps, value) == _outcome(_reference, value)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records(VALUES))
@example([{"id": 1, "data": {"n": 1}}, {"id": 2, "data": {"m": 1}}])  # nested keys differ
@example([{"id": 1, "data": {"n": 1}}, {"id": 2, "data": {"n": 1, "m": 2}}])
@example([{"id": 1, "data": {"n": 1}}, {"id": 2, "data": {}}])
@example([{"id": 1, "data": {"n": [1]}}, {"id": 2, "data": {"n": 1}}])
@example([{"id": 1, "data": {"n": 1}}, {"id": 2, "data": ["n"]}])
@example([{"s": {"p": "x", "l": 1}, "m": [1, {"a": None}]}] * 3)
def test_lists_of_records_equal_json_dumps(rows):
    """Same keys, nested dicts of scalars whose keys differ or agree, any other value."""
    assert _outcome(fastjson.dumps, {"findings": rows}) == _outcome(_reference, {"findings": rows})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LEAVES, min_size=1, max_size=8), st.integers(1, 1200))
def test_long_runs_of_records_equal_json_dumps(values, n):
    """Runs longer than one templated chunk, one record now and then of another shape."""
    rows = [
        {"id": i, "v": values[i % len(values)], "source": {"path": "p", "line": i}}
        for i in range(n)
    ]
    rows[n // 2] = {"id": "odd one", "source": {}}
    rows[-1]["source"] = {"path": "p", "line": [values[0]]}
    assert _outcome(fastjson.dumps, {"findings": rows}) == _outcome(_reference, {"findings": rows})


def test_unencodable_values_raise_like_json():
    for bad in ({"a": {1, 2}}, [object()], {("t",): 1}, [{"a": 1, "b": b"x"}]):
        assert _outcome(fastjson.dumps, bad)[0] == "TypeError" == _outcome(_reference, bad)[0]
    for bad in ([math.nan], {"x": [{"a": math.inf}]}, {math.nan: 1}):
        assert _outcome(fastjson.dumps, bad)[0] == "ValueError" == _outcome(_reference, bad)[0]
    # records are written column by column: the error is still the first in document order
    first_nan = [{"a": math.nan, "b": [1]}, {"a": 1, "b": [object()]}]
    first_object = [{"a": 1, "b": [object()]}, {"a": math.nan, "b": [1]}]
    assert _outcome(fastjson.dumps, first_nan)[0] == "ValueError"
    assert _outcome(fastjson.dumps, first_object)[0] == "TypeError"


def _old_render(model: dict[str, Any]) -> str:
    """jsonout.render as it was, on json.dumps (the byte-for-byte reference)."""
    data = {k: v for k, v in model.items() if k != "page"}
    try:
        text = _reference(data)
    except ValueError:
        notes: list[str] = []
        data = jsonout._finite(data, "", notes)
        earlier = data.get("notes")
        earlier = earlier if isinstance(earlier, list) else [] if earlier is None else [earlier]
        data["notes"] = earlier + sorted(notes)
        text = _reference(data)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES, VALUES)
def test_render_equals_the_json_dumps_render(summary, findings):
    model = {"summary": summary, "findings": findings, "notes": None, "page": {"x": 1}}
    try:
        expected = _old_render(model)
    except (ValueError, TypeError):
        with pytest.raises((ValueError, TypeError)):
            jsonout.render(model)
        return
    assert jsonout.render(model) == expected
