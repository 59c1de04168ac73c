"""Format detection reads the keys of a head's first object once per head, in C when the
object parses: jsonhead.top_level and jsonwalk.top_level_keys on whole objects, on heads cut
anywhere or with garbage in them, asked about in any order (the one-entry caches).

The expected values of the examples are what the token walks these functions replaced gave
(checked against them when the walks were removed): pinned here, not recomputed."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.ingest.parse import jsonhead, jsonwalk

# text -> top_level(text): scalars kept, containers and values the head cuts are None.
TOP_LEVEL: list[tuple[str, dict[str, object]]] = [
    ('{"a": 1, "b": "x", "c": null, "d": true, "e": 1.5}',
     {"a": 1, "b": "x", "c": None, "d": True, "e": 1.5}),
    ('{"a": {"x": 1}, "b": [1, 2], "c": 3}', {"a": None, "b": None, "c": 3}),
    ('[ {"task_id": 7, "a": "x"}, {}]', {"task_id": 7, "a": "x"}),  # an array's first element
    ('{\n  "a": 1,\n  "b": {\n    "c": 2\n  }\n}', {"a": 1, "b": None}),
    ('\ufeff{"a": 1}', {"a": 1}),
    ('  \n{"a": 1}', {"a": 1}),
    ('data: {"a": 1}', {}),  # not a JSON head
    ('x{"a": 1}', {}),
    ('{"a": 1, "a": 2}', {"a": 2}),  # a duplicate key: the last value
    ('{"a": 1}\n{"b": 2}\n', {"a": 1}),  # JSONL: the first line
    ('{"a": 1, "b": {"c": [1, 2', {"a": 1, "b": None}),  # cut inside a container
    ('{"a": "x}', {"a": None}),  # cut inside a string: its quote opens it to the end
    ('{"a": "x}", "b": 1}', {"a": "x}", "b": 1}),  # the same text, longer
    ('{"a":} null}', {"a": None}),  # a key whose value the object's end cuts
    ('{"q\\"": 1, "\\\\": 2, "\\u00e9": "\\u00e9"}', {'q"': 1, "\\": 2, "é": "é"}),
    ('{"é": "é", "a": "\\n"}', {"é": "é", "a": "\n"}),
    ('{"a": 1, "b": tru', {"a": 1, "b": None}),  # cut inside a literal
    ('{"a": 1, "b"', {"a": 1}),  # cut after a key
    ('{"a": [1, {"b": 2}], "c": {"d": {"e": 3}}, "f": 4}', {"a": None, "c": None, "f": 4}),
    ('{"a": 1\x01, "b": 2}', {"a": None, "b": 2}),  # garbage after a value
    ('{"a": "]", "b": "}", "c": 3}', {"a": "]", "b": "}", "c": 3}),  # brackets inside strings
    ("[1, 2]", {}),
    ('"just a string"', {}),
    ("", {}),
    ("{", {}),
    ('{"a": 1, "b": 2}garbage', {"a": 1, "b": 2}),  # trailing junk after a whole object
    ('{"a": 12345678901234567890}', {"a": 12345678901234567890}),
]  # fmt: skip
# NaN and an overflowing number read as Python's json reads them.
NON_FINITE = [('{"a": NaN, "b": 2}', "a", 2), ('{"id": 1e400, "b": 2}', "id", 2)]

# (text, start) -> top_level_keys(text, start): the keys as written (escapes not decoded) of the
# object that starts at or after start.
KEYS: list[tuple[str, int, list[str]]] = [
    ('{"a": 1, "b": {"c": 2}, "d": [3]}', 0, ["a", "b", "d"]),
    ('{"a": 1, "b": {"c": 2}, "d": [3]}', 1, ["c"]),  # the next object after start
    ('x = {"a": 1}', 0, ["a"]),
    ('data: {"a": 1}', 0, ["a"]),
    ('[{"a": 1}, {"b": 2}]', 0, ["a"]),
    ('[{"a": 1}, {"b": 2}]', 2, ["b"]),
    ('{"a": 1}\n{"b": 2}', 3, ["b"]),
    ('{"a": 1, "b": {"c": [1, 2', 0, ["a", "b"]),
    ('{"a": "x}", "b": 1}', 0, ["a", "b"]),
    ('{"a": "x}', 0, ["a"]),
    ('{"a": 1, "a": 2}', 0, ["a", "a"]),
    ('{"q\\"": 1, "b": 2}', 0, ['q\\"', "b"]),
    ('{"a": [1, {"k": 2}], "b": 2}', 0, ["a", "b"]),
    ('{"a": {"b": {"c": 1}}, "d": 2}garbage', 0, ["a", "d"]),
    ('{"a": "]", "b": "}", "c": 3}', 0, ["a", "b", "c"]),
    ('{"a": NaN, "b": 2}', 0, ["a", "b"]),
    ('{"a": 1, "b"', 0, ["a"]),
    ("no object here", 0, []),
    ("", 0, []),
]


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)  # NaN == NaN


@pytest.mark.parametrize(("text", "expected"), TOP_LEVEL, ids=[repr(t)[:40] for t, _ in TOP_LEVEL])
def test_top_level(text, expected):
    assert _same(jsonhead.top_level(text), expected)
    assert list(jsonhead.top_level(text)) == list(expected)  # keys in the order written


@pytest.mark.parametrize(("text", "key", "b"), NON_FINITE)
def test_top_level_non_finite_numbers(text, key, b):
    got = jsonhead.top_level(text)
    assert list(got) == [key, "b"] and got["b"] == b
    assert math.isnan(got[key]) if "NaN" in text else got[key] == math.inf


@pytest.mark.parametrize(
    ("text", "start", "expected"), KEYS, ids=[repr(t)[:40] for t, _, _ in KEYS]
)
def test_top_level_keys(text, start, expected):
    assert jsonwalk.top_level_keys(text, start) == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(len(TOP_LEVEL))), max_size=12))
def test_top_level_asked_in_any_order(order):
    """The one-entry cache never answers for another text: a head then a longer or shorter
    one, the same one twice, in any order."""
    for i in [*order, *order[::-1]]:
        text, expected = TOP_LEVEL[i]
        assert _same(jsonhead.top_level(text), expected), text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(len(KEYS))), max_size=12))
def test_top_level_keys_asked_in_any_order(order):
    for i in [*order, *order[::-1]]:
        text, start, expected = KEYS[i]
        assert jsonwalk.top_level_keys(text, start) == expected, (text, start)


def test_a_cut_head_then_a_longer_one_is_read_again():
    """A walk's close depends on what follows it: a quote the cut left unmatched opens a
    string in the longer text, so the keys of the shorter are not reused."""
    short, longer = '{"a": "x}', '{"a": "x}", "b": 1}'
    assert jsonhead.top_level(short) == {"a": None}
    assert jsonhead.top_level(longer) == {"a": "x}", "b": 1}
    assert jsonhead.top_level(short) == {"a": None}


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4),
    st.sampled_from(["\\", '"', "\n", "{", "}", "[", "]", ":", ",", "\u00e9"]),
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", 'q"', "\\", "é", "id"]), inner, max_size=3)
    ),
    max_leaves=12,
)
OBJECTS = st.dictionaries(st.sampled_from(["a", "b", 'q"', "\\", "é", "task_id"]), VALUES)


@settings(max_examples=150, deadline=None)
@given(
    OBJECTS,
    st.sampled_from([None, 2]),
    st.booleans(),
    st.sampled_from(["object", "array", "jsonl", "lead"]),
)
def test_whole_objects_read_as_json_reads_them(first, indent, ascii_only, form):
    """On a whole object (alone, first of an array or of JSONL lines, after a BOM or blank
    lines, indented or not, escaped or not): every key in order, scalars as json.loads reads
    them, containers None; and the keys as written."""
    text = json.dumps(first, indent=indent, ensure_ascii=ascii_only)
    if form == "array":
        text = "[ " + text + ", {}]"
    elif form == "jsonl":
        text = text.replace("\n", " ") + '\n{"other": 1}\n'
    elif form == "lead":
        text = "\ufeff  \n" + text
    scalars = {k: None if isinstance(v, dict | list) else v for k, v in first.items()}
    assert _same(jsonhead.top_level(text), scalars)
    written = [json.dumps(k, ensure_ascii=ascii_only)[1:-1] for k in first]
    assert jsonwalk.top_level_keys(text, 0) == written
