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
fixture file, nothing else here. The machinery is forensics/tools/rule_fixtures.py, which
`forensics rules test DIR` runs on a rule directory of one's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forensics.check import engine
from forensics.tools.rule_fixtures import (
    SNAPSHOT_SUFFIX,
    Case,
    Findings,
    all_findings,
    load_cases,
    problems,
    snapshot,
    snapshot_diff,
    verdict,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "rule_fixtures"
CASES = load_cases(FIXTURES)
RULES = {rule.id: rule for rule in engine.load_rules()}
RULE_IDS = list(RULES)


@pytest.fixture(scope="module")
def findings() -> Findings:
    """The findings over all fixture cases: each rule's cases with only that rule enabled, each
    case its own trajectory."""
    return all_findings(CASES, RULES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fixture_is_well_formed(case: Case) -> None:
    assert not problems(case, RULES), f"{case.source_path}:{case.line}: " + "; ".join(
        problems(case, RULES)
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_fires_exactly_on_expected_turns(case: Case, findings: Findings) -> None:
    if problems(case, RULES):
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
    cases = [c for c in CASES if c.rule == rule_id and not c.xfail and not problems(c, RULES)]
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
