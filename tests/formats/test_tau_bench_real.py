"""Real healthy tau-bench runs: parsed completely, and every rule stays silent."""

from __future__ import annotations

import json

import pytest

import forensics

from conftest import DATA, realdata

COPIES = sorted((DATA / "realdata").glob("*.json"))


@pytest.mark.parametrize("path", COPIES, ids=lambda p: p.name)
def test_real_copies_parse_completely_without_findings(path, scan_of):
    records = json.loads(path.read_text())
    result = scan_of(path)
    assert result.rejects.is_empty()
    assert result.trajectories.height == len(records)
    assert result.turns.height == sum(len(r["traj"]) for r in records)
    assert result.findings.is_empty(), result.findings.select("rule", "trajectory_id", "message")
    agents = result.turns.filter(result.turns["actor"] == "agent")
    assert set(agents["tools_attached"]) == {True}  # tool-calling agents
    rewards = dict(zip(result.trajectories["task_id"], result.trajectories["reward"], strict=True))
    assert rewards == {str(r["task_id"]): r["reward"] for r in records}


def test_real_max_steps_and_transfer_terminations(scan_of):
    result = scan_of(DATA / "realdata" / "tool-calling-gpt-4.1-mini-retail.subset12.json")
    ends = dict(
        zip(result.trajectories["task_id"], result.trajectories["termination_reason"], strict=True)
    )
    assert ends["104"] == "max_steps"
    assert ends["92"] == "transfer"
    assert ends["1"] == "user_stop"


def test_the_whole_real_tau_bench_files_have_no_findings():
    result = forensics.scan([str(realdata("tau_bench"))])
    assert result.trajectories.height == 94
    assert result.turns.height == 2974
    assert result.rejects.is_empty()
    assert result.findings.is_empty(), result.findings.select("rule", "trajectory_id", "message")


def test_unrelated_runs_without_a_model_are_never_pooled_into_one_row():
    """Two real tau-bench runs whose files name no agent model: each gets its own row in the
    variant/model table (and its own mean reward), labelled with its run."""
    from forensics.report import model as report

    paths = [str(p) for p in COPIES]
    model = report.build(forensics.scan(paths), page=True)
    rows = {r["agent_model"]: r for r in model["summary"]["by_variant"]}
    runs = sorted(p.stem for p in COPIES)
    assert sorted(rows) == [f"model unknown (run {run})" for run in runs]
    assert all(
        r["trajectories"] == len(json.loads(p.read_text()))
        for r, p in zip(
            (rows[f"model unknown (run {run})"] for run in runs), sorted(COPIES), strict=True
        )
    )
    explorer = model["page"]["explorer"]
    assert {t["vi"] for t in explorer["trajectories"]} == {0, 1}
