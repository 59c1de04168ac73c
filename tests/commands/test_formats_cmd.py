"""`forensics formats`: every format, its detection, its columns and the rules they allow."""

from __future__ import annotations

from click.testing import CliRunner

from forensics import schema
from forensics.check import engine
from forensics.cli import cli
from forensics.ingest import FORMATS, Format
from forensics.tools import format_catalogue


def test_every_format_is_listed_once_in_detection_order():
    out = CliRunner().invoke(cli, ["formats"])
    assert out.exit_code == 0, out.output
    headers = [line.split(" — ")[0] for line in out.output.splitlines() if " — " in line]
    assert headers == [f.name for f in FORMATS]


def test_declared_columns_are_turn_columns():
    for fmt in FORMATS:
        assert format_catalogue.unknown_columns(fmt) == [], fmt.name


def test_rules_follow_from_declared_columns_as_the_engine_decides():
    rules = engine.load_rules()
    by_id = {r.id: r for r in rules}
    fmt = Format(
        "toy", "toy format", lambda _h: None, lambda _p, _c: 0, columns=frozenset({"content"})
    )
    (entry,) = format_catalogue.entries(rules, [fmt])
    # content-only rules run; a rule that needs finish_reason (or its alternatives) does not.
    assert "unclosed-think" in entry.rules
    assert "max-tokens" not in entry.rules
    missing = dict(entry.not_checked)
    assert missing["max-tokens"] == ["finish_reason", "output_tokens+max_output_tokens"]
    # Same verdict as the engine's on a file that holds exactly these columns.
    present = {"content"} | format_catalogue.ALWAYS_FILLED
    assert entry.rules == sorted(r.id for r in rules if r.checkable(present))
    assert set(entry.rules) | set(missing) == set(by_id)


def test_undeclared_formats_say_so_and_list_no_rules():
    fmt = Format("legacy", "a format without a declaration", lambda _h: None, lambda _p, _c: 0)
    (entry,) = format_catalogue.entries(engine.load_rules(), [fmt])
    assert entry.columns is None and entry.rules == []
    text = format_catalogue.render_text([entry], 5)
    assert "columns: not declared" in text


def test_the_command_shows_a_declared_format_in_full():
    out = CliRunner().invoke(cli, ["formats"]).output
    block = out.split("sharegpt — ", 1)[1].split("\n\n", 1)[0]
    assert "detected by: JSONL lines or a JSON array of objects with `conversations`" in block
    assert "columns: content, model, reasoning, tool_calls, tool_count, tools_attached" in block
    assert "malformed-tool-call" in block.split("rules (", 1)[1].split("\n", 1)[0]
    assert (
        "not checked: max-tokens (needs finish_reason or output_tokens+max_output_tokens)" in block
    )


def test_always_filled_columns_exist():
    assert set(schema.RAW_TURNS.names) >= format_catalogue.ALWAYS_FILLED


def test_declarations_cover_every_column_the_test_data_fills():
    """A format fills no column it does not declare (on every sample the suite keeps)."""
    import polars as pl

    import forensics
    from forensics.config import Settings

    from conftest import DATA, ROOT

    # Fusion off: what each format fills by itself, not what another artifact lent it.
    result = forensics.scan([str(DATA), str(ROOT / "sample_logs")], settings=Settings(fuse=False))
    declared = {f.name: f.columns for f in FORMATS}
    turns = result.turns
    for fmt in sorted(turns["source_format"].unique().to_list()):
        if declared.get(fmt) is None:
            continue  # a format of another branch, not declared yet
        rows = turns.filter(pl.col("source_format") == fmt)
        filled = {c for c in schema.RAW_TURNS.names if rows[c].is_not_null().any()}
        extra = filled - declared[fmt] - format_catalogue.ALWAYS_FILLED - {"task_id"}
        assert extra == set(), (fmt, sorted(extra))


def test_a_metadata_format_fills_no_turns_and_allows_no_rule():
    out = CliRunner().invoke(cli, ["formats"]).output
    block = out.split("run_metadata — ", 1)[1].split("\n\n", 1)[0]
    assert "columns: none (describes a run; fills no turns)" in block and "rules (" not in block
