"""The CI gate: which findings fail a run, baselines, and the exit code.

A run fails (exit 1) when a finding at or above fail-on is not excused, or a rate threshold is
exceeded. Excused: findings whose fingerprint is in the baseline (only new findings fail), and
findings of a rule that has a rate threshold — such a rule is judged by its rate (the share of
trajectories with at least one of its findings, baseline or not), because a threshold says a
little of it is tolerated.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from forensics.config import parse_rate
from forensics.schema import SEVERITIES

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
BASELINE_VERSION = 1


class GateError(Exception):
    """A gate setting or baseline that can not be used (a usage error: exit code 2)."""


@dataclass(frozen=True)
class Baseline:
    path: str
    # finding id -> what it was (rule, trajectory, turn), to report fixed findings by name
    entries: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Policy:
    fail_on: str = "info"
    max_rate: dict[str, float] = field(default_factory=dict)
    baseline: Baseline | None = None
    exit_zero: bool = False


@dataclass(frozen=True)
class RateCheck:
    rule: str
    trajectories: int
    total: int
    rate: float
    limit: float

    @property
    def exceeded(self) -> bool:
        return self.rate > self.limit


@dataclass
class Verdict:
    exit_code: int
    fail_on: str
    failing: list[str]  # finding ids that fail the gate by severity
    failing_by_rule: dict[str, int]
    rates: list[RateCheck]
    exit_zero: bool = False
    baseline: str | None = None
    new: list[str] = field(default_factory=list)
    fixed: list[dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0

    @property
    def failed(self) -> bool:
        return bool(self.failing) or any(r.exceeded for r in self.rates)

    def lines(self) -> list[str]:
        """The gate's verdict for the terminal."""
        out = []
        scope = "new finding" if self.baseline else "finding"
        if self.failing:
            counts = ", ".join(f"{k} {v}" for k, v in self.failing_by_rule.items())
            noun = scope if len(self.failing) == 1 else f"{scope}s"
            out.append(
                f"gate: FAIL — {len(self.failing)} {noun} at or above {self.fail_on} ({counts})"
            )
        for r in self.rates:
            verdict = "FAIL — above" if r.exceeded else "ok — within"
            out.append(
                f"gate: {verdict} max-rate {r.rule}={r.limit:.4g}: {r.trajectories} of "
                f"{r.total} trajectories ({r.rate:.1%})"
            )
        if not self.failed:
            out.append(f"gate: pass — no {scope} at or above {self.fail_on}")
        if self.baseline:
            out.append(
                f"baseline: {len(self.new)} new, {len(self.fixed)} fixed, {self.unchanged} "
                f"unchanged (against {self.baseline})"
            )
            for f in self.fixed[:10]:
                out.append(
                    f"  fixed: {f.get('rule')} in {f.get('trajectory_id')} turn "
                    f"{f.get('turn_index')}"
                )
            if len(self.fixed) > 10:
                out.append(f"  … and {len(self.fixed) - 10} more fixed")
        if self.exit_zero and self.failed:
            out.append("gate: exit code 0 (--exit-zero)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "failed": self.failed,
            "fail_on": self.fail_on,
            "failing": self.failing,
            "rates": [
                {
                    "rule": r.rule,
                    "trajectories": r.trajectories,
                    "total": r.total,
                    "rate": round(r.rate, 6),
                    "max_rate": r.limit,
                    "exceeded": r.exceeded,
                }
                for r in self.rates
            ],
            "baseline": (
                {
                    "path": self.baseline,
                    "new": self.new,
                    "fixed": self.fixed,
                    "unchanged": self.unchanged,
                }
                if self.baseline
                else None
            ),
        }


def parse_max_rates(items: list[str] | tuple[str, ...]) -> dict[str, float]:
    """RULE=RATE items (from --max-rate) into {rule: rate}; ValueError names the bad one."""
    rates: dict[str, float] = {}
    for item in items:
        rule, sep, value = item.partition("=")
        if not sep or not rule.strip():
            raise ValueError(f"{item!r}: expected RULE=RATE, e.g. max-tokens=0.05")
        rates[rule.strip()] = parse_rate(value.strip())
    return rates


