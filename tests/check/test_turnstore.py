"""A scan streams its turns to a store (check.turnstore) batch by batch (issue 23): what it finds
must not depend on where the batches fall, and what it writes must not read every turn back."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from forensics import pipeline
from forensics.check import turnstore
from forensics.cli import cli
from forensics.ingest import records
from forensics.report.render import jsonout

from conftest import DATA, SAMPLES

# Several formats and files, artifacts of the same episodes (fusion), captures and rejects.
MIXED = [str(SAMPLES), str(DATA / "capture"), str(DATA / "tau2")]


def _in_memory(paths: list[str]) -> pipeline.Scan:
    """The scan as the sharded path runs it: every turn read into one frame, then checked."""
    settings = pipeline.load_settings(False)
    rules = pipeline.load_rules(None, settings)
    expansion = pipeline.expand(paths, settings)
    return pipeline.diagnose(pipeline.check(pipeline.read(expansion, settings), rules), rules)


@pytest.fixture(scope="module")
def whole() -> pipeline.Scan:
    return _in_memory(MIXED)


def test_the_stored_scan_is_the_scan_in_memory_whatever_the_batches(whole, monkeypatch):
    # Batches of a single episode or so: many flushes, and fusion completes stored episodes.
    monkeypatch.setattr(records, "BATCH_ROWS", 3)
    monkeypatch.setattr(turnstore, "BATCH_ROWS", 5)
    flushes: list[int] = []
    flush = turnstore.TurnStore.flush

    def counted(self):  # type: ignore[no-untyped-def]
        flushes.append(len(self._pending))
        flush(self)

    monkeypatch.setattr(turnstore.TurnStore, "flush", counted)
    stored = pipeline.scan(MIXED, config=False)
    assert sum(1 for n in flushes if n) > 30
    assert isinstance(stored.turn_source, turnstore.TurnStore)
    assert stored.turn_source.count() == whole.turns.height > 300
    assert stored.turns.equals(whole.turns)
    assert stored.findings.equals(whole.findings)
    assert stored.rejects.equals(whole.rejects)
    assert stored.trajectories.equals(whole.trajectories)
    assert [f.note for f in stored.files] == [f.note for f in whole.files]
    assert any(f.note and "counted once there" in f.note for f in stored.files)  # fused
    assert jsonout.render(stored.report()) == jsonout.render(whole.report())


def test_sql_reads_the_stored_turns_without_reading_them_whole(monkeypatch):
    result = pipeline.scan(str(SAMPLES / "output2.txt"), config=False)

    def whole_table(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the turns were read whole")

    monkeypatch.setattr(turnstore.TurnStore, "frame", whole_table)
    assert result.sql("select count(*) from turns").fetchall() == [(82,)]
    got = result.sql("select rule, count(*) from findings group by rule order by rule").fetchall()
    assert got[0] == ("no-action-failure", 3)
    assert result.turn_count == 82
    assert result.turn_paths() == [str(SAMPLES / "output2.txt")]


@pytest.mark.parametrize(
    "outputs",
    [
        ["--json", "{d}/r.json", "--md", "{d}/r.md", "--sarif", "{d}/r.sarif"],
        ["--junit", "{d}/r.xml", "--db", "{d}/r.duckdb", "--parquet", "{d}/pq"],
    ],
)
def test_the_outputs_but_the_page_never_read_every_turn(outputs, tmp_path: Path, monkeypatch):
    def whole_table(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the turns were read whole")

    monkeypatch.setattr(turnstore.TurnStore, "frame", whole_table)
    args = [a.format(d=tmp_path) for a in outputs]
    done = CliRunner().invoke(cli, ["scan", *MIXED, "--no-report", "--no-config", *args])
    assert done.exit_code == 1, done.output  # findings: the gate fails, as on any scan of them
    assert done.exception is None or isinstance(done.exception, SystemExit)
    for arg in args[1::2]:
        assert Path(arg).exists()


def test_db_and_parquet_copy_the_stored_turns_in_scan_order(tmp_path: Path):
    import duckdb

    result = pipeline.scan(MIXED, config=False)
    from forensics import store

    store.write_duckdb(result, tmp_path / "r.duckdb")
    con = duckdb.connect(str(tmp_path / "r.duckdb"), read_only=True)
    written = con.sql("select * from turns").pl()
    assert written.equals(result.turns.select(written.columns))
    parts = store.write_parquet(result, tmp_path / "pq", partition=True)
    turns = [p for p in parts if "turns" in p.parts]
    assert len(turns) == result.turns["run_id"].n_unique() > 1
    read = pl.concat([pl.read_parquet(p) for p in turns])
    assert read.sort("turn_key").equals(result.turns.sort("turn_key"))


def test_a_query_out_of_memory_runs_again_with_more(whole, monkeypatch):
    # 8 MB: the rules' windows and the causes' facts over these turns need more at once.
    monkeypatch.setattr(turnstore, "MEMORY_LIMIT_MB", 8)
    tight = pipeline.scan(MIXED, config=False)
    assert isinstance(tight.turn_source, turnstore.TurnStore)
    assert tight.turn_source._limit_mb > 8  # it ran out, and got more
    assert tight.findings.equals(whole.findings)
    assert jsonout.render(tight.report()) == jsonout.render(whole.report())
