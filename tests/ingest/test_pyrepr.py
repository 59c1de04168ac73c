"""Python-repr literals read through JSON (ingest.pyrepr) give exactly what ast.literal_eval
gives, or defer to it: never a different value, never a value where literal_eval refuses."""

from __future__ import annotations

import ast
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.ingest.formats import tau_log
from forensics.ingest.parse import embedded, pyrepr

from conftest import DATA

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


def _literal(text: str) -> tuple[bool, object]:
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _same(a: object, b: object) -> bool:
    """Equal with types: 1 is not 1.0 nor True, a tuple is not a list."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))  # type: ignore[arg-type]
    return a == b


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_repr_of_any_value_reads_as_literal_eval_does(value):
    text = repr(value)
    ok, got = pyrepr.loads(text)
    expected_ok, expected = _literal(text)
    assert expected_ok
    if ok:
        assert _same(got, expected)


# Text near the repr dialect: quotes, escapes, names, brackets, numbers, whitespace.
_NEAR = st.text(
    alphabet=list("{}[]()'\":, \t\n\r\\-+.0123456789eExuUabnrtfvN_TrueFalsNonIfiy\x00é😀"),
    max_size=40,
)


@settings(max_examples=3000, deadline=None)
@given(_NEAR)
def test_near_repr_text_never_reads_differently(text):
    ok, got = pyrepr.loads(text)
    if ok:
        expected_ok, expected = _literal(text)
        assert expected_ok, text
        assert _same(got, expected), text


@pytest.mark.parametrize(
    "text",
    [
        r"""{'a': 'x\'y\"z', 'b': "it's", 'c': 'tab\there\\n'}""",
        r"{'e': '\x07\x00\u00e9', 'f': -1.5e-05, 'g': [True, False, None, {}]}",
        "{'h': \"q\\\"uote\", 'i': 'dq \" inside', 'j': 12345678901234567890123}",
    ],
)
def test_escapes_and_quotes_read_as_literal_eval_does(text):
    ok, got = pyrepr.loads(text)
    assert ok
    assert _same(got, ast.literal_eval(text))


@pytest.mark.parametrize(
    "text",
    [
        "{'a': NaN}",  # JSON's constant, not Python's
        "{'a': true}",  # JSON's name, not Python's
        "{'a': inf}",
        r"{'a': '\/'}",  # JSON reads \/ as /, Python keeps the backslash
        r"{'a': '\ud83d\ude00'}",  # JSON joins the pair into one character, Python does not
        r"{'a': '\U0001f600'}",
        "{1: 'a'}",  # not JSON: read by literal_eval
        "{'a': (1, 2)}",
        "{'a': 'unclosed}",
    ],
)
def test_what_json_would_read_differently_is_left_to_literal_eval(text):
    assert pyrepr.loads(text) == (False, None)


def test_nesting_past_the_python_parser_limit_is_still_refused():
    for depth, accepted in ((200, True), (201, False)):
        text = "{'a': " * depth + "1" + "}" * depth
        assert _literal(text)[0] is accepted
        assert embedded.parse_object(text)[1] is None if accepted else not None


def test_parse_object_keeps_the_json_error_for_text_neither_reads():
    value, error = embedded.parse_object("{'a': nope}")
    assert value is None and error is not None and error.startswith("invalid JSON")


# text -> _Braces().advance(text, 0): just past the brace that closes the first one, -1 when the
# line ends first, -2 when a string does not close on the line. Pinned from the character loop
# the matcher replaced (checked against it when the loop was removed).
BRACES = [
    ("{}", 2),
    ('{"a": 1}', 8),
    ('{"a": {"b": 2}} tail', 15),
    ("{'a': '}'}", 10),  # a brace inside a string, either quote
    ('{"a": "}"}', 10),
    ('{"a": "x\\"}"}', 13),  # an escaped quote does not close the string
    ("{'a': \"it's\"}", 13),  # the other quote inside a string
    ('{"a": 1', -1),
    ('{"a": "cut', -2),
    ("{'a': 'cut", -2),
    ("{{}", -1),
    ("{}}", 2),
    ('{"a": "\\\\"}', 11),  # an escaped backslash, then the quote closes
    ("{'a': '\\''}", 11),
    ("{ab: }", 6),
    ('{"a\\"": 1}', 10),
    ('{"\\"', -2),
    ("{\\}", 3),
    ('{"a":{}}{"b":1}', 8),  # the first object only
    ("{'\"': 1}", 8),
    ('{"\'": 1}', 8),
    ('{"a": "b" \'c}\'}', 15),
    ('{"a": "\\', -2),
]


@pytest.mark.parametrize(("text", "end"), BRACES)
def test_brace_matcher_ends_objects_where_their_closing_brace_is(text, end):
    assert embedded._Braces().advance(text, 0) == end


def test_brace_depth_carries_over_to_the_next_line():
    braces = embedded._Braces()
    assert braces.advance('{"a": {', 0) == -1
    assert braces.advance('"x"}}', 0) == 5
    assert embedded._Braces().advance('  {"a": 1}', 2) == 10


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _VALUES, max_size=4), st.booleans(), st.text())
def test_brace_matcher_ends_a_whole_object_at_its_end_and_a_cut_one_nowhere(value, as_json, tail):
    """A dict written by repr or json.dumps ends at its own last brace whatever follows it; a
    line that cuts it anywhere ends nowhere (-1, or -2 inside a string)."""
    text = json.dumps(value) if as_json else repr(value)
    assert embedded._Braces().advance(text + tail, 0) == len(text)
    for cut in range(1, len(text), max(1, len(text) // 200)):  # at most about 200 cuts
        assert embedded._Braces().advance(text[:cut], 0) in (-1, -2)


_NAMES = st.sampled_from(["a", "env", "model", "class", "None", "x_1", "_", "é", "1a"])
_KWARGS = st.lists(st.tuples(_NAMES, _VALUES), max_size=5)


@settings(max_examples=500, deadline=None)
@given(_KWARGS, st.sampled_from([", ", ",", " , "]))
def test_namespace_read_without_compiling_matches_the_ast_reading(kwargs, sep):
    body = sep.join(f"{name}={value!r}" for name, value in kwargs)
    fast = tau_log._namespace_as_dict(body)
    if fast is not None:
        assert _same(fast, tau_log._namespace_by_ast(body)), body


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=list("ab=, '\"[]{}():1.-TrueNonclass\\"), max_size=30))
def test_namespace_near_text_is_never_read_differently(body):
    fast = tau_log._namespace_as_dict(body)
    if fast is not None:
        assert _same(fast, tau_log._namespace_by_ast(body)), body


def test_namespace_of_the_sample_log_is_read_without_compiling():
    line = next(
        x
        for x in (DATA.parent.parent / "sample_logs" / "output2.txt").read_text().splitlines()
        if x.startswith("Namespace(")
    )
    body = tau_log._NAMESPACE.match(line).group(1)  # type: ignore[union-attr]
    fast = tau_log._namespace_as_dict(body)
    assert fast is not None and fast["task_ids"] == [5] and fast["few_shot_displays_path"] is None
    assert _same(fast, tau_log._namespace_by_ast(body))


@pytest.mark.parametrize(
    "body",
    ["a=1, a=2", "class=1", "a={'x': 1, b=2}", "1, a=2", "a=f(1)", "a=1,b=2", "a=-inf"],
)
def test_namespace_bodies_python_reads_otherwise_go_to_the_ast(body):
    assert tau_log._namespace_as_dict(body) is None
