"""The JSON writer (orjson) is json.dumps(x, indent=2 or compact, ensure_ascii=False,
allow_nan=…, default=…) byte for byte, errors included, on arbitrary JSON-like values: where
orjson alone would differ (small floats, NaN, lone surrogates, non-str keys, big ints,
subclasses, foreign types, deep nesting, cycles) the writer still gives json's bytes. And
jsonout.render keeps its non-finite and surrogate handling on top of it."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import re
import uuid
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from forensics.report.render import jsonout


def _outcome(dump, value: Any, **kw: Any) -> tuple[str, str]:
    try:
        return ("ok", dump(value, **kw))
    except (ValueError, TypeError, RecursionError) as exc:
        return (type(exc).__name__, "")


def _pair(value: Any, *, indent: bool = True, allow_nan: bool = False, default: Any = None):
    """(the writer's outcome, json.dumps's outcome) for these settings."""
    kw: dict[str, Any] = {"ensure_ascii": False, "allow_nan": allow_nan, "default": default}
    kw |= {"indent": 2} if indent else {"separators": (",", ":")}
    mine = _outcome(jsonout.dumps, value, indent=indent, allow_nan=allow_nan, default=default)
    return mine, _outcome(json.dumps, value, **kw)


class Colour(enum.IntEnum):
    RED = 1


class Kind(enum.StrEnum):
    A = "a"


class Plain(enum.Enum):
    X = 1


@dataclasses.dataclass
class Point:
    x: int


TEXT = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), max_size=6
)  # any code point: controls, quotes, backslashes, lone surrogates, astral, U+2028
KEYS = st.one_of(
    TEXT,
    st.sampled_from(["id", "rule", "path", "\x00", '"', "\\", "\ud800", "\u2028", Kind.A]),
)
# floats orjson spells otherwise (1e-10 <= |x| < 1e-4) and their neighbours
SMALL = st.floats(min_value=1e-11, max_value=2e-4) | st.floats(min_value=-2e-4, max_value=-1e-11)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    SMALL,
    TEXT,
    st.sampled_from(
        [Colour.RED, Kind.A, 0.1, -0.0, 1e300, 1e16, 1e-5, 1e-7, 5e-324, "\x00", "\x7f", "\u2028"]
    ),
    st.sampled_from(["\udcff", "run-\ud800.log", 2**64, -(2**63) - 1, 2**64 - 1]),
)


def _records(inner: st.SearchStrategy) -> st.SearchStrategy:
    """Lists of dicts that often share keys: the shape of a scan's findings."""
    record = st.fixed_dictionaries(
        {"id": LEAVES, "source": st.fixed_dictionaries({"path": LEAVES, "line": LEAVES})},
        optional={"extra": inner, "evidence": LEAVES},
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
PROPERTY = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(VALUES)
@example({"a": [1e-5, {"b": -2.5e-7}], "c": "x 1e-7", "d": ["0.00001", 1e-4, 1e-10]})
@example([[1e-6]])
@example({"s": "run-\udcff.log", "n": 1})
@example({"x": [1, math.nan]})
def test_writer_equals_json_dumps(value):
    mine, reference = _pair(value)
    assert mine == reference


@PROPERTY
@given(VALUES, st.booleans(), st.booleans())
def test_writer_equals_json_dumps_in_every_mode(value, indent, allow_nan):
    mine, reference = _pair(value, indent=indent, allow_nan=allow_nan, default=str)
    assert mine == reference


def test_foreign_types_are_json_s_to_write():
    """orjson writes these (or writes them otherwise); json raises or calls default."""
    day = datetime.date(2024, 1, 2)
    foreign = [Plain.X, uuid.UUID(int=5), day, datetime.datetime(2024, 1, 2, 3), Point(1)]
    for value in foreign:
        for doc in ([value], {"k": [1, value]}):
            mine, reference = _pair(doc)
            assert mine == reference and mine[0] == "TypeError"
            mine, reference = _pair(doc, default=str)
            assert mine == reference and mine[0] == "ok"
    assert jsonout.dumps([day], default=str) == '[\n  "2024-01-02"\n]'
    # a set and bytes, which neither writes: json's error
    for bad in ({"a": {1, 2}}, [object()], {("t",): 1}, [{"a": 1, "b": b"x"}]):
        assert _pair(bad)[0][0] == "TypeError" == _pair(bad)[1][0]


def test_non_finite_numbers_raise_like_json_or_are_written_like_json():
    for bad in ([math.nan], {"x": [{"a": math.inf}]}, {math.nan: 1}, [[[-math.inf]]]):
        mine, reference = _pair(bad)
        assert mine[0] == "ValueError" == reference[0]
        assert _pair(bad, allow_nan=True)[0] == _pair(bad, allow_nan=True)[1]
    # the error is json's: the first offending value in document order
    first_nan = [{"a": math.nan, "b": [1]}, {"a": 1, "b": [object()]}]
    first_object = [{"a": 1, "b": [object()]}, {"a": math.nan, "b": [1]}]
    assert _outcome(jsonout.dumps, first_nan)[0] == "ValueError"
    assert _outcome(jsonout.dumps, first_object)[0] == "TypeError"


def test_what_orjson_refuses_is_written_by_json():
    """Lone surrogates, keys that are not str, ints past 64 bits, deep nesting and cycles:
    orjson raises on each; the writer gives json's bytes or json's error."""
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    cycle: list[Any] = []
    cycle.append(cycle)
    for doc in (
        {"path": "run-\udcff.log"},
        {"\ud800": 1},
        {1: "a", None: 2, 1.5: 3, False: 4},
        {Kind.A: 1},
        [2**64, -(2**63) - 1],
        deep,
        cycle,
    ):
        for indent in (True, False):
            mine, reference = _pair(doc, indent=indent)
            assert mine == reference


def test_small_floats_in_strings_and_keys_stay_as_written():
    """The rewrite of orjson's small floats touches number tokens only."""
    doc = {"0.00001": "1e-7", "k": ["a: 1e-7", "1e-7,", " 1e-7"], "v": [1e-7, 1e-5], "w": 1e-6}
    assert jsonout.dumps(doc) == json.dumps(doc, indent=2, ensure_ascii=False)
    assert '"v": [\n    1e-07,\n    1e-05\n  ]' in jsonout.dumps(doc)


def _old_render(model: dict[str, Any]) -> str:
    """jsonout.render as it was, on json.dumps (the byte-for-byte reference)."""
    data = {k: v for k, v in model.items() if k != "page"}
    reference = lambda d: json.dumps(d, indent=2, ensure_ascii=False, allow_nan=False)  # noqa: E731
    try:
        text = reference(data)
    except ValueError:
        notes: list[str] = []
        data = jsonout._finite(data, "", notes)
        earlier = data.get("notes")
        earlier = earlier if isinstance(earlier, list) else [] if earlier is None else [earlier]
        data["notes"] = earlier + sorted(notes)
        text = reference(data)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES, VALUES)
@example({"mean": math.nan, "file": "run-\udcff.log"}, [{"rate": 3e-6, "x": math.inf}])
def test_render_equals_the_json_dumps_render(summary, findings):
    model = {"summary": summary, "findings": findings, "notes": None, "page": {"x": 1}}
    try:
        expected = _old_render(model)
    except (ValueError, TypeError):
        with pytest.raises((ValueError, TypeError)):
            jsonout.render(model)
        return
    assert jsonout.render(model) == expected


def test_render_escapes_a_lone_surrogate_beside_a_non_finite_number():
    out = jsonout.render({"files": [{"path": "run-\udcff.log", "mean": math.nan}], "notes": []})
    out.encode("utf-8")  # would raise on a raw surrogate
    doc = json.loads(out)
    assert doc["files"][0] == {"path": "run-\udcff.log", "mean": None}
    assert doc["notes"] == ["files[0].mean: NaN written as null"]
