"""The three promises, as properties over mutated inputs of every format.

A scan never aborts (no traceback, exit 0 or 1), nothing is lost silently (every line of a line
format and every element of a results array is parsed or rejected), and no secret reaches an
output. The suite runs a small fixed budget with a fixed seed (two mutated inputs per format,
and the empty file of every format in one scan, so every format is under the properties on
every run); the deep run is benchmarks/fuzz.py, the same properties for as many inputs as you
like.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import forensics
from forensics.ingest.parse import files

from conftest import run_cli
from hostile import (
    ARRAY_FORMATS,
    BUG,
    CASSETTE_FORMATS,
    LINE_FORMATS,
    SECRETS,
    SEEDS,
    cassette_lines,
    mutation,
    planted,
)

PROPERTY = settings(
    # Each input is a scan (about 0.5 s): 2 per format keeps the whole suite in its 5 minutes.
    max_examples=2,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


def unaccounted(path: Path, fmt: str, result: forensics.ScanResult) -> list[str]:
    """Records of the file that are neither parsed nor rejected."""
    rejects = result.rejects
    if rejects.filter(rejects["source_line"].is_null()).height and result.turns.is_empty():
        return []  # the file as a whole is a reject: every record in it is accounted for
    if fmt in LINE_FORMATS:
        lines = {n for n, text in files.iter_lines(path) if text is None or text.strip()}
        seen = set(result.turns["source_line"].drop_nulls())
        seen |= set(result.trajectories["source_line"].drop_nulls())
        seen |= set(rejects["source_line"].drop_nulls())
        return [f"line {n}" for n in sorted(lines - seen)]
    if fmt in CASSETTE_FORMATS and result.files[0].format == "http_cassette":
        seen = set(result.turns["source_line"].drop_nulls())
        seen |= set(rejects["source_line"].drop_nulls())
        return [f"interaction at line {n}" for n in sorted(cassette_lines(path) - seen)]
    if fmt in ARRAY_FORMATS:
        if result.files[0].format != "tau_bench_results":
            # Read as something else (a mutated key hid the format): the file must still
            # come out as rows or rejects, never as nothing.
            return [] if result.trajectories.height or rejects.height else ["nothing read"]
        try:
            doc = json.loads(path.read_bytes())
        except (ValueError, UnicodeDecodeError, RecursionError):
            return []  # not one whole array: the reader's own cut is what is checked
        if not isinstance(doc, list):
            return []
        rejected = set(rejects["json_path"].drop_nulls())
        elements = [f"$[{i}]" for i in range(len(doc))]
        parsed = result.trajectories.height
        missing = [e for e in elements if e not in rejected]
        if len(missing) != parsed:
            return [f"{len(doc)} elements, {parsed} parsed, {len(doc) - len(missing)} rejected"]
    return []


def written(tables: Path, report: dict) -> SimpleNamespace:
    """The scan's tables as `--parquet` wrote them (one file per table, or per run under a
    folder), with the files of its --json: what `unaccounted` reads, without a second scan."""

    def table(name: str) -> pl.DataFrame:
        single = tables / f"{name}.parquet"
        return pl.read_parquet(single if single.is_file() else tables / name / "*" / "*.parquet")

    files = [SimpleNamespace(format=f["format"]) for f in report["files"]]
    return SimpleNamespace(
        turns=table("turns"), trajectories=table("trajectories"), rejects=table("rejects"),
        files=files,
    )  # fmt: skip


@pytest.mark.parametrize("fmt", sorted(SEEDS))
@PROPERTY
@given(data=st.data())
def test_mutated_input_scans_without_abort_or_silent_loss(fmt, data, tmp_path_factory):
    raw = SEEDS[fmt].read_bytes()
    mutated = data.draw(mutation(raw), label="input")
    # Hypothesis draws the simplest input first, the empty file, for every format: those are
    # scanned together, once (test_an_empty_file_of_every_format_is_a_reject).
    assume(mutated)
    work = tmp_path_factory.mktemp(fmt)
    path = work / SEEDS[fmt].name
    path.write_bytes(mutated)
    out = work / "out"
    code, stdout, stderr = run_cli(
        "scan", str(path), "-o", str(out), "--json", str(work / "r.json"),
        "--md", str(work / "r.md"), "--sarif", str(work / "r.sarif"),
        "--junit", str(work / "r.xml"), "--github", "--parquet", str(work / "tables"),
    )  # fmt: skip
    assert code in (0, 1), (code, stderr)
    assert "Traceback" not in stdout + stderr and "internal error" not in stderr
    report = json.loads((work / "r.json").read_text())  # every output was written and is whole
    assert (out / "report.html").stat().st_size > 0
    # Nothing lost, in the tables this scan wrote (the same pipeline as forensics.scan).
    assert unaccounted(path, fmt, written(work / "tables", report)) == []
    # A hostile input is the input's fault: no reject blames a bug in forensics.
    assert not [r["reason"] for r in report["rejects"] if BUG in r["reason"]]


def test_an_empty_file_of_every_format_is_a_reject(tmp_path):
    """An empty file named as each format's seed, all in one scan through the command line into
    every output: the scan ends normally, writes every output whole, and each file is a reject
    of its own."""
    inputs = tmp_path / "in"
    for fmt, seed in SEEDS.items():
        (inputs / fmt).mkdir(parents=True)
        (inputs / fmt / seed.name).write_bytes(b"")
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        "scan", str(inputs), "-o", str(out / "report"), "--json", str(out / "r.json"),
        "--md", str(out / "r.md"), "--sarif", str(out / "r.sarif"), "--junit", str(out / "r.xml"),
        "--github", "--parquet", str(out / "tables"),
    )  # fmt: skip
    assert code in (0, 1), (code, stderr)
    assert "Traceback" not in stdout + stderr and "internal error" not in stderr
    report = json.loads((out / "r.json").read_text())
    assert (out / "report" / "report.html").stat().st_size > 0
    rejects = written(out / "tables", report).rejects
    whole = rejects.filter(rejects["source_line"].is_null())["source_path"].to_list()
    assert sorted(whole) == sorted(str(inputs / fmt / seed.name) for fmt, seed in SEEDS.items())
    assert rejects.height == len(SEEDS)


def test_every_secret_shape_in_every_field_of_every_format_reaches_no_output(tmp_path):
    """Each seed with a secret appended to every string it holds, two secrets in file names,
    scanned into every output there is; none of the secrets' bodies may be found anywhere."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    for fmt, seed in SEEDS.items():
        (inputs / f"{fmt}-{seed.name}").write_bytes(planted(seed.read_bytes()))
    for shape in ("aws_key_id", "github"):
        (inputs / f"run-{SECRETS[shape][0]}.json").write_bytes(
            planted(SEEDS["tau_bench_results"].read_bytes())
        )
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        "scan", str(inputs), "-o", str(out / "report"), "--json", str(out / "r.json"),
        "--md", str(out / "r.md"), "--sarif", str(out / "r.sarif"), "--junit", str(out / "r.xml"),
        "--github", "--db", str(out / "r.duckdb"), "--parquet", str(out / "parquet"),
        "--write-baseline", str(out / "baseline.json"), "--explain-formats",
    )  # fmt: skip
    assert code in (0, 1), stderr
    texts = {"stdout": stdout, "stderr": stderr}
    for f in out.rglob("*"):
        if f.suffix in (".json", ".md", ".sarif", ".xml", ".html"):
            texts[str(f)] = f.read_text()
        elif f.suffix == ".parquet":
            texts[str(f)] = str(pq.read_table(f).to_pylist())
    con = duckdb.connect(str(out / "r.duckdb"), read_only=True)
    for (table,) in con.sql("select table_name from information_schema.tables").fetchall():
        texts[f"duckdb:{table}"] = str(con.sql(f'select * from "{table}"').fetchall())
    con.close()
    assert any("REDACTED-" in t for t in texts.values())
    leaks = [
        (shape, where)
        for shape, (_, body) in SECRETS.items()
        for where, text in texts.items()
        if body in text
    ]
    assert leaks == []
    # The two file names keep apart: each secret masks to its own hash.
    runs = json.loads((out / "r.json").read_text())["files"]
    named = {
        f["path"].rsplit("/", 1)[-1] for f in runs if f["path"].rsplit("/", 1)[-1][:4] == "run-"
    }
    assert len(named) == 2