def rule_rates(findings: pl.DataFrame, total: int) -> dict[str, tuple[int, float]]:
    """rule -> (trajectories with a finding of it, share of all trajectories)."""
    counts = findings.group_by("rule").agg(pl.col("trajectory_id").n_unique().alias("n"))
    return {r: (n, n / total if total else 0.0) for r, n in counts.iter_rows()}


def evaluate(
    findings: pl.DataFrame, trajectories: int, rules: list[str], policy: Policy
) -> Verdict:
    """Judge the findings of a scan; rules are the ids that ran (for checking max-rate)."""
    if policy.fail_on not in SEVERITIES:
        raise GateError(f"fail-on must be one of {', '.join(SEVERITIES)}")
    if unknown := sorted(set(policy.max_rate) - set(rules)):
        raise GateError(
            f"max-rate: unknown or disabled rule(s) {', '.join(unknown)}; "
            f"rules that ran: {', '.join(sorted(rules))}"
        )
    ids = findings["finding_id"].to_list()
    verdict = Verdict(
        exit_code=EXIT_CLEAN,
        fail_on=policy.fail_on,
        failing=[],
        failing_by_rule={},
        rates=[],
        exit_zero=policy.exit_zero,
    )
    candidates = findings
    if policy.baseline is not None:
        known = policy.baseline.entries
        current = set(ids)
        verdict.baseline = policy.baseline.path
        verdict.new = sorted({i for i in ids if i not in known})
        verdict.fixed = [{"id": k, **known[k]} for k in sorted(known) if k not in current]
        verdict.unchanged = len(current & set(known))
        candidates = findings.filter(pl.col("finding_id").is_in(verdict.new))
    threshold = SEVERITIES.index(policy.fail_on)
    at_or_above = [s for s in SEVERITIES if SEVERITIES.index(s) >= threshold]
    failing = candidates.filter(
        pl.col("severity").is_in(at_or_above) & ~pl.col("rule").is_in(list(policy.max_rate))
    )
    verdict.failing = failing["finding_id"].to_list()
    verdict.failing_by_rule = dict(sorted(Counter(failing["rule"].to_list()).items()))
    observed = rule_rates(findings, trajectories)
    verdict.rates = []
    for rule, limit in sorted(policy.max_rate.items()):
        hit, rate = observed.get(rule, (0, 0.0))
        verdict.rates.append(RateCheck(rule, hit, trajectories, rate, limit))
    if verdict.failed and not policy.exit_zero:
        verdict.exit_code = EXIT_FINDINGS
    return verdict


def baseline_document(findings: pl.DataFrame) -> str:
    """The baseline file: every current finding by fingerprint, sorted, without paths or times
    so it is byte-identical across reruns and machines and diffs cleanly in review."""
    entries = (
        findings.select("finding_id", "rule", "trajectory_id", "task_id", "turn_index")
        .unique("finding_id")
        .sort("finding_id")
    )
    doc = {
        "forensics_baseline": BASELINE_VERSION,
        "findings": [
            {"id": r["finding_id"], **{k: v for k, v in r.items() if k != "finding_id"}}
            for r in entries.iter_rows(named=True)
        ],
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def load_baseline(path: Path) -> Baseline:
    """A baseline written by --write-baseline, or a --json result (its findings count too)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GateError(f"baseline {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GateError(f"baseline {path}: not JSON: {exc}") from None
    items = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not all(
        isinstance(i, dict) and isinstance(i.get("id"), str) for i in items
    ):
        raise GateError(
            f'baseline {path}: expected {{"findings": [{{"id": …}}, …]}} as written by '
            "--write-baseline or --json"
        )
    keep = ("rule", "trajectory_id", "task_id", "turn_index")
    return Baseline(
        path=str(path),
        entries={i["id"]: {k: i.get(k) for k in keep} for i in items},
    )
