"""Every rule of the pack against positive and negative fixtures (semgrep-style, data-driven).

tests/rule_fixtures/<rule-id>.jsonl holds one trajectory per line:

    {"case": "short-name",
     "expect": {"ruleid": [turn indexes where the rule MUST fire],
                "ok": [turn indexes where it must NOT fire]},
     "turns": [{"role": "assistant", "content": "...", "finish_reason_raw": "length", ...}, ...],
     "trajectory": {"reward": 0.0, "termination_reason": "agent_error",
                    "source_format": "tau2_results", "labels": {"k": "v"}},   # optional
     "xfail": "reason"}                      # optional: a known bug in the rule, see below

A turn is a partial row of schema.RAW_TURNS. Missing columns are NULL. The helper fills
turn_index (position in "turns"), trajectory_id, run_id, task_id, trial and the source columns,
and actor from role unless the turn gives one. `finish_reason` is the normalised value; when a
turn gives only `finish_reason_raw`, it is normalised as the ingesters do. Tool-call arguments
may be written as JSON objects; they are stored as JSON text.

The rule must fire on exactly the `ruleid` turns of the case (no more, no fewer) and never on an
`ok` turn. `null` in either list stands for the episode as a whole (a finding with no turn,
e.g. an episode whose exception left no turns); such a case may have `"turns": []`. Each
rule's cases run together through enrich + engine.check with only that rule enabled (as ruff
checks a fixture), each case its own trajectory, so a rule that leaks across trajectories fails
here too. "trajectory" sets episode columns of
schema.TRAJECTORIES that rules join on (reward, termination reason, labels as a mapping); its
"source_format" also applies to the turns, for rules that only read one harness's files
(tau2). A case marked
`xfail` documents a suspected bug in a rule or in enrich: it reports as xfailed while the bug
is there and fails once the rule is fixed, so the mark gets removed.

    "params": {"min_attempts": 2}            # optional: the rule's parameters for this case

A case with "params" runs on its own with those parameters set on its rule (checked against the
rule's [params]: an unknown name or a wrong type is a malformed fixture).

Snapshots (insta-style): tests/rule_fixtures/<rule-id>.snap.json pins, per case that produces
findings of the rule, each finding's turn, message, evidence and details. A changed message or
excerpt fails with a diff; `pytest tests/check/test_rule_fixtures.py --update-snapshots`
rewrites the files from the findings (review the diff before committing it).

The rule list comes from the pack (engine.load_rules): a new rule needs its TOML file and its
fixture file, nothing else here.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from forensics import schema
from forensics.check import engine, params
from forensics.check.enrich import enrich
from forensics.ingest.records import normalise_finish_reason

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "rule_fixtures"
SNAPSHOT_SUFFIX = ".snap.json"
ACTORS = {"assistant": "agent", "user": "user_sim", "tool": "env", "system": "system"}
HELPER_COLUMNS = {
    "source_path",
    "source_line",
    "source_format",
    "run_id",
    "trajectory_id",
    "task_id",
    "trial",
    "turn_index",
}
TURN_KEYS = set(schema.RAW_TURNS.names) - HELPER_COLUMNS
CASE_KEYS = {"case", "expect", "turns", "xfail", "trajectory", "params"}
TRAJECTORY_KEYS = (set(schema.TRAJECTORIES.names) - HELPER_COLUMNS) | {"source_format"}
TRAJECTORY_KEYS -= {"trajectory_id", "turn_count", "agent_turn_count", "tool_call_count"}


@dataclass(frozen=True, repr=False)
class Case:
    rule: str
    name: str
    line: int
    raw: dict[str, Any]
    path: Path = FIXTURES

    def __repr__(self) -> str:
        return f"<case {self.id} at {self.source_path}:{self.line}>"

    @property
    def id(self) -> str:
        return f"{self.rule}::{self.name}"

    @property
    def trajectory_id(self) -> str:
        return f"fixture/{self.rule}/{self.name}"

    @property
    def source_path(self) -> str:
        file = self.path / f"{self.rule}.jsonl"
        return str(file.relative_to(ROOT)) if file.is_relative_to(ROOT) else str(file)

    @property
    def params(self) -> dict[str, Any]:
        return self.raw.get("params") or {}

    @property
    def turns(self) -> list[dict[str, Any]]:
        return self.raw.get("turns") or []

    @property
    def ruleid(self) -> set[int | None]:
        return set(self.raw.get("expect", {}).get("ruleid") or [])

    @property
    def ok(self) -> set[int | None]:
        return set(self.raw.get("expect", {}).get("ok") or [])

    @property
    def xfail(self) -> str | None:
        return self.raw.get("xfail")

    @property
    def episode(self) -> dict[str, Any]:
        return self.raw.get("trajectory") or {}

    @property
    def source_format(self) -> str:
        return self.episode.get("source_format", "rule_fixture")


def load_cases(directory: Path = FIXTURES) -> list[Case]:
    cases = []
    for path in sorted(directory.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise AssertionError(f"{path.name}:{lineno}: not JSON: {exc}") from None
            name = raw.get("case") or f"line-{lineno}"
            cases.append(Case(path.stem, name, lineno, raw, directory))
    return cases


CASES = load_cases()
RULES = {rule.id: rule for rule in engine.load_rules()}
RULE_IDS = list(RULES)


def _tool_calls(calls: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if calls is None:
        return None
    out = []
    for call in calls:
        args = call.get("arguments")
        if args is not None and not isinstance(args, str):
            args = json.dumps(args)
        out.append({"id": call.get("id"), "name": call.get("name"), "arguments": args})
    return out


def _rows(case: Case) -> list[dict[str, Any]]:
    rows = []
    for index, turn in enumerate(case.turns):
        row: dict[str, Any] = dict.fromkeys(schema.RAW_TURNS.names)
        row.update(turn)
        row.update(
            source_path=case.source_path,
            source_line=case.line,
            source_format=case.source_format,
            run_id=f"fixtures-{case.rule}",
            trajectory_id=case.trajectory_id,
            task_id=case.name,
            trial=0,
            turn_index=index,
            actor=turn.get("actor") or ACTORS.get(turn.get("role", "")),
            tool_calls=_tool_calls(turn.get("tool_calls")),
        )
        if "finish_reason" not in turn:
            row["finish_reason"] = normalise_finish_reason(turn.get("finish_reason_raw"))
        rows.append(row)
    return rows


def _trajectory(case: Case) -> dict[str, Any]:
    rows = _rows(case)
    episode = {k: v for k, v in case.episode.items() if k != "labels"}
    labels = case.episode.get("labels") or {}
    return {
        **episode,
        "trajectory_id": case.trajectory_id,
        "run_id": f"fixtures-{case.rule}",
        "source_path": case.source_path,
        "source_line": case.line,
        "source_format": case.source_format,
        "task_id": case.name,
        "trial": 0,
        "labels": [{"key": k, "value": str(v)} for k, v in sorted(labels.items())],
        "turn_count": len(rows),
        "agent_turn_count": sum(r["actor"] == "agent" for r in rows),
        "tool_call_count": sum(len(r["tool_calls"] or []) for r in rows if r["actor"] == "agent"),
    }


def _ordered(turns: set[int | None]) -> list[int | None]:
    """Turn indexes for messages; None (the episode as a whole) first."""
    return sorted(turns, key=lambda t: -1 if t is None else t)


def problems(case: Case, rules: dict[str, engine.Rule] = RULES) -> list[str]:
    """What is wrong with the fixture itself (not with the rule)."""
    raw = case.raw
    issues = []
    if "params" in raw and case.rule in rules:
        try:
            params.override(rules[case.rule].params, raw["params"], "params")
        except params.ParamError as exc:
            issues.append(str(exc))
    if unknown := set(raw) - CASE_KEYS:
        issues.append(f"unknown case keys {sorted(unknown)}")
    if not isinstance(raw.get("case"), str) or not raw["case"]:
        issues.append('"case" must be a non-empty name')
    if raw.get("xfail") is not None and not (isinstance(raw["xfail"], str) and raw["xfail"]):
        issues.append('"xfail" must be a reason')
    episode = raw.get("trajectory")
    if episode is not None and not isinstance(episode, dict):
        issues.append('"trajectory" must be an object')
    elif episode and (unknown := set(episode) - TRAJECTORY_KEYS):
        issues.append(f"trajectory: unknown or helper-filled columns {sorted(unknown)}")
    elif episode and not isinstance(episode.get("labels", {}), dict):
        issues.append('trajectory: "labels" must be an object of key: value')
    expect = raw.get("expect")
    if not isinstance(expect, dict) or set(expect) != {"ruleid", "ok"}:
        issues.append('"expect" must have exactly "ruleid" and "ok"')
        return issues
    for key in ("ruleid", "ok"):
        values = expect[key]
        if not isinstance(values, list) or not all(type(v) is int or v is None for v in values):
            issues.append(f"expect.{key} must be a list of turn indexes (null: the episode)")
            return issues
    turns = raw.get("turns")
    # An episode-level case (expect names only null) may have no turns: an episode that died
    # before it produced any is exactly what such rules look for.
    episode_only = (case.ruleid | case.ok) == {None}
    if not isinstance(turns, list) or not (turns or episode_only):
        issues.append('"turns" must be a non-empty list')
        return issues
    if not case.ruleid | case.ok:
        issues.append("expect names no turn at all")
    if both := case.ruleid & case.ok:
        issues.append(f"turns {_ordered(both)} are both ruleid and ok")
    if outside := {i for i in case.ruleid | case.ok if i is not None and not 0 <= i < len(turns)}:
        issues.append(f"turns {sorted(outside)} do not exist ({len(turns)} turns)")
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict):
            issues.append(f"turn {index} is not an object")
            continue
        if turn.get("role") not in ACTORS:
            issues.append(f"turn {index}: role must be one of {sorted(ACTORS)}")
        if unknown := set(turn) - TURN_KEYS:
            issues.append(f"turn {index}: unknown or helper-filled columns {sorted(unknown)}")
    return issues


class Findings:
    """The findings frame, with a short repr so failing tests do not print the whole table."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __repr__(self) -> str:
        return f"<{self.frame.height} findings>"

    def of(self, case: Case) -> pl.DataFrame:
        return self.frame.filter(
            (pl.col("rule") == case.rule) & (pl.col("trajectory_id") == case.trajectory_id)
        ).sort("turn_index", "message", nulls_last=False)


