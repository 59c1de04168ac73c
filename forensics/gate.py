"""The CI gate: which findings fail a run, baselines, and the exit code.

A run fails (exit 1) when a finding at or above fail-on is not excused, or a rate threshold is
exceeded. Excused: findings whose fingerprint is in the baseline (only new findings fail), and
findings of a rule that has a rate threshold — such a rule is judged by its rate (the share of
trajectories with at least one of its findings, baseline or not), because a threshold says a
little of it is tolerated.

A gate that passes must have looked, so a run also fails when what it was asked to judge was
not there (`Coverage`): an input file that yielded nothing readable, no readable input at all,
a rule named by max-rate that could run on none of the inputs (its 0% would prove nothing), or
more rejected records than max-rejects. allow-unreadable and allow-unchecked turn the first
and the third into lines that say so; nothing read at all fails, unless every input was a file
named by its own path that a scan skips (`Verdict.nothing_to_check`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from forensics.check import fingerprint
from forensics.config import parse_rate
from forensics.schema import ARCHIVE_MEMBER_SEPARATOR, SEVERITIES

if TYPE_CHECKING:
    from forensics.diagnosis.result import ScanResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
# 2: fingerprints of rule, task, trial and turn (check/fingerprint.py), entries name the trial.
# Version 1 files (fingerprints that hashed the message) are read and matched as version 2.
BASELINE_VERSION = 2
# What a baseline entry records of a finding: its fingerprint's key, and the trajectory.
_ENTRY = ("rule", "trajectory_id", "task_id", "trial", "turn_index")
UNREADABLE_LINES = 20  # per-file gate lines shown; the JSON result holds every one


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
    # Opt-outs, each explicit: a max-rate rule that could run nowhere, an input file that
    # yielded nothing readable. max_rejects: rejected records tolerated (None: not gated).
    allow_unchecked: bool = False
    allow_unreadable: bool = False
    max_rejects: int | None = None


@dataclass(frozen=True)
class Coverage:
    """What a scan could read and check, as the gate needs it."""

    files: int = 0
    # (path, why) of each input file that yielded nothing readable
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    # rejected records of the files that were read (a wholly unreadable file is in unreadable)
    record_rejects: int = 0
    # rule id -> what was missing, one entry per way it could have run: rules that could run
    # on none of the inputs
    unchecked: dict[str, list[str]] = field(default_factory=dict)
    # inputs listed as skipped, never read: companion files that are no agent artifact, this
    # scan's own outputs, entries a walk passed over
    skipped: int = 0
    # of those, the inputs named by their own path (not found by a walk or a glob)
    named_skipped: int = 0

    @property
    def readable(self) -> int:
        return self.files - len(self.unreadable)


@dataclass(frozen=True)
class RateCheck:
    rule: str
    trajectories: int
    total: int
    rate: float
    limit: float
    # what the inputs lacked when the rule could run on none of them: its rate means nothing
    unchecked: list[str] | None = None

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
    coverage: Coverage = field(default_factory=Coverage)
    allow_unchecked: bool = False
    allow_unreadable: bool = False
    max_rejects: int | None = None

    @property
    def nothing_to_check(self) -> bool:
        """Every input was a file named by its path that a scan skips (a companion file, an
        output of this scan), as the pre-commit hook names the files a commit touches: a commit
        of a config.json alone holds no artifact to judge, and must not be blocked, as ruff
        passes a commit with no Python file. A walk or a glob that found only such files is
        another matter: the artifact the folder should hold is missing (no_readable_input)."""
        c = self.coverage
        return c.files == 0 and c.skipped > 0 and c.named_skipped == c.skipped

    @property
    def no_readable_input(self) -> bool:
        # Every input skipped (a config and notes, no artifact) is nothing checked too.
        named = self.coverage.files > 0 or self.coverage.skipped > 0
        return named and self.coverage.readable == 0 and not self.nothing_to_check

    @property
    def rejects_exceeded(self) -> bool:
        return self.max_rejects is not None and self.coverage.record_rejects > self.max_rejects

    @property
    def failed(self) -> bool:
        return (
            bool(self.failing)
            or self.no_readable_input
            or (bool(self.coverage.unreadable) and not self.allow_unreadable)
            or any(
                (r.unchecked is not None and not (self.allow_unchecked or self.nothing_to_check))
                or (r.unchecked is None and r.exceeded)
                for r in self.rates
            )
            or self.rejects_exceeded
        )

    def lines(self) -> list[str]:
        """The gate's verdict for the terminal."""
        out = []
        unreadable = "allowed" if self.allow_unreadable else "FAIL"
        for path, why in self.coverage.unreadable[:UNREADABLE_LINES]:
            tail = " (allow-unreadable)" if self.allow_unreadable else ""
            out.append(f"gate: {unreadable} — {path}: nothing readable: {why}{tail}")
        if len(self.coverage.unreadable) > UNREADABLE_LINES:
            more = len(self.coverage.unreadable) - UNREADABLE_LINES
            out.append(f"gate: {unreadable} — … and {more} more files with nothing readable")
        if self.coverage.unreadable and not (self.allow_unreadable or self.no_readable_input):
            n = len(self.coverage.unreadable)
            them = "it" if n == 1 else "them"
            out.append(
                f"gate: FAIL — {n} input{'' if n == 1 else 's'} with nothing readable: "
                f"--allow-unreadable (allow-unreadable = true) passes with {them} listed; the "
                f"ignore-paths config key leaves {them} out"
            )
        if self.no_readable_input:
            line = "gate: FAIL — no readable input: nothing could be checked"
            if self.coverage.files == 0:  # all skipped: say where they are listed
                n = self.coverage.skipped
                found = "the file found was" if n == 1 else f"the {n} files found were"
                line += f" ({found} skipped: see skipped)"
            out.append(line)
        scope = "new finding" if self.baseline else "finding"
        if self.failing:
            counts = ", ".join(f"{k} {v}" for k, v in self.failing_by_rule.items())
            noun = scope if len(self.failing) == 1 else f"{scope}s"
            out.append(
                f"gate: FAIL — {len(self.failing)} {noun} at or above {self.fail_on} ({counts})"
            )
        for r in self.rates:
            if r.unchecked is not None and self.nothing_to_check:
                continue  # no input to run it on: the pass line says there was nothing to check
            if r.unchecked is not None:
                verdict = "allowed" if self.allow_unchecked else "FAIL"
                tail = " (allow-unchecked)" if self.allow_unchecked else ""
                out.append(
                    f"gate: {verdict} — {r.rule} cannot be checked: no "
                    f"{' or '.join(r.unchecked)} in these inputs{tail}"
                )
                continue
            verdict = "FAIL — above" if r.exceeded else "ok — within"
            out.append(
                f"gate: {verdict} max-rate {r.rule}={r.limit:.4g}: {r.trajectories} of "
                f"{r.total} trajectories ({r.rate:.1%})"
            )
        if self.max_rejects is not None:
            n = self.coverage.record_rejects
            noun = "rejected record" if n == 1 else "rejected records"
            verdict = "FAIL —" if self.rejects_exceeded else "ok —"
            relation = "above" if self.rejects_exceeded else "within"
            out.append(f"gate: {verdict} {n} {noun}, {relation} max-rejects {self.max_rejects}")
        if self.nothing_to_check and not self.failed:
            n = self.coverage.skipped
            them = "the file named is" if n == 1 else f"the {n} files named are"
            out.append(
                f"gate: pass — nothing to check: {them} skipped, no agent artifact (see skipped)"
            )
        elif not self.failed:
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
                    "exceeded": r.exceeded if r.unchecked is None else None,
                    "checked": r.unchecked is None,
                    "missing": r.unchecked,
                }
                for r in self.rates
            ],
            "allow_unchecked": self.allow_unchecked,
            "unreadable": [{"path": p, "reason": why} for p, why in self.coverage.unreadable],
            "allow_unreadable": self.allow_unreadable,
            "no_readable_input": self.no_readable_input,
            "rejects": {
                "records": self.coverage.record_rejects,
                "max_rejects": self.max_rejects,
                "exceeded": self.rejects_exceeded,
            },
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


