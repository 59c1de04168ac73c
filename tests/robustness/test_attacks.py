"""The attack classes of the issue-24 audit (attacks.py) as properties over every format.

One scan per class: each format's seed attacked once (hypothesis, fixed seed), all in one
folder, through the command line into every output. The scan ends normally (exit 0 or 1, no
traceback), every record of every file is parsed or rejected, a bomb is a reject that names
its budget, and no secret the attack planted reaches any output, whole or 12 characters of
it. benchmarks/fuzz.py draws as many inputs of each class as you like, and times them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from attacks import BOMB_BUDGET_MB, CLASSES, Attack, applicable, file_name, leak_windows
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from hostile import SEEDS
from test_robustness import unaccounted

PROPERTY = settings(
    # One scan of every format per class (a few seconds each): the fuzzer draws the rest.
    max_examples=1,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],  # a failure is reported as drawn, not shrunk
)


def _leaked(windows: set[str], texts: dict[str, str]) -> list[str]:
    return [where for where, text in texts.items() if any(w in text for w in windows)]


def _texts(out: Path, stdout: str, stderr: str) -> dict[str, str]:
    texts = {"stdout": stdout, "stderr": stderr}
    for f in out.rglob("*"):
        if f.suffix in (".json", ".md", ".sarif", ".xml", ".html"):
            texts[str(f)] = f.read_text(errors="replace")
        elif f.suffix == ".parquet":
            texts[str(f)] = str(pq.read_table(f).to_pylist())
    con = duckdb.connect(str(out / "r.duckdb"), read_only=True)
    for (table,) in con.sql("select table_name from information_schema.tables").fetchall():
        texts[f"duckdb:{table}"] = str(con.sql(f'select * from "{table}"').fetchall())
    con.close()
    return texts


def _of_file(tables: Path, report: dict, path: Path) -> SimpleNamespace:
    """The tables of one input of the scan (rows of a container's members included)."""

    def table(name: str) -> pl.DataFrame:
        single = tables / f"{name}.parquet"
        frame = pl.read_parquet(single if single.is_file() else tables / name / "*" / "*.parquet")
        mine = (pl.col("source_path") == str(path)) | pl.col("source_path").str.starts_with(
            f"{path}!"
        )
        return frame.filter(mine)

    fmt = next((f["format"] for f in report["files"] if f["path"] == str(path)), None)
    return SimpleNamespace(
        turns=table("turns"), trajectories=table("trajectories"), rejects=table("rejects"),
        files=[SimpleNamespace(format=fmt)],
    )  # fmt: skip


@pytest.mark.parametrize(
    "kind",
    sorted(CLASSES),
)
@PROPERTY
@given(data=st.data())
def test_every_format_under_each_attack_class(kind, data, tmp_path_factory):
    work = tmp_path_factory.mktemp(kind.replace(" ", "_"))
    attacks: dict[Path, tuple[str, Attack]] = {}
    for fmt, seed in sorted(SEEDS.items()):
        raw = seed.read_bytes()
        if not applicable(kind, raw):
            continue
        attack = data.draw(CLASSES[kind](raw), label=fmt)
        folder = work / "in" / fmt
        folder.mkdir(parents=True)
        path = folder / file_name(attack, seed.name)
        path.write_bytes(attack.data)
        attacks[path] = (fmt, attack)
    out = work / "out"
    flags = ["--max-decompressed-mb", str(BOMB_BUDGET_MB)] if kind == "bomb" else []
    code, stdout, stderr = run_cli(
        "scan", str(work / "in"), "-o", str(out / "report"), "--json", str(out / "r.json"),
        "--md", str(out / "r.md"), "--sarif", str(out / "r.sarif"), "--junit", str(out / "r.xml"),
        "--github", "--db", str(out / "r.duckdb"), "--parquet", str(out / "tables"), "--no-fuse",
        *flags,
    )  # fmt: skip
    assert code in (0, 1), stderr
    assert "Traceback" not in stdout + stderr and "internal error" not in stderr
    report = json.loads((out / "r.json").read_text())
    skipped = {s["path"] for s in report["skipped"]}  # listed with a reason: not silent
    problems = []
    for path, (fmt, attack) in attacks.items():
        if attack.name or str(path) in skipped:
            continue  # a hostile name: the tables spell it cleaned, checked by leaks only
        tables = _of_file(out / "tables", report, path)
        lost = unaccounted(path, fmt, tables)
        if lost:
            problems.append((fmt, "lost", lost[:3]))
        reasons = " ".join(tables.rejects["reason"])
        if attack.expect_reject and attack.expect_reject not in reasons:
            problems.append((fmt, "bomb not rejected by its budget", reasons[:300]))
    texts = _texts(out, stdout, stderr)
    for path, (fmt, attack) in attacks.items():
        for shape, body in attack.secrets:
            if where := _leaked(leak_windows(shape, body, attack.data), texts):
                problems.append((fmt, f"leak of {shape}", where[:2], os.fsencode(path.name)))
    for problem in problems:  # in full, as pytest clips the assertion's values
        print(*problem)
    assert problems == []
