"""The report model: everything a renderer shows, as plain data, in a stable order."""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl

from forensics.pipeline import ScanResult

EXCERPT_CHARS = 600


def _finding(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["finding_id"],
        "rule": row["rule"],
        "severity": row["severity"],
        "confidence": row["confidence"],
        "cause": row["cause"],
        "trajectory_id": row["trajectory_id"],
        "task_id": row["task_id"],
        "trial": row["trial"],
        "turn_index": row["turn_index"],
        "role": row["role"],
        "actor": row["actor"],
        "source": {"path": row["source_path"], "line": row["source_line"]},
        "message": row["message"],
        "evidence": row["evidence"],
    }


def build(result: ScanResult) -> dict[str, Any]:
    findings = [_finding(r) for r in result.findings.iter_rows(named=True)]
    by_id = {f["id"]: f for f in findings}
    rejects = [
        {
            "path": r["source_path"],
            "line": r["source_line"],
            "reason": r["reason"],
            "excerpt": r["excerpt"],
        }
        for r in result.rejects.sort(["source_path", "source_line"], nulls_last=False).iter_rows(
            named=True
        )
    ]
    causes = []
    for c in result.diagnosis.causes:
        causes.append(
            {
                "rank": c.rank,
                "id": c.id,
                "title": c.title,
                "rules": c.rules,
                "trajectories": c.trajectories,
                "findings": c.turns,
                "reward_lost": c.reward_lost,
                "severity": c.severity,
                "confidence": c.confidence,
                "why_ranked": c.why_ranked,
                "explains": c.explains,
                "fixes": c.fixes,
                "evidence": [by_id[i] for i in c.evidence if i in by_id],
            }
        )
    rule_counts = Counter(f["rule"] for f in findings)
    trajectories = result.trajectories
    rewards = trajectories["reward"].drop_nulls()
    by_variant = (
        trajectories.filter(pl.col("reward").is_not_null())
        .group_by(pl.col("variant").fill_null("(none)"), pl.col("agent_model").fill_null("?"))
        .agg(pl.col("reward").mean().alias("mean_reward"), pl.len().alias("trajectories"))
        .sort(["variant", "agent_model"])
    )
    formats = Counter(f.format or "rejected" for f in result.files)
    return {
        "summary": {
            "files": len(result.files),
            "files_by_format": dict(sorted(formats.items())),
            "trajectories": trajectories.height,
            "turns": result.turns.height,
            "findings": len(findings),
            "rejects": len(rejects),
            "mean_reward": round(rewards.mean(), 4) if rewards.len() else None,
            "findings_by_rule": dict(sorted(rule_counts.items())),
            "reward_by_variant": by_variant.to_dicts(),
        },
        "verdict": result.diagnosis.verdict,
        "causes": causes,
        "keep": result.diagnosis.keep,
        "validation": result.diagnosis.validation,
        "findings": findings,
        "rejects": rejects,
        "files": [
            {"path": f.path, "format": f.format, "detected_because": f.reason, "records": f.records}
            for f in result.files
        ],
        "not_checked": [
            {"path": path, "rule": rule, "missing": missing}
            for path, rules in sorted(result.not_checked.items())
            for rule, missing in sorted(rules.items())
        ],
        "rules": [
            {
                "id": r.id,
                "title": r.title,
                "severity": r.severity,
                "confidence": r.confidence,
                "summary": r.summary,
            }
            for r in result.rules
        ],
    }