def _why_unreadable(
    fmt: str | None, reason: str, note: str | None, rejects: list[tuple[Any, str]]
) -> str:
    """Why a file that yielded no row counts as unreadable."""
    if fmt is None:
        return reason  # rejected whole: the detector's or the walk's reason
    if note:
        return note  # e.g. "empty checkpoint: simulations is [] …"
    if rejects:
        line, first = rejects[0]
        why = first if line is None else f"line {line}: {first}"
        if len(rejects) > 1:
            why += f" (and {len(rejects) - 1} more rejects)"
        return why
    return f"read as {fmt}, but no record came out of it"


def coverage(result: ScanResult, named: Iterable[str] = ()) -> Coverage:
    """What the scan read and could check: the files that yielded nothing, the rejects of the
    others, and the rules that could run on none of the inputs.

    named: the paths the scan was given, as given; a skipped entry whose path is one of them
    was named by its own path, not found by a walk or a glob (Coverage.named_skipped)."""
    read = {*result.turn_paths(), *result.trajectories["source_path"].drop_nulls().to_list()}
    # An artifact whose episodes were fused into another's was read all the same.
    read |= set(result.trajectories["sources"].explode().drop_nulls().unique().to_list())
    rejects: dict[str, list[tuple[Any, str]]] = {}
    for path, line, reason in (
        result.rejects.sort("source_line", nulls_last=False)
        .select("source_path", "source_line", "reason")
        .iter_rows()
    ):
        rejects.setdefault(path, []).append((line, reason))
    # Rows read from a container's members name `<archive>!<member>` (ingest/zipmembers.py).
    read |= {p[:i] for p in read for i, c in enumerate(p) if c == ARCHIVE_MEMBER_SEPARATOR}
    unreadable = [
        (f.path, _why_unreadable(f.format, f.reason, f.note, rejects.get(f.path, [])))
        for f in sorted(result.files, key=lambda f: f.path)
        if f.path not in read and not f.metadata
    ]
    gone = {p for p, _ in unreadable}
    record_rejects = sum(len(v) for p, v in rejects.items() if p not in gone)
    return Coverage(
        files=len(result.files),
        unreadable=unreadable,
        record_rejects=record_rejects,
        unchecked=unchecked_rules(result),
        skipped=len(result.skipped),
        named_skipped=_named(result.skipped, named),
    )