def _check(cases: list[Case], rules: list[engine.Rule]) -> pl.DataFrame:
    tables = []
    for case in cases:
        try:
            tables.append(pa.Table.from_pylist(_rows(case), schema=schema.RAW_TURNS))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise AssertionError(f"{case.id}: turns do not fit schema.RAW_TURNS: {exc}") from None
    turns = enrich(pa.concat_tables(tables))
    trajectories = pl.from_arrow(
        pa.Table.from_pylist([_trajectory(c) for c in cases], schema=schema.TRAJECTORIES)
    )
    return engine.check(turns, trajectories, rules).findings  # type: ignore[arg-type]


def run_cases(cases: list[Case], rules: list[engine.Rule]) -> Findings:
    """The findings of `rules` over the cases, each case its own trajectory: the cases without
    parameters in one run, each case with "params" alone with them set on its rule."""
    plain = [c for c in cases if not c.params]
    frames = [_check(plain, rules)] if plain else []
    for case in cases:
        if case.params:
            tuned = [r.with_params(case.params, case.id) if r.id == case.rule else r for r in rules]
            frames.append(_check([case], tuned))
    return Findings(pl.concat(frames, how="vertical_relaxed"))


@pytest.fixture(scope="module")
def findings() -> Findings:
    """The findings over all fixture cases: each rule's cases with only that rule enabled, each
    case its own trajectory."""
    cases = [c for c in CASES if not problems(c)]
    frames = [
        run_cases(mine, [rule]).frame
        for rule_id, rule in RULES.items()
        if (mine := [c for c in cases if c.rule == rule_id])
    ]
    return Findings(pl.concat(frames, how="vertical_relaxed"))


