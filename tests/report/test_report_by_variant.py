"""summary.by_variant counts each group's findings in one pass (group_by), not a filter per
group (quadratic when every run is its own group): the counts are what a filter per group
gives, on a scan of several runs, variants and models."""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl

import forensics
from forensics.report import model as report

from conftest import ROOT, SAMPLES


def _by_filter(result: Any) -> list[dict[str, Any]]:
    """by_variant as it was computed before: one filter of the findings per group."""
    keys = ["variant", "agent_model"]
    traj = result.trajectories.with_columns(report._group_columns())
    found = result.findings.join(
        traj.select("trajectory_id", *keys), on="trajectory_id", how="left"
    ).with_columns(pl.col(k).fill_null("?") for k in keys)
    out = []
    for row in (
        traj.group_by(keys)
        .agg(
            pl.len().alias("trajectories"),
            pl.col("reward").drop_nulls().len().alias("scored"),
            pl.col("reward").mean().alias("mean_reward"),
            pl.col("user_model").drop_nulls().unique().sort().alias("user_models"),
        )
        .sort(keys)
        .iter_rows(named=True)
    ):
        mine = found.filter(
            (pl.col("variant") == row["variant"]) & (pl.col("agent_model") == row["agent_model"])
        )
        out.append(
            {
                **row,
                "mean_reward": None if row["mean_reward"] is None else round(row["mean_reward"], 4),
                "findings": mine.height,
                "trajectories_with_findings": mine["trajectory_id"].n_unique(),
                "findings_by_rule": dict(sorted(Counter(mine["rule"].to_list()).items())),
            }
        )
    return out


def test_by_variant_counts_equal_a_filter_per_group():
    result = forensics.scan(
        [str(SAMPLES), str(ROOT / "tests/data/tau2"), str(ROOT / "tests/data/capture")]
    )
    groups = report._by_variant(result)
    assert len(groups) >= 4
    assert sum(g["findings"] for g in groups) == result.findings.height > 0
    assert groups == _by_filter(result)
