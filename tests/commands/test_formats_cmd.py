"""`forensics formats`: every format, its detection, its columns and the rules they allow."""

from __future__ import annotations

from click.testing import CliRunner

from forensics import schema
from forensics.check import engine
from forensics.cli import cli
from forensics.ingest import FORMATS, FormatSpec
from forensics.tools import format_catalogue


def toy(columns: frozenset[str]) -> FormatSpec:
    return FormatSpec(
        name="toy",
        description="toy format",
        detection="never",
        sniff=lambda _h: None,
        ingest=lambda _p, _c: 0,
        priority=950,
        columns=columns,
        benchmark=False,
        artifact="toy files",
        rerun=None,
        seeds={},
    )


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
    (entry,) = format_catalogue.entries(rules, [toy(frozenset({"content"}))])
    # content-only rules run; a rule that needs finish_reason (or its alternatives) does not.
    assert "unclosed-think" in entry.rules
    assert "max-tokens" not in entry.rules
    missing = dict(entry.not_checked)
    assert missing["max-tokens"] == ["finish_reason", "output_tokens+max_output_tokens"]
    # Same verdict as the engine's on a file that holds exactly these columns.
    present = {"content"} | format_catalogue.ALWAYS_FILLED
    assert entry.rules == sorted(r.id for r in rules if r.checkable(present))
    assert set(entry.rules) | set(missing) == set(by_id)


def test_every_format_is_described_in_full():
    """No format is left "not described" or "not declared": each block names its detection,
    the plan's noun and its columns."""
    out = CliRunner().invoke(cli, ["formats"]).output
    assert "not described" not in out and "not declared" not in out
    blocks = [b for b in out.split("\n\n") if b.strip()]
    assert len(blocks) == len(FORMATS)
    for fmt, block in zip(FORMATS, blocks, strict=True):
        assert block.startswith(f"{fmt.name} — {fmt.description}")
        assert f"  detected by: {fmt.detection}" in block
        assert f"  validation plan: scan the new {fmt.artifact}" in block
        assert "  columns: " in block


def test_atif_says_it_carries_no_finish_reason():
    """Harbor's ATIF keeps no finish reason: rules that need one are listed as not checked, and
    the finish reason an agent may write into a step's extra is shown apart."""
    out = CliRunner().invoke(cli, ["formats"]).output
    block = out.split("harbor_atif — ", 1)[1].split("\n\n", 1)[0]
    columns = block.split("  columns: ", 1)[1].split("\n", 1)[0].split(", ")
    assert "finish_reason" not in columns and "finish_reason_raw" not in columns
    assert "also, when a writer adds them: finish_reason, finish_reason_raw" in block
    assert "not checked: max-tokens (needs finish_reason or max_output_tokens)" in block


def test_a_harness_rerun_is_shown_with_its_separator():
    out = CliRunner().invoke(cli, ["formats"]).output
    block = out.split("inspect_json — ", 1)[1].split("\n\n", 1)[0]
    assert (
        "validation plan: scan the new log; rerun with inspect eval: --sample-id <id>,<id>" in block
    )


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
    declared = {f.name: f.columns | f.extra_columns for f in FORMATS}
    turns = result.turns
    for fmt in sorted(turns["source_format"].unique().to_list()):
        rows = turns.filter(pl.col("source_format") == fmt)
        filled = {c for c in schema.RAW_TURNS.names if rows[c].is_not_null().any()}
        extra = filled - declared[fmt] - format_catalogue.ALWAYS_FILLED - {"task_id"}
        assert extra == set(), (fmt, sorted(extra))


def test_a_metadata_format_fills_no_turns_and_allows_no_rule():
    out = CliRunner().invoke(cli, ["formats"]).output
    block = out.split("run_metadata — ", 1)[1].split("\n\n", 1)[0]
    assert "columns: none (describes a run; fills no turns)" in block and "rules (" not in block