def verdict(case: Case, findings: Findings) -> tuple[list[str], str]:
    """What is wrong with the rule on this case (empty: nothing), and a report of it."""
    mine = findings.of(case)
    fired = set(mine["turn_index"].to_list())
    wrong = []
    if missing := case.ruleid - fired:
        wrong.append(f"did not fire on ruleid turns {_ordered(missing)}")
    if unexpected := fired - case.ruleid - case.ok:
        wrong.append(f"fired on unexpected turns {_ordered(unexpected)}")
    if forbidden := fired & case.ok:
        wrong.append(f"fired on ok turns {_ordered(forbidden)}")
    report = f"{case.rule} on {case.source_path}:{case.line} ({case.name}): " + "; ".join(wrong)
    for row in mine.iter_rows(named=True):
        report += f"\n  turn {row['turn_index']}: {row['message']}"
    return wrong, report


def snapshot(rule_id: str, cases: list[Case], findings: Findings) -> str:
    """The snapshot file of one rule: per case with findings, each one's turn, message,
    evidence and details, in fixture order."""
    pinned: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        if case.rule != rule_id:
            continue
        rows = []
        for row in findings.of(case).iter_rows(named=True):
            entry = {k: row[k] for k in ("turn_index", "message", "evidence")}
            if row["details"] is not None:
                entry["details"] = json.loads(row["details"])
            rows.append(entry)
        if rows:
            pinned[case.name] = rows
    return json.dumps(pinned, indent=2, ensure_ascii=False) + "\n"


