"""Issue 24 item 5: `forensics query` shows log text, never obeys it. Its table and CSV go
through safe.py as the scan's terminal output does (controls, bidi and line separators shown as
escapes; no line a GitHub Actions workflow command), and its JSON spells the same characters as
JSON escapes, so the values read back exactly. Checked against the oracles of
test_output_safety.py (what a terminal obeys, what the Actions runner parses)."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from test_output_safety import RAW_CONTROL, TERMINAL_BITS, runner_command

from forensics.cli import cli
from forensics.report.render import table

HOSTILE = [
    "\x1b[31mred\x1b[0m",
    "bell\x07",
    "csi\x9b2J",
    "\u202eevil\u2066",
    "x\n::warning::pwned",
    "::error file=a::b",
    "  ##[group]x",
    "a\r\n::add-mask::y",
    "\u2028::notice::z",
]
PROPERTY = settings(derandomize=True, max_examples=200, deadline=None)
VALUES = st.one_of(
    st.lists(st.sampled_from(TERMINAL_BITS), min_size=1, max_size=8).map("".join), st.text()
)


def _clean(output: str) -> None:
    for line in output.split("\n"):
        assert not RAW_CONTROL.search(line), repr(line)
        assert not runner_command(line), repr(line)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "hostile.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table t (k integer, v varchar, l varchar[])")
    for k, v in enumerate(HOSTILE):
        con.execute("insert into t values (?, ?, ?)", [k, v, [v, "ok"]])
    con.close()
    return path


def _query(db, *fmt: str) -> str:
    res = CliRunner().invoke(
        cli, ["query", "--db", str(db), "select v, k, l from t order by k", *fmt]
    )
    assert res.exit_code == 0, res.output
    return res.output


def test_query_table_shows_escapes_and_starts_no_command(db):
    out = _query(db)
    _clean(out)
    assert "\\x1b[31mred\\x1b[0m" in out and "csi\\x9b2J" in out and "\\u202eevil\\u2066" in out
    assert "x⏎::warning::pwned" in out  # a line break in a value: shown, the row one line
    assert "##\\[group]x" in out and "\\::error file=a::b" in out
    assert len(out.splitlines()) == len(HOSTILE) + 3


def test_query_csv_keeps_one_record_per_line_and_starts_no_command(db):
    out = _query(db, "--format", "csv")
    _clean(out)
    rows = list(csv.reader(io.StringIO(out)))
    assert len(rows) == len(HOSTILE) + 1 == len(out.splitlines())
    assert rows[5][0] == "x\\n::warning::pwned"
    assert rows[6][0] == "\\::error file=a::b"  # a record that starts a line: defused


def test_query_json_is_exact_and_starts_no_command(db):
    out = _query(db, "--format", "json")
    _clean(out)
    assert json.loads(out) == [{"v": v, "k": k, "l": [v, "ok"]} for k, v in enumerate(HOSTILE)]


@PROPERTY
@given(st.lists(st.tuples(VALUES, VALUES), min_size=1, max_size=4), VALUES)
def test_every_format_of_any_values_is_clean_and_json_exact(rows, name):
    columns = [name, "b"]
    for render in (table.text, table.csv_text, table.json_text):
        _clean(render(columns, rows))
    # CSV: one record per line; JSON: the very values (lone surrogates included)
    assert len(table.csv_text(columns, rows).split("\n")) == len(rows) + 2
    back = json.loads(table.json_text(columns, rows))
    assert back == [dict(zip(columns, row, strict=True)) for row in rows]
