"""jsonwalk.positioned_array is `elements` unrolled: same elements, offsets, end and errors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.ingest import jsonwalk


def _by_elements(text: str, pos: int):
    """positioned_array as it was written over `elements`."""
    out = []
    end = jsonwalk.skip_ws(text, jsonwalk._expect(text, pos, "["))
    for start, item, stop in jsonwalk.elements(text, pos):
        out.append((start, item))
        end = stop
    return out, jsonwalk.skip_ws(text, end) + 1


def _outcome(read, text: str):
    try:
        return read(text, 0)
    except jsonwalk.WalkError as exc:
        return ("error", exc.pos, exc.msg)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=list('[]{},:" \n\t1-.eatrufn\\x'), max_size=30))
def test_unrolled_walk_reads_what_elements_read(body):
    for text in (body, "[" + body, "[" + body + "]"):
        assert _outcome(jsonwalk.positioned_array, text) == _outcome(_by_elements, text)