def snapshot_diff(path: Path, actual: str) -> str | None:
    """None when the file holds `actual`, else a unified diff from the file to the findings."""
    pinned = path.read_text(encoding="utf-8") if path.is_file() else ""
    if pinned == actual:
        return None
    return "\n".join(
        difflib.unified_diff(
            pinned.splitlines(),
            actual.splitlines(),
            f"{path.name} (pinned)",
            f"{path.name} (findings now)",
            lineterm="",
        )
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fixture_is_well_formed(case: Case) -> None:
    assert not problems(case), f"{case.source_path}:{case.line}: " + "; ".join(problems(case))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_fires_exactly_on_expected_turns(case: Case, findings: Findings) -> None:
    if problems(case):
        pytest.fail(f"malformed fixture {case.source_path}:{case.line}")
    wrong, report = verdict(case, findings)
    if case.xfail:
        if wrong:
            pytest.xfail(f"{case.xfail} -- {report}")
        pytest.fail(f"{case.id} is marked xfail ({case.xfail}) but passes: remove the mark")
    assert not wrong, report


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_every_rule_has_positive_and_negative_fixtures(rule_id: str) -> None:
    path = FIXTURES / f"{rule_id}.jsonl"
    assert path.is_file(), f"rule {rule_id} has no fixture file {path.relative_to(FIXTURES.parent)}"
    cases = [c for c in CASES if c.rule == rule_id and not c.xfail and not problems(c)]
    positives = [c.name for c in cases if c.ruleid]
    negatives = [c.name for c in cases if not c.ruleid]
    assert positives, f"{path.name}: no positive case (a case whose expect.ruleid is non-empty)"
    assert negatives, f"{path.name}: no negative case (a case whose expect.ruleid is empty)"


def test_every_fixture_file_names_a_rule() -> None:
    orphans = sorted(p.name for p in FIXTURES.glob("*.jsonl") if p.stem not in RULE_IDS)
    orphans += sorted(
        p.name
        for p in FIXTURES.glob(f"*{SNAPSHOT_SUFFIX}")
        if p.name.removesuffix(SNAPSHOT_SUFFIX) not in RULE_IDS
    )
    assert not orphans, f"fixture files for rules that do not exist: {orphans}"


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_findings_match_their_snapshot(
    rule_id: str, findings: Findings, request: pytest.FixtureRequest
) -> None:
    """Messages, evidence and details are pinned: a change is deliberate or it is a bug."""
    path = FIXTURES / f"{rule_id}{SNAPSHOT_SUFFIX}"
    actual = snapshot(rule_id, CASES, findings)
    diff = snapshot_diff(path, actual)
    if diff is None:
        return
    if request.config.getoption("--update-snapshots"):
        path.write_text(actual, encoding="utf-8")
        return
    pytest.fail(
        f"{rule_id}: findings differ from {path.relative_to(ROOT)}; if the change is intended, "
        f"rerun with --update-snapshots and review the diff:\n{diff}",
        pytrace=False,
    )


def test_case_names_are_unique_per_rule() -> None:
    seen: dict[str, int] = {}
    for case in CASES:
        seen[case.id] = seen.get(case.id, 0) + 1
    assert not [k for k, n in seen.items() if n > 1], "duplicate case names"
