"""summary.by_variant: per variant and agent model, the trajectories, what they scored and what
was found, counted in one pass over the findings (a filter per group is quadratic when every
run is its own group). Pinned on a small hand-made scan, and held to the totals of a real one."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl

from forensics.report import model as report

from conftest import DATA, SAMPLES

TRAJECTORIES = pl.DataFrame(
    [
        ("t1", "r1", "frustrated", "m1", 0.0, "u1"),
        ("t2", "r1", "frustrated", "m1", 1.0, "u2"),
        ("t3", "r1", "frustrated", "m1", None, None),
        ("t4", "r2", None, None, None, None),  # no model: a group of its own run
        ("t5", "r3", None, None, 0.5, None),
        ("t6", "r4", "control", "m1", 1.0, "u1"),
        ("t7", "r4", "control", "m1", 0.0, "u1"),
        ("t8", "r4", "control", "m1", 0.0, None),
    ],
    schema={
        "trajectory_id": pl.String,
        "run_id": pl.String,
        "variant": pl.String,
        "agent_model": pl.String,
        "reward": pl.Float64,
        "user_model": pl.String,
    },
    orient="row",
)
FINDINGS = pl.DataFrame(
    {
        "trajectory_id": ["t1", "t1", "t1", "t2", "t4"],
        "rule": ["rule-a", "rule-a", "rule-b", "rule-b", "rule-a"],
    }
)


def test_groups_counts_and_rewards_of_a_small_scan():
    groups = report._by_variant(SimpleNamespace(trajectories=TRAJECTORIES, findings=FINDINGS))
    assert groups == [
        {"variant": "(none)", "agent_model": "model unknown (run r2)", "trajectories": 1,
         "scored": 0, "mean_reward": None, "user_models": [], "findings": 1,
         "trajectories_with_findings": 1, "findings_by_rule": {"rule-a": 1}},
        {"variant": "(none)", "agent_model": "model unknown (run r3)", "trajectories": 1,
         "scored": 1, "mean_reward": 0.5, "user_models": [], "findings": 0,
         "trajectories_with_findings": 0, "findings_by_rule": {}},
        {"variant": "control", "agent_model": "m1", "trajectories": 3, "scored": 3,
         "mean_reward": 0.3333, "user_models": ["u1"], "findings": 0,
         "trajectories_with_findings": 0, "findings_by_rule": {}},
        {"variant": "frustrated", "agent_model": "m1", "trajectories": 3, "scored": 2,
         "mean_reward": 0.5, "user_models": ["u1", "u2"], "findings": 4,
         "trajectories_with_findings": 2, "findings_by_rule": {"rule-a": 2, "rule-b": 2}},
    ]  # fmt: skip


def test_groups_of_a_real_scan_add_up_to_its_tables(scan_of):
    result = scan_of(SAMPLES, DATA / "tau2", DATA / "capture")
    groups = report._by_variant(result)
    assert len(groups) >= 4
    assert sum(g["findings"] for g in groups) == result.findings.height > 0
    assert sum(g["trajectories"] for g in groups) == result.trajectories.height
    for g in groups:
        assert sum(g["findings_by_rule"].values()) == g["findings"]
        assert g["trajectories_with_findings"] <= min(g["findings"], g["trajectories"])
