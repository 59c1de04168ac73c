"""Fingerprints a baseline can live with: rule, task, trial and turn, never the message's sizes.

A harness writes its results again on every run, and one word more in a turn changes the sizes
the messages quote ("2212 chars of reasoning"): the same finding must keep its fingerprint, in
the baseline gate, in SARIF and in `forensics diff` alike.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import polars as pl
from click.testing import CliRunner

import forensics
from forensics import distributed
from forensics.check import fingerprint
from forensics.cli import cli
from forensics.tools import diff

import pinned_rules
from conftest import SAMPLES
from pinned_rules import PINNED

FRUSTRATED = SAMPLES / "tau_bench_results_frustrated.json"


def scan(*args: str):
    return CliRunner().invoke(
        cli, ["scan", "--no-report", "--config", PINNED, *args], catch_exceptions=False
    )


def regenerated(source: Path, target: Path) -> Path:
    """The run written again: one word more in one turn (task 12's turn 2, whose finding says
    "2212 chars of reasoning"), nothing re-ordered, written as tau-bench writes it."""
    records = json.loads(source.read_text(encoding="utf-8"))
    (task12,) = (r for r in records if r["task_id"] == 12)
    turn = task12["traj"][2]
    turn["content"] = turn["content"].replace("Okay,", "Okay, well,", 1)
    target.write_text(json.dumps(records, indent=2), encoding="utf-8")
    return target


def pinned(*paths: Path, **settings: object) -> forensics.Scan:
    """forensics.scan with the rule pack the CLI scans run with here (pinned_rules)."""
    base = pinned_rules.settings()
    return forensics.scan([str(p) for p in paths], settings=replace(base, **settings))


def test_a_regenerated_artifact_passes_against_its_baseline(tmp_path):
    results = tmp_path / "results.json"
    shutil.copy(FRUSTRATED, results)
    base = tmp_path / "baseline.json"
    assert scan(str(results), "--write-baseline", str(base)).exit_code == 0
    before = pinned(results).findings
    regenerated(FRUSTRATED, results)
    after = pinned(results).findings
    # the message did change: it quotes the size of the reasoning
    turn2 = (
        (pl.col("rule") == "unclosed-think")
        & (pl.col("task_id") == "12")
        & (pl.col("turn_index") == 2)
    )
    assert "2212 chars of reasoning" in before.filter(turn2)["message"][0]
    assert "2218 chars of reasoning" in after.filter(turn2)["message"][0]
    assert before.filter(turn2)["finding_id"][0] == after.filter(turn2)["finding_id"][0]

    res = scan(str(results), "--baseline", str(base), "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output
    assert "baseline: 0 new, 0 fixed, 44 unchanged (against" in res.output
    gate = json.loads((tmp_path / "r.json").read_text())["gate"]["baseline"]
    assert gate["new"] == [] and gate["fixed"] == []


def test_a_rerun_written_under_another_name_keeps_its_fingerprints(tmp_path):
    # tau-bench names its results file after the date of the run.
    first = tmp_path / "gpt-4o_0501.json"
    shutil.copy(FRUSTRATED, first)
    base = tmp_path / "baseline.json"
    assert scan(str(first), "--write-baseline", str(base)).exit_code == 0
    first.unlink()
    second = regenerated(FRUSTRATED, tmp_path / "gpt-4o_0502.json")
    res = scan(str(second), "--baseline", str(base))
    assert res.exit_code == 0, res.output
    assert "baseline: 0 new, 0 fixed, 44 unchanged" in res.output


def test_sarif_partial_fingerprints_survive_a_regenerated_artifact(tmp_path):
    results = tmp_path / "results.json"
    shutil.copy(FRUSTRATED, results)

    def prints() -> list[tuple[str, str]]:
        scan(str(results), "--sarif", str(tmp_path / "r.sarif"))
        doc = json.loads((tmp_path / "r.sarif").read_text())
        return [
            (r["ruleId"], r["partialFingerprints"]["forensicsFindingId/v1"])
            for r in doc["runs"][0]["results"]
        ]

    before = prints()
    regenerated(FRUSTRATED, results)
    assert prints() == before and len(before) == 44


def test_diff_and_the_fingerprint_share_one_key(tmp_path):
    a = pinned(FRUSTRATED)
    b = pinned(regenerated(FRUSTRATED, tmp_path / "again.json"))
    d = diff.compare(forensics.report.model.build(a), forensics.report.model.build(b))
    assert (len(d["findings"]["new"]), len(d["findings"]["fixed"])) == (0, 44 - 44)
    assert len(d["findings"]["persistent"]) == 44
    for row in a.findings.iter_rows(named=True):
        assert row["finding_id"] == fingerprint.fingerprint(fingerprint.key(row))


def test_the_same_task_in_two_runs_gets_two_fingerprints(tmp_path):
    # Two runs of the same tasks scanned together (model A and model B): the same rule on the
    # same turn of the same task is two findings with two ids, numbered in scan order.
    for name in ("a.json", "b.json"):
        shutil.copy(FRUSTRATED, tmp_path / name)
    result = pinned(tmp_path, fuse=False)
    ids = result.findings["finding_id"]
    assert result.findings.height == 88 and ids.n_unique() == 88
    one = result.findings.filter(pl.col("source_path").str.ends_with("a.json"))
    k = fingerprint.key(one.row(0, named=True))
    assert one["finding_id"][0] == fingerprint.fingerprint(k, 1)
    other = result.findings.filter(pl.col("source_path").str.ends_with("b.json"))
    assert other["finding_id"][0] == fingerprint.fingerprint(k, 2)
    # one run fixed: one fixed against the baseline of both, whichever run it was
    base = tmp_path / "baseline.json"
    scan(
        str(tmp_path / "a.json"),
        str(tmp_path / "b.json"),
        "--no-fuse",
        "--write-baseline",
        str(base),
    )
    (tmp_path / "a.json").unlink()
    res = scan(str(tmp_path / "b.json"), "--baseline", str(base))
    assert "baseline: 0 new, 44 fixed, 44 unchanged" in res.output and res.exit_code == 0


def test_distributed_numbering_is_the_one_process_numbering(tmp_path):
    for name in ("a.json", "b.json"):
        shutil.copy(FRUSTRATED, tmp_path / name)
    settings = replace(pinned_rules.settings(), fuse=False)
    one = forensics.scan(str(tmp_path), settings=settings).findings
    spread = distributed.scan(
        str(tmp_path), runner=distributed.processes(1), shards=2, settings=settings
    ).findings
    assert spread["finding_id"].to_list() == one["finding_id"].to_list()
    assert spread["finding_id"].n_unique() == 88


def test_a_baseline_of_an_older_forensics_still_matches(tmp_path):
    # Version 1 baselines hashed the message and named no trial; their entries are matched by
    # what they name, so upgrading does not turn every finding into a new one.
    results = tmp_path / "results.json"
    shutil.copy(FRUSTRATED, results)
    findings = pinned(results).findings
    old = {
        "forensics_baseline": 1,
        "findings": [
            {
                "id": f"old{i:013d}",
                **{k: r[k] for k in ("rule", "trajectory_id", "task_id", "turn_index")},
            }
            for i, r in enumerate(findings.iter_rows(named=True))
        ],
    }
    base = tmp_path / "v1.json"
    base.write_text(json.dumps(old))
    res = scan(str(results), "--baseline", str(base))
    assert res.exit_code == 0, res.output
    assert "baseline: 0 new, 0 fixed, 44 unchanged" in res.output
