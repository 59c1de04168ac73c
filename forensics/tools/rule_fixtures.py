"""Rule fixtures: each rule against its positive and negative cases, as ruff checks a fixture.

`forensics rules test DIR` and tests/check/test_rule_fixtures.py (the built-in pack) run the
same code. The fixture format, one case a line of RULE-ID.jsonl:


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
from typing import Any, cast

import polars as pl
import pyarrow as pa

from forensics import schema
from forensics.check import engine, params
from forensics.check.enrich import enrich
from forensics.content import CHECKOUT
from forensics.ingest.records import normalise_finish_reason


class FixtureError(Exception):
    """A fixture file that can not be read as cases."""


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
    path: Path

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
        root = CHECKOUT if file.resolve().is_relative_to(CHECKOUT) else Path.cwd()
        resolved = file.resolve()
        return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(file)

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


def load_cases(directory: Path) -> list[Case]:
    """Every case of every fixture file (RULE-ID.jsonl) in a directory, in file order."""
    cases = []
    for path in sorted(directory.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise FixtureError(f"{path}:{lineno}: not JSON: {exc}") from None
            name = raw.get("case") or f"line-{lineno}"
            cases.append(Case(path.stem, name, lineno, raw, directory))
    return cases


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


def problems(case: Case, rules: dict[str, engine.Rule]) -> list[str]:
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
            raise FixtureError(f"{case.id}: turns do not fit schema.RAW_TURNS: {exc}") from None
    turns = enrich(pa.concat_tables(tables))
    trajectories = pl.from_arrow(
        pa.Table.from_pylist([_trajectory(c) for c in cases], schema=schema.TRAJECTORIES)
    )
    return engine.check(turns, cast(pl.DataFrame, trajectories), rules).findings


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


def all_findings(cases: list[Case], rules: dict[str, engine.Rule]) -> Findings:
    """The findings over the cases: each rule's cases with only that rule enabled, each case
    its own trajectory (malformed cases left out: `problems` says why)."""
    cases = [c for c in cases if not problems(c, rules)]
    frames = [
        run_cases(mine, [rule]).frame
        for rule_id, rule in rules.items()
        if (mine := [c for c in cases if c.rule == rule_id])
    ]
    if not frames:
        return Findings(pl.DataFrame({"rule": [], "trajectory_id": [], "turn_index": []}))
    return Findings(pl.concat(frames, how="vertical_relaxed"))


def check_directory(rules_dir: Path, fixtures_dir: Path) -> tuple[list[str], int]:
    """`forensics rules test`: every rule of rules_dir against its fixtures in fixtures_dir.
    Returns the problems (empty: all pass) and how many cases ran."""
    pack = {r.id: r for r in engine.load_rules([rules_dir])}
    here = rules_dir.resolve()
    mine = {k: r for k, r in pack.items() if Path(r.path).resolve().parent == here}
    cases = load_cases(fixtures_dir)
    out = []
    for rule_id in mine:
        if not (fixtures_dir / f"{rule_id}.jsonl").is_file():
            out.append(f"{rule_id}: no fixture file {fixtures_dir / (rule_id + '.jsonl')}")
    for case in cases:
        if case.rule not in pack:
            out.append(f"{case.source_path}:{case.line}: no rule {case.rule}")
        elif issues := problems(case, pack):
            out.append(f"{case.source_path}:{case.line}: malformed case: " + "; ".join(issues))
    runnable = [c for c in cases if c.rule in pack]
    found = all_findings(runnable, {k: v for k, v in pack.items() if k in mine})
    for case in runnable:
        if case.rule not in mine or problems(case, pack):
            continue
        wrong, report = verdict(case, found)
        if wrong and not case.xfail:
            out.append(report)
    for rule_id in mine:
        path = fixtures_dir / f"{rule_id}{SNAPSHOT_SUFFIX}"
        if path.is_file() and (diff := snapshot_diff(path, snapshot(rule_id, runnable, found))):
            out.append(f"{rule_id}: findings differ from {path}:\n{diff}")
    return out, len(runnable)