def _named(skipped: list[tuple[str, str]], named: Iterable[str]) -> int:
    """How many skipped entries are paths the scan was given, spelled as given (`./a.json`
    and `a.json` alike). A path the scan spelled otherwise (a redacted name) does not count:
    the gate then fails as if it had been walked, never the other way."""
    given = {os.path.normpath(p) for p in named}
    return sum(os.path.normpath(path) in given for path, _ in skipped)


def unchecked_rules(result: ScanResult) -> dict[str, list[str]]:
    """Rules that could run on none of the inputs: rule id -> what was missing.

    A rule runs per file on the columns that file carries (engine.check lists the others in
    not_checked). One that is in not_checked for every file with turns ran nowhere; its
    alternatives' missing columns are merged over the files. A rule with a finding ran.
    """
    fired = set(result.findings["rule"].unique().to_list())
    rules = [r for r in result.rules if r.id not in fired]
    with_turns = set(result.turn_paths())
    if not with_turns:  # no turn at all: every rule that needs a column had nothing to read
        return {r.id: r.missing(set()) for r in rules if r.requires}
    out: dict[str, list[str]] = {}
    for rule in rules:
        per_file = [result.not_checked.get(p, {}).get(rule.id) for p in sorted(with_turns)]
        if any(m is None for m in per_file):
            continue
        merged: list[list[str]] = []
        for missing in per_file:
            for i, alternative in enumerate(missing or []):
                if i == len(merged):
                    merged.append([])
                for column in alternative.split("+"):
                    if column and column not in merged[i]:
                        merged[i].append(column)
        out[rule.id] = ["+".join(cols) for cols in merged if cols]
    return out


def evaluate(
    findings: pl.DataFrame,
    trajectories: int,
    rules: list[str],
    policy: Policy,
    coverage: Coverage | None = None,
) -> Verdict:
    """Judge the findings of a scan; rules are the ids that ran (for checking max-rate);
    coverage: what the scan could read and check (see `coverage`; None: all of it)."""
    coverage = coverage or Coverage()
    if policy.fail_on not in SEVERITIES:
        raise GateError(f"fail-on must be one of {', '.join(SEVERITIES)}")
    if policy.max_rejects is not None and policy.max_rejects < 0:
        raise GateError("max-rejects must be a whole number, 0 or more")
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
        coverage=coverage,
        allow_unchecked=policy.allow_unchecked,
        allow_unreadable=policy.allow_unreadable,
        max_rejects=policy.max_rejects,
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
        missing = coverage.unchecked.get(rule)
        verdict.rates.append(RateCheck(rule, hit, trajectories, rate, limit, missing))
    if verdict.failed and not policy.exit_zero:
        verdict.exit_code = EXIT_FINDINGS
    return verdict


def baseline_document(findings: pl.DataFrame) -> str:
    """The baseline file: every current finding by fingerprint, sorted, without paths or times
    so it is byte-identical across reruns and machines and diffs cleanly in review."""
    entries = findings.select("finding_id", *_ENTRY).unique("finding_id").sort("finding_id")
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
    return Baseline(path=str(path), entries=_entries(items))


def _entries(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Baseline items by fingerprint, computed again from what each names (rule, task, trial,
    turn): a baseline or --json result written before fingerprints left the message out
    matches as one written today. An item that names no rule keeps the id it carries."""
    named = [i for i in items if isinstance(i.get("rule"), str)]
    ids = iter(fingerprint.numbered([fingerprint.key(i) for i in named]))
    return {
        (next(ids) if isinstance(i.get("rule"), str) else i["id"]): {k: i.get(k) for k in _ENTRY}
        for i in items
    }
