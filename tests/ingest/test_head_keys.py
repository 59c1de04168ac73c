"""Format detection reads the keys of a head's first object once per head, in C when the
object parses: jsonhead.top_level and jsonwalk.top_level_keys give exactly what their token
walks gave, for any text, cut anywhere, asked about in any order (the one-entry caches)."""

from __future__ import annotations

import json
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from forensics.ingest.parse import jsonhead, jsonwalk

_HEAD_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_WALK_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')


def reference_top_level(text: str) -> dict[str, object]:
    """jsonhead.top_level as it was: a token walk of the whole head."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        stripped = stripped[1:].lstrip()
    if not stripped.startswith("{"):
        return {}
    out: dict[str, object] = {}
    depth = 0
    key: str | None = None
    expect_value = False
    for m in _HEAD_TOKEN.finditer(stripped):
        tok = m.group()
        if tok in "{[":
            if depth == 1 and expect_value and key is not None:
                out[key] = None
                key, expect_value = None, False
            depth += 1
        elif tok in "}]":
            depth -= 1
            if depth == 0:
                break
        elif depth != 1 or tok == ",":
            continue
        elif tok == ":":
            expect_value = key is not None
        elif expect_value and key is not None:
            try:
                out[key] = json.loads(tok)
            except ValueError:
                out[key] = None
            key, expect_value = None, False
        elif tok.startswith('"'):
            try:
                key = json.loads(tok)
            except ValueError:
                key = None
    if key is not None and expect_value:
        out.setdefault(key, None)
    return out


def reference_top_level_keys(text: str, start: int = 0) -> list[str]:
    """jsonwalk.top_level_keys as it was."""
    brace = text.find("{", start)
    if brace < 0:
        return []
    keys: list[str] = []
    depth = 0
    pending: str | None = None
    for m in _WALK_TOKEN.finditer(text, brace):
        tok = m.group()
        if tok in "{[":
            depth += 1
        elif tok in "}]":
            depth -= 1
            if depth == 0:
                break
        elif tok == ":":
            if depth == 1 and pending is not None:
                keys.append(pending)
        elif tok != ",":
            pending = tok[1:-1] if depth == 1 else None
            continue
        pending = None
    return keys


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)  # NaN == NaN


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


@st.composite
def heads(draw: st.DrawFn) -> str:
    """A JSON object (or array of them, or JSONL lines), maybe indented, maybe non-ASCII
    escaped, maybe with a duplicate key or garbage spliced in, maybe cut anywhere."""
    first = draw(OBJECTS)
    text = json.dumps(
        first,
        indent=draw(st.sampled_from([None, 2])),
        ensure_ascii=draw(st.booleans()),
    )
    if draw(st.booleans()) and text.endswith("}") and len(text) > 2:
        text = text[:-1] + ', "a": ' + json.dumps(draw(VALUES)) + "}"  # a duplicate key
    form = draw(st.sampled_from(["object", "array", "jsonl", "lead"]))
    if form == "array":
        text = "[ " + text + ", {}]"
    elif form == "jsonl":
        text = text.replace("\n", " ") + "\n" + json.dumps(draw(OBJECTS)) + "\n"
    elif form == "lead":
        text = draw(st.sampled_from(["\ufeff", "  \n", "data: ", "x"])) + text
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = (
            text[:at] + draw(st.sampled_from(["", "\x01", "}", "[", '"', "NaN", "\\"])) + text[at:]
        )
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=800, deadline=None)
@given(heads(), st.lists(st.sampled_from(["whole", "stripped", "first line", "line two"])))
@example('{"a":} null}', [])  # a key whose value the object's end cuts
@example('{"a": "x}', ["whole"])  # then the same text, longer: the quote now opens a string
@example('{"a": "x}"}', ["first line"])
def test_top_level_equals_the_token_walk(head, asks):
    lines = head.lstrip().split("\n")
    variants = {
        "whole": head,
        "stripped": head.lstrip("\ufeff \t\r\n"),
        "first line": lines[0],
        "line two": lines[1] if len(lines) > 1 else "",
    }
    for ask in [*asks, "whole", "first line", "whole"]:
        text = variants[ask]
        assert _same(jsonhead.top_level(text), reference_top_level(text)), ask


@settings(max_examples=800, deadline=None)
@given(heads(), st.lists(st.integers(0, 3), max_size=4))
def test_top_level_keys_equals_the_token_walk(head, starts):
    for start in [*starts, 0, 1, 0]:
        assert jsonwalk.top_level_keys(head, start) == reference_top_level_keys(head, start)
        other = head[: len(head) // 2]
        assert jsonwalk.top_level_keys(other, start) == reference_top_level_keys(other, start)


def test_a_cut_head_then_a_longer_one_is_read_again():
    """A walk's close depends on what follows it: a quote the cut left unmatched opens a
    string in the longer text, so the keys of the shorter are not reused."""
    short, longer = '{"a": "x}', '{"a": "x}", "b": 1}'
    assert jsonhead.top_level(short) == reference_top_level(short) == {"a": None}
    assert jsonhead.top_level(longer) == reference_top_level(longer) == {"a": "x}", "b": 1}
