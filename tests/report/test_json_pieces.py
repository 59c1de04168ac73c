"""`--json` is written a piece at a time (jsonout.pieces): the file must be render's text, byte
for byte, whatever the findings hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.report.render import jsonout

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-05, 2.5e-07, -3e-06, 0.0001]),
    st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(["\ud800", "\n", '"', "\\"])),
)
_FINDING = st.dictionaries(
    st.sampled_from(["id", "rule", "message", "evidence", "turn_index", "details"]),
    _SCALARS | st.lists(_SCALARS, max_size=3) | st.dictionaries(st.text(max_size=4), _SCALARS),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(
    findings=st.lists(_FINDING, max_size=12),
    before=st.dictionaries(st.sampled_from(["summary", "causes"]), _SCALARS, max_size=2),
    after=st.dictionaries(st.sampled_from(["trajectories", "rejects"]), _SCALARS, max_size=2),
)
def test_the_file_is_render_s_text(
    findings: list[dict[str, Any]],
    before: dict[str, Any],
    after: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    model = {"schema_version": 4, **before, "findings": findings, **after, "page": {"x": 1}}
    # pieces of 3: several from a few findings
    out = jsonout.write(tmp_path_factory.mktemp("json") / "result.json", model, piece=3)
    assert out.read_text(encoding="utf-8") == jsonout.render(model)


def test_a_large_result_is_written_in_pieces(tmp_path: Path) -> None:
    findings = [{"id": f"f{i}", "message": "cut\nshort", "n": i / 3} for i in range(5000)]
    model = {"summary": {"turns": 1}, "findings": findings, "rules": []}
    parts = list(jsonout.pieces(model))
    assert len(parts) == 2 + -(-5000 // jsonout.PIECE)
    assert "".join(parts) == jsonout.render(model)
    assert jsonout.write(tmp_path / "r.json", model).read_text() == jsonout.render(model)
