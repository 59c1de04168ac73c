"""Rules are data: a new rule is its TOML file plus its fixtures, and nothing else.

The rule list comes from the pack; the catalogue table in docs/rules.md is generated (and
checked here); a preview rule runs but is exempt from the accuracy corpus; a rule without a
causes.toml entry gets a cause of its own; thresholds are typed parameters; rule and cause files
are read strictly; fix texts read the values a rule hands over (`data` -> findings.details),
never its message.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

import forensics
from forensics import config, content, schema
from forensics.check import engine, params
from forensics.cli import cli
from forensics.diagnosis import causes, diagnose
from forensics.tools import accuracy, scaffold
from forensics.tools import rule_catalogue as catalogue
from forensics.tools.rule_fixtures import (
    load_cases,
    problems,
    run_cases,
    snapshot,
    snapshot_diff,
    verdict,
)

from conftest import ROOT, SAMPLES
from episodes import tables as episode_tables

PACK = engine.default_rules_dir()


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def scaffolded(tmp_path: Path, rule_id: str = "long-turn") -> tuple[Path, Path]:
    """A rule and its fixtures as `forensics rules new` writes them, in a temporary tree."""
    rules, fixtures = tmp_path / "rules", tmp_path / "fixtures"
    rules.mkdir()
    fixtures.mkdir()
    res = run("rules", "new", rule_id, "--dir", str(rules), "--fixtures-dir", str(fixtures))
    assert res.exit_code == 0, res.output
    return rules, fixtures


def rule_file(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def _diagnosis(rules: list[engine.Rule], episodes: dict[str, list[dict[str, Any]]]):
    turns, trajectories = episode_tables(episodes)
    found = engine.check(turns, trajectories, rules).findings
    return found, diagnose.diagnose(found, turns, trajectories, rules, PACK)


# --- the catalogue table (docs/rules.md) is generated ---------------------------------------


def test_catalogue_rule_table_is_generated_from_the_pack():
    document = catalogue.document(PACK)
    assert document == ROOT / catalogue.CATALOGUE, f"no rule table beside {PACK}"
    doc = document.read_text(encoding="utf-8")
    table = catalogue.markdown_table(engine.load_rules())
    pinned = catalogue.current(doc)
    diff = difflib.unified_diff(
        pinned.splitlines(), table.splitlines(), catalogue.CATALOGUE, "the rule files", lineterm=""
    )
    assert pinned == table, (
        f"{catalogue.CATALOGUE}'s rule table is stale: run `forensics rules readme` (it rewrites "
        "the text between the rule-table markers from the rule files)\n" + "\n".join(diff)
    )


def test_rules_readme_writes_the_catalogue_by_default(tmp_path, monkeypatch):
    # The command's default target is the catalogue's path, relative to the checkout.
    monkeypatch.chdir(tmp_path)
    target = tmp_path / catalogue.CATALOGUE
    target.parent.mkdir(parents=True)
    target.write_text(f"# Rules\n\n{catalogue.START}\n| old |\n{catalogue.END}\n")
    assert run("rules", "readme", "--check").exit_code == 1
    assert run("rules", "readme").exit_code == 0
    assert catalogue.current(target.read_text()) == catalogue.markdown_table(engine.load_rules())


def test_rules_readme_command_checks_and_rewrites(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{catalogue.START}\n| old |\n{catalogue.END}\n\nafter\n")
    res = run("rules", "readme", str(readme), "--check")
    assert res.exit_code == 1 and "stale" in res.output
    assert run("rules", "readme", str(readme)).exit_code == 0
    text = readme.read_text()
    assert catalogue.current(text) == catalogue.markdown_table(engine.load_rules())
    assert text.startswith("# x\n\n") and text.endswith(f"{catalogue.END}\n\nafter\n")
    assert run("rules", "readme", str(readme), "--check").exit_code == 0
    readme.write_text("no markers\n")
    res = run("rules", "readme", str(readme))
    assert res.exit_code == 2 and "rule-table" in res.output


def test_markdown_table_marks_preview_rules_and_escapes_cells(tmp_path):
    rules, _ = scaffolded(tmp_path)
    pack = engine.load_rules([rules])
    out = run("rules", "--rules", str(rules), "--format", "markdown").output
    assert out.strip() == catalogue.markdown_table(pack)
    assert "| `long-turn` (preview) | medium | heuristic | `long-turn` |" in out
    new = next(r for r in pack if r.id == "long-turn")
    # a cell is one line and a pipe in it does not split the row
    assert "| a \\| b c |" in catalogue.markdown_table([replace(new, brief="a | b\n  c")])


# --- a new rule: scaffold, preview, fallback cause ----------------------------------------


def test_rules_new_scaffolds_a_working_preview_rule_and_refuses_to_overwrite(tmp_path):
    rules, fixtures = scaffolded(tmp_path)
    rule = engine.load_rule(rules / "long-turn.toml")
    assert rule.preview and set(rule.params) == {"max_chars"}
    assert set(rule.docs) == set(schema.DOC_SECTIONS) and all(rule.docs.values())
    # the fixtures it writes hold the rule to its example: one positive, one negative case
    cases = load_cases(fixtures)
    assert [bool(c.ruleid) for c in cases] == [True, False]
    pack = engine.load_rules([rules])
    found = run_cases(cases, pack)
    for case in cases:
        assert not problems(case, {r.id: r for r in pack}), case
        assert verdict(case, found)[0] == [], verdict(case, found)[1]
    # the snapshot it writes is what the example finds
    pinned = json.loads((fixtures / "long-turn.snap.json").read_text())
    assert snapshot("long-turn", cases, found) == (fixtures / "long-turn.snap.json").read_text()
    assert (
        pinned["fires-TODO"][0]["message"] == "assistant turn with 83 visible chars (more than 40)"
    )
    assert pinned["fires-TODO"][0]["details"] == {"visible_chars": 83}
    # and its cause, with a fix that quotes a number of the findings
    assert causes.load_causes(rules)["long-turn"].params.keys() == {
        "reported_turns",
        "max_visible_chars",
    }
    # never overwritten, and nothing half-written
    again = run("rules", "new", "long-turn", "--dir", str(rules), "--fixtures-dir", str(fixtures))
    assert again.exit_code == 2 and "exists already" in again.output
    (rules / "other.toml").write_text("")
    res = run("rules", "new", "other", "--dir", str(rules), "--fixtures-dir", str(fixtures))
    assert res.exit_code == 2 and not (fixtures / "other.jsonl").exists()
    assert not (rules / "causes" / "other.toml").exists()
    for bad in ("Long_Turn", "9-lives", "a--b"):
        res = run("rules", "new", bad, "--dir", str(rules), "--fixtures-dir", str(fixtures))
        assert res.exit_code == 2 and "rule id" in res.output
    (tmp_path / "a-file").write_text("")
    res = run("rules", "new", "x", "--dir", str(tmp_path / "a-file"))
    assert res.exit_code == 2 and "a-file' is a file" in res.output


def test_rules_new_outside_any_checkout_makes_its_folders_and_rules_test_runs_them(
    tmp_path, monkeypatch
):
    """An installed forensics in a project of one's own: `rules new` writes rules/ and
    rules/fixtures/ there, and the command it prints checks the rule on its fixtures."""
    # As installed: the rule pack ships inside the package, with no tests/ beside it.
    installed = tmp_path / "site-packages"
    installed.mkdir()
    (installed / "rules").symlink_to(PACK)
    monkeypatch.setattr(content, "CHECKOUT", installed)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    res = run("rules", "new", "long-turn")
    assert res.exit_code == 0, res.output
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*.*")) == [
        "rules/causes/long-turn.toml",
        "rules/fixtures/long-turn.jsonl",
        "rules/fixtures/long-turn.snap.json",
        "rules/long-turn.toml",
    ]
    assert "\n  forensics rules test rules\n" in res.output
    assert "pytest" not in res.output  # no test suite here to run
    res = run("rules", "test", "rules")
    assert (res.exit_code, res.output) == (0, "rules: 2 fixture cases, all passed\n")
    # A rule that stops firing where its case says it must fails, saying where and why.
    fixtures = project / "rules" / "fixtures" / "long-turn.jsonl"
    text = fixtures.read_text()
    fixtures.write_text(text.replace(scaffold.POSITIVE.format(id="long-turn"), "short"))
    res = run("rules", "test", "rules")
    assert res.exit_code == 1
    assert "long-turn on " in res.output and "did not fire on ruleid turns [1]" in res.output
    assert "long-turn: findings differ from rules/fixtures/long-turn.snap.json" in res.output
    assert res.output.endswith("rules: 2 fixture cases, 2 failed\n")  # the case and its snapshot


def test_rules_new_points_at_a_cause_that_exists(tmp_path):
    """A rule named like a declared cause joins it: no second definition of the cause."""
    rules, _ = scaffolded(tmp_path, "degenerate-repetition")
    assert not (rules / "causes").exists()
    assert engine.load_rule(rules / "degenerate-repetition.toml").cause == "degenerate-repetition"
    assert not causes.cause_specs(engine.load_rules([rules]))["degenerate-repetition"].fallback


def test_rules_new_goes_into_the_checkout_it_runs_in_else_this_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # in no checkout: this one, whatever the working directory
    assert scaffold.targets(None, None) == (ROOT / "rules", ROOT / "tests" / "rule_fixtures")
    assert scaffold.targets(tmp_path, None) == (tmp_path, tmp_path / "fixtures")
    other = tmp_path / "other"  # in a checkout, from any of its directories: that one
    (other / "rules").mkdir(parents=True)
    (other / "tests" / "rule_fixtures").mkdir(parents=True)
    monkeypatch.chdir(other / "tests")
    rules, fixtures = other.resolve() / "rules", other.resolve() / "tests" / "rule_fixtures"
    assert scaffold.targets(None, None) == (rules, fixtures)
    assert scaffold.targets(other / "rules", None) == (other / "rules", fixtures)
    assert catalogue.document(ROOT / "rules") == ROOT / catalogue.CATALOGUE
    assert catalogue.document(tmp_path) is None


def test_a_scaffolded_rule_passes_the_checks_of_the_suite(tmp_path, monkeypatch):
    """`forensics rules new` with no option, run from another directory, into a copy of this
    checkout: the new rule, its fixtures, snapshot, cause and the catalogue pass what
    test_rule_fixtures.py, the catalogue check, the sample-log tests and the cause checks ask of
    every rule, with no other edit."""
    checkout = tmp_path / "checkout"
    shutil.copytree(PACK, checkout / "rules")
    (checkout / "tests" / "rule_fixtures").mkdir(parents=True)
    (checkout / "docs").mkdir()
    shutil.copy(ROOT / catalogue.CATALOGUE, checkout / catalogue.CATALOGUE)
    rules, fixtures = checkout / "rules", checkout / "tests" / "rule_fixtures"
    # forensics as if it ran from that checkout: its rule pack is the copy
    monkeypatch.setattr(content, "CHECKOUT", checkout)
    assert engine.default_rules_dir() == rules
    samples = ("output2.txt", "tau_bench_results_control.json")
    before = {name: forensics.scan([str(SAMPLES / name)]) for name in samples}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = run("rules", "new", "long-turn")
    assert res.exit_code == 0, res.output
    assert f"updated the rule table of {checkout / catalogue.CATALOGUE}" in res.output
    assert list(elsewhere.iterdir()) == []  # nothing lands where it ran

    pack = engine.load_rules()
    by_id = {r.id: r for r in pack}
    assert by_id["long-turn"].preview
    # test_rule_fixtures: well-formed cases, positive and negative, exactly the expected turns,
    # the pinned snapshot, no fixture without its rule
    cases = load_cases(fixtures)
    assert {c.rule for c in cases} <= set(by_id)
    assert any(c.ruleid for c in cases) and any(not c.ruleid for c in cases)
    found = run_cases(cases, pack)
    for case in cases:
        assert not problems(case, by_id), case
        assert verdict(case, found)[0] == [], verdict(case, found)[1]
    assert (
        snapshot_diff(fixtures / "long-turn.snap.json", snapshot("long-turn", cases, found)) is None
    )
    # the catalogue check
    document = (checkout / catalogue.CATALOGUE).read_text(encoding="utf-8")
    assert catalogue.current(document) == catalogue.markdown_table(pack)
    assert "| `long-turn` (preview) |" in document
    # test_sample_logs: the example fires on no real log, so every pinned finding and cause
    # stays as it is
    for name in samples:
        after = forensics.scan([str(SAMPLES / name)])
        assert (
            after.findings["finding_id"].to_list() == before[name].findings["finding_id"].to_list()
        )
        assert [c.id for c in after.diagnosis.causes] == [
            c.id for c in before[name].diagnosis.causes
        ]
    # the cause files still load, every cause has a class, and the new cause's fix quotes the
    # findings' numbers
    specs = causes.cause_specs(pack)
    assert specs["long-turn"].score_class in causes.SCORE_CLASSES
    text = "A long turn, an example of long-turn. " * 3
    turns, trajectories = episode_tables({"a": [{"role": "assistant", "content": text}]})
    found = engine.check(turns, trajectories, pack).findings
    d = diagnose.diagnose(found, turns, trajectories, pack, rules)
    (cause,) = d.causes
    assert cause.id == "long-turn" and cause.rules == ["long-turn"]
    chars = len(text.strip())
    assert cause.facts["max_visible_chars"] == chars
    assert cause.fixes[0]["detail"].startswith(
        f"1 turn in 1 trajectory, up to {chars} visible characters."
    )


def test_preview_rules_are_marked_in_rules_and_explain(tmp_path):
    rules, _ = scaffolded(tmp_path)
    listing = run("rules", "--rules", str(rules)).output
    line = next(x for x in listing.splitlines() if x.startswith("long-turn "))
    assert "[preview] TODO" in line
    stable = {r.id for r in engine.load_rules() if not r.preview}
    for line in run("rules").output.splitlines():
        assert ("[preview]" in line) == (line.split()[0] not in stable), line
    for args in (
        ("rules", "explain", "long-turn", "--rules", str(rules)),
        ("rules", "--rules", str(rules), "explain", "long-turn"),
    ):
        out = run(*args).output
        assert "status preview" in out
        assert "## parameters\nmax_chars = 40\n  Visible characters above which" in out
        assert "params = { long-turn = { max_chars = 40 } }" in out
    assert "status preview" not in run("rules", "explain", "think-loop").output


def _tiny_corpus(tmp_path: Path) -> Path:
    long_turn = {
        "case": "long",
        "kind": "planted",
        "turns": [
            {"role": "user", "actor": "user_sim", "content": "Hi"},
            {
                "role": "assistant",
                "actor": "agent",
                "content": "x" * 80 + " (an example of long-turn)",
                "finish_reason": "stop",
            },
        ],
        "expect": [],
    }
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps(long_turn) + "\n")
    return path


def test_preview_rules_are_exempt_from_the_accuracy_corpus_and_others_are_not(tmp_path):
    rules, _ = scaffolded(tmp_path)
    corpus = accuracy.load_corpus(_tiny_corpus(tmp_path))
    report = accuracy.evaluate(corpus, engine.load_rules([rules]))
    assert "long-turn" not in {s.rule for s in report.scores}
    assert report.preview["long-turn"] == 1  # it ran: one finding, not scored
    assert not [r for r in report.false_positives if r["rule"] == "long-turn"]
    assert "long-turn" not in accuracy.table(report)
    # the same rule, no longer preview: now it must be measured
    path = rules / "long-turn.toml"
    path.write_text(path.read_text().replace('status = "preview"\n', ""))
    report = accuracy.evaluate(corpus, engine.load_rules([rules]))
    assert accuracy.unmeasured(report)["long-turn"] == 0
    assert next(s for s in report.scores if s.rule == "long-turn").fp == 1


def test_a_rule_without_a_cause_entry_gets_a_cause_of_its_own(tmp_path):
    rules, _ = scaffolded(tmp_path)
    (rules / "causes" / "long-turn.toml").unlink()
    path = rules / "long-turn.toml"
    # braces in the documented fix are text, not fix-template parameters
    path.write_text(
        path.read_text().replace(
            "TODO: what to change,", 'Send {"enable_thinking": false} and {max_tokens},'
        )
    )
    pack = engine.load_rules([rules])
    long_turn = {"role": "assistant", "content": "y" * 60 + " (an example of long-turn)"}
    found, d = _diagnosis(pack, {"a": [long_turn]})
    assert found["rule"].to_list() == ["long-turn"]
    (cause,) = d.causes
    assert (cause.id, cause.title) == ("long-turn", "TODO: what goes wrong, in one line")
    assert cause.fixes[0]["action"] == "Follow the fix documented for long-turn"
    assert cause.fixes[0]["detail"].startswith('Send {"enable_thinking": false} and {max_tokens},')
    assert cause.rules_to_zero == ["long-turn"]
    assert causes.cause_specs(pack)["long-turn"].fallback
    assert not causes.cause_specs(pack)["truncated-output"].fallback


# --- causes.toml: strict, and merged from --rules directories -------------------------------


def test_causes_toml_in_a_rules_directory_is_merged_over_the_pack(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(PACK / "retry-storm.toml", user / "retry-storm.toml")
    rule_file(
        user,
        "causes.toml",
        '[[cause]]\nid = "retry-storm"\ntitle = "Our retries"\norder = 1\n'
        '[[cause.fix]]\naction = "Fix our client ({max_attempts} attempts)"\ndetail = "d"\n\n'
        '[[cause]]\nid = "brand-new"\ntitle = "New"\norder = 5\n',
    )
    pack = engine.load_rules([user])
    specs = causes.cause_specs(pack)
    assert specs["retry-storm"].title == "Our retries" and "brand-new" in specs
    assert specs["truncated-output"].title.startswith("Output truncated")  # the pack's, kept
    # empty answers: an HTTP error would make the storm http-error's symptom
    storm = [{"role": "assistant", "request_hash": "h", "content": ""} for _ in range(3)]
    _, d = _diagnosis(pack, {"a": storm})
    (cause,) = d.causes
    assert cause.title == "Our retries"
    assert [f["action"] for f in cause.fixes] == ["Fix our client (3 attempts)"]
    # and only with the directory: the pack alone keeps its own cause
    _, d = _diagnosis(engine.load_rules(), {"a": storm})
    assert d.causes[0].title != "Our retries"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[[cause]]\nid = "x"\ntitle = "t"\norder = 1\nexplain = []\n', "cause[0].explain"),
        (
            '[[cause]]\nid = "x"\ntitle = "t"\norder = 1\n[[cause.fix]]\naction = "a"\n'
            'detail = "d"\nwhne = "k"\n',
            "cause[0].fix[0].whne",
        ),
        ("causes = []\n", "causes"),
        (
            '[[cause]]\nid = "x"\ntitle = "t"\norder = 1\n[cause.params.n]\nsql = "select 1"\n'
            "dflt = 0\n",
            "cause[0].params.n.dflt",
        ),
        ('[macro.m]\nsql = "1"\nargs = []\nbody = "2"\n', "macro.m.body"),
    ],
)
def test_cause_files_are_strict(tmp_path, text, key):
    path = rule_file(tmp_path, "causes.toml", text)
    with pytest.raises(engine.RuleError, match=re.escape(f"{path}: unknown key {key}")):
        causes.load_causes(tmp_path)


def test_a_broken_causes_toml_in_a_rules_directory_stops_the_scan(tmp_path):
    rule_file(tmp_path, "causes.toml", '[[cause]]\nid = "x"\ntitle = "t"\norder = 1\nfixes = []\n')
    res = run("scan", str(SAMPLES / "output2.txt"), "--no-report", "--rules", str(tmp_path))
    assert res.exit_code == 2
    assert f"{tmp_path / 'causes.toml'}: unknown key cause[0].fixes" in res.output


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('order = "1"', "cause[0].order must be an integer"),
        ('order = 1\nclass = "user"', "class must be one of infra, model"),
        ('order = 1\nexplains = "x"', "cause[0].explains must be a list"),
        ("order = 1\nparams = { n = 3 }", "cause[0].params.n must be a table"),
        ('order = 1\nparams = { N = "select 1" }', "cause x: params.N: a parameter name is"),
        (
            'order = 1\n[[cause.fix]]\naction = "{nope} twice"\ndetail = "d"',
            "cause x: fix 1 names nope, which is not a parameter of the cause",
        ),
        (
            'order = 1\n[[cause.fix]]\naction = "a"\ndetail = "d"\nwhen = "_step"\n'
            '[cause.params]\n_step = "select true"',
            "fix 1 names _step, which is not a parameter",  # a step is never shown
        ),
    ],
)
def test_cause_file_errors_name_the_file_the_cause_and_the_key(tmp_path, text, error):
    path = rule_file(tmp_path, "causes.toml", f'[[cause]]\nid = "x"\ntitle = "t"\n{text}\n')
    with pytest.raises(engine.RuleError, match=re.escape(error)) as exc:
        causes.cause_specs([], [tmp_path])
    assert str(exc.value).startswith(f"{path}: ")


def test_one_cause_per_file_in_causes_beside_causes_toml(tmp_path):
    (tmp_path / "causes").mkdir()
    one = '[[cause]]\nid = "{}"\ntitle = "T {}"\norder = 1\n'
    rule_file(tmp_path, "causes.toml", one.format("a", "a"))
    rule_file(tmp_path / "causes", "b.toml", one.format("b", "b"))
    assert {"a", "b"} <= set(causes.load_causes(tmp_path))
    assert causes.cause_files(tmp_path) == [tmp_path / "causes.toml", tmp_path / "causes/b.toml"]
    rule_file(tmp_path / "causes", "c.toml", one.format("a", "again"))
    with pytest.raises(engine.RuleError, match=r"cause a is defined in .*causes\.toml already"):
        causes.load_causes(tmp_path)


# A rule that hands diagnosis its numbers, and a cause whose fixes quote them.
TINY_DATA = '''id = "tiny"
title = "Long turns"
severity = "low"
confidence = "hard"
cause = "tiny"
summary = "s"

[query]
sql = """
select trajectory_id, turn_index, 'long' as message, '' as evidence,
  {'chars': visible_chars, 'tag': case when visible_chars > 20 then 'big' end} as data
from turns where role = 'assistant' and visible_chars > 5"""
'''
TINY_CAUSE = """[macro.twice]
args = ["x"]
sql = "2 * x"

[lookup.family]
'qwen3' = "Qwen3"
'qwen|llama' = "Qwen or Llama"

[[cause]]
id = "tiny"
title = "Tiny"
order = 1

[[cause.fix]]
action = "Shorten {n} turns of {family} (up to {most} chars, twice {twice_most})"
detail = "Tags: {tags}; largest {largest}."

[[cause.fix]]
action = "Only when a turn is big"
detail = "d"
when = "has_big"

[cause.params]
n = "select count(*) from findings"
most = "select max((data->'chars')::bigint) from findings"
_most = "select max((data->'chars')::bigint) from findings"
twice_most = "select twice(getvariable('_most'))"
tags = "select counts_text(tally(list(data->>'tag'))) from findings"
has_big = "select count(*) filter (where data->>'tag' = 'big') > 0 from findings"
family = "select coalesce(lookup('family', turn_model()), 'an unknown family')"

[cause.params.largest]
sql = "select max(visible_chars) from turns where visible_chars > 1000"
default = "none"
"""


def test_fix_parameters_are_queries_declared_beside_the_fix(tmp_path):
    """A new cause quotes numbers from its findings with nothing but its cause file: queries
    over its findings' data and turns, the pack's macros (counts_text, tally, turn_model), its
    own macros and lookup tables, steps (_name) read by later parameters, defaults."""
    rule_file(tmp_path, "tiny.toml", TINY_DATA)
    rule_file(tmp_path, "causes.toml", TINY_CAUSE)
    pack = engine.load_rules([tmp_path])
    model = "Qwen/Qwen3-8B"
    turns = [
        {"role": "assistant", "content": "x" * 30, "model": model},
        {"role": "assistant", "content": "y" * 8, "model": model},
        {"role": "assistant", "content": "z" * 9, "model": model},
    ]
    _, d = _diagnosis(pack, {"a": turns})
    (cause,) = [c for c in d.causes if c.id == "tiny"]
    assert [f["action"] for f in cause.fixes] == [
        "Shorten 3 turns of Qwen3 (up to 30 chars, twice 60)",
        "Only when a turn is big",
    ]
    assert cause.fixes[0]["detail"] == "Tags: big ×1; largest none."
    # a step is read by later parameters and never shown
    assert "_most" not in cause.facts and cause.facts["most"] == 30
    # lookup patterns match anywhere in the model id, case-insensitively, the first one wins
    llama = [dict(t, model="meta-Llama-3") for t in turns[1:]]
    _, d = _diagnosis(pack, {"a": llama})
    (cause,) = [c for c in d.causes if c.id == "tiny"]
    assert cause.fixes[0]["action"] == "Shorten 2 turns of Qwen or Llama (up to 9 chars, twice 18)"
    _, d = _diagnosis(pack, {"a": [dict(t, model=None) for t in turns[1:]]})
    assert d.causes[0].facts["family"] == "an unknown family"
    assert len(cause.fixes) == 1  # no big turn: the fix `when` has_big is left out


def test_a_failing_parameter_query_names_the_file_the_cause_and_the_parameter(tmp_path):
    rule_file(tmp_path, "tiny.toml", TINY_DATA)
    path = rule_file(
        tmp_path, "causes.toml", TINY_CAUSE.replace("max(visible_chars)", "max(no_such_column)")
    )
    one = {"a": [{"role": "assistant", "content": "x" * 9}]}
    with pytest.raises(engine.RuleError, match=re.escape(f"{path}: cause tiny: params.largest:")):
        _diagnosis(engine.load_rules([tmp_path]), one)
    rows = TINY_CAUSE.replace("select count(*) from findings", "select turn_index from findings")
    rule_file(tmp_path, "causes.toml", rows)
    two = {"a": [{"role": "assistant", "content": "x" * 9}] * 2}
    with pytest.raises(engine.RuleError, match=r"params\.n: .*More than one row"):
        _diagnosis(engine.load_rules([tmp_path]), two)


# --- rule files are strict ------------------------------------------------------------------

GOOD = """id = "tiny"
title = "t"
severity = "low"
confidence = "heuristic"
cause = "tiny"
summary = "s"

[params.min_chars]
default = 10
doc = "Visible characters from which an assistant turn is reported."

[docs]
detects = "d"

[query]
sql = '''
select trajectory_id, turn_index, 'm' as message, '' as evidence
from turns where visible_chars >= {min_chars}'''
"""


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ('summary = "s"', 'summary = "s"\nserverity = "low"', "unknown key serverity"),
        ('detects = "d"', 'detects = "d"\nwhy_it_matters = "w"', "unknown key docs.why_it_matters"),
        ("[query]\n", '[query]\nengine = "duckdb"\n', "unknown key query.engine"),
        ('doc = "Visible', 'max = 3\ndoc = "Visible', "unknown key params.min_chars.max"),
        ('summary = "s"', 'summary = "s"\nstatus = "beta"', "status must be one of"),
        ('summary = "s"', "summary = 3", "summary must be a string"),
        ("default = 10", 'default = "10"', "default must be an integer, number or boolean"),
        ('doc = "Visible characters from which an assistant turn is reported."', "", "doc must"),
        ("{min_chars}", "{min_char}", "uses {min_char} but [params] has no such key"),
        ("{min_chars}", "10", "params.min_chars is declared but the query never uses it"),
    ],
)
def test_rule_files_are_strict(tmp_path, old, new, error):
    assert old in GOOD
    path = rule_file(tmp_path, "tiny.toml", GOOD.replace(old, new, 1))
    with pytest.raises(engine.RuleError, match=re.escape(error)) as exc:
        engine.load_rule(path)
    assert str(path) in str(exc.value)


def test_a_broken_rule_in_a_rules_directory_is_a_usage_error(tmp_path):
    rule_file(tmp_path, "tiny.toml", GOOD.replace("[docs]", "[doc]"))
    for args in (
        ("rules", "--rules", str(tmp_path)),
        ("rules", "explain", "x", "--rules", str(tmp_path)),
    ):
        res = run(*args)
        assert res.exit_code == 2 and "unknown key doc" in res.output


# --- parameters ---------------------------------------------------------------------------


def test_parameters_are_substituted_as_typed_literals(tmp_path):
    rule = engine.load_rule(rule_file(tmp_path, "tiny.toml", GOOD))
    assert rule.query.endswith("visible_chars >= 10")
    assert rule.with_params({"min_chars": 25}, "here").query.endswith("visible_chars >= 25")
    for value, message in (("10; drop table turns", "must be an integer"), (2.5, "integer")):
        with pytest.raises(params.ParamError, match=message):
            rule.with_params({"min_chars": value}, "here")
    similarity = next(r for r in engine.load_rules() if r.id == "think-loop").params
    assert similarity["min_similarity"].with_value(1).literal() == "1.0"
    flag = params.Param("on", True, "d", True)
    assert flag.with_value(False).literal() == "false"
    with pytest.raises(params.ParamError):
        flag.with_value(0)
    with pytest.raises(params.ParamError, match="finite"):
        similarity["min_similarity"].with_value(float("nan"))


def test_pack_thresholds_are_parameters():
    pack = {r.id: r for r in engine.load_rules()}
    assert set(pack["think-loop"].params) == {
        "min_similarity",
        "min_containment",
        "min_capped_containment",
        "opening_words",
        "min_monologue_chars",
        "min_chain_turns",
        "min_compression_ratio",
    }
    assert {k: p.default for k, p in pack["think-loop"].params.items()} == {
        "min_similarity": 0.5,
        "min_containment": 0.85,
        "min_capped_containment": 0.6,
        "opening_words": 8,
        "min_monologue_chars": 800,
        "min_chain_turns": 3,
        "min_compression_ratio": 4.0,
    }
    assert pack["retry-storm"].params["min_attempts"].default == 3
    assert pack["repeated-tool-call"].params["min_calls"].default == 3


def test_config_params_override_and_are_validated_strictly(tmp_path):
    pack = engine.load_rules()
    tuned = config.parse({"params": {"think-loop": {"min_similarity": 0.6}}}).apply(pack)
    loop = next(r for r in tuned if r.id == "think-loop")
    assert loop.params["min_similarity"].value == 0.6
    assert "prev_same_actor_similarity >= 0.6\n" in loop.query
    for table, error in (
        ({"nope": {"x": 1}}, "config: params nope: no such rule"),
        ({"think-loop": {"min_similarty": 0.6}}, "unknown parameter 'min_similarty'"),
        ({"think-loop": {"min_similarity": "0.6"}}, "min_similarity must be a number"),
        ({"think-loop": {"min_chain_turns": 3.5}}, "min_chain_turns must be an integer"),
        ({"think-loop": 0.6}, "params.think-loop must be a table"),
    ):
        with pytest.raises(config.ConfigError, match=re.escape(error)):
            config.parse({"params": table}).apply(pack)
    # the scan reads them: a wrong one is a usage error (exit 2) that names the parameter
    cfg = tmp_path / "forensics.toml"
    cfg.write_text('params = { retry-storm = { min_attempts = "many" } }\n')
    res = run("scan", str(SAMPLES / "output2.txt"), "--no-report", "--config", str(cfg))
    assert res.exit_code == 2 and "min_attempts must be an integer" in res.output


def test_fixture_params_are_checked_against_the_rule(tmp_path):
    rules, fixtures = scaffolded(tmp_path)
    path = fixtures / "long-turn.jsonl"
    lines = path.read_text().splitlines()
    case = json.loads(lines[0]) | {"params": {"max_chars": "500"}}
    path.write_text("\n".join([json.dumps(case), lines[1]]) + "\n")
    pack = {r.id: r for r in engine.load_rules([rules])}
    (bad, _) = load_cases(fixtures)
    assert problems(bad, pack) == [
        "params: max_chars must be an integer (like its default 40), not '500'"
    ]
    # set right, it changes what the rule does on that case only
    case["params"] = {"max_chars": 500}
    case["expect"] = {"ruleid": [], "ok": [0, 1]}
    path.write_text("\n".join([json.dumps(case), lines[1]]) + "\n")
    cases = load_cases(fixtures)
    found = run_cases(cases, list(pack.values()))
    assert all(verdict(c, found)[0] == [] for c in cases)
    assert found.of(cases[0]).is_empty()


# --- rules hand structured values to diagnosis --------------------------------------------


def test_data_column_becomes_details(tmp_path):
    rule_file(
        tmp_path,
        "tiny.toml",
        GOOD.replace("'' as evidence", "'' as evidence, {'n': visible_chars, 'ok': true} as data"),
    )
    turns, trajectories = episode_tables({"a": [{"role": "assistant", "content": "z" * 12}]})
    rules = engine.load_rules([tmp_path])
    found = engine.check(turns, trajectories, rules).findings
    tiny = found.filter(pl.col("rule") == "tiny")
    assert json.loads(tiny["details"].item()) == {"n": 12, "ok": True}
    assert found.columns == schema.FINDINGS.names
    rule_file(tmp_path, "tiny.toml", GOOD.replace("'' as evidence", "'' as evidence, 'x' as data"))
    with pytest.raises(engine.RuleError, match="data column must be a struct"):
        engine.check(turns, trajectories, engine.load_rules([tmp_path]))


# rule: (the episode, text of the rule as the pack writes it, a rewording, what a fix names)
REWORDED = {
    "retry-storm": (
        {"turns": [{"role": "assistant", "request_hash": "h", "content": ""}] * 4},
        "'the same request was sent ' || attempts || ' times in a row",
        "'identical request, ' || attempts || ' attempts in a row",
        "up to 4 attempts each",
    ),
    "episode-crashed": (
        {"error": "RateLimitError: slow down\nTraceback ..."},
        "'episode ended in an exception and left no turns: ' || head",
        "'crash: ' || head || ' (no turns)'",
        "Fix the exception: RateLimitError: slow down",
    ),
    # an episode that died on the overflow: its limit used to be read out of the evidence
    "context-overflow": (
        {"error": "BadRequestError: This model's maximum context length is 32768 tokens."},
        "'the episode died on a context-window error before leaving any turn' as message,\n"
        "  left(coalesce(x.error, '(termination reason ' || x.termination_reason || ')'), 240)",
        "'context window exceeded before any turn' as message,\n  '(elided)'",
        "larger context window than 32,768 tokens",
    ),
}


@pytest.mark.parametrize("rule", sorted(REWORDED))
def test_fix_texts_survive_a_reworded_message(tmp_path, rule):
    """Fix parameters come from the rule's data: rewording its message (or its evidence)
    changes no fix text."""
    episode, old, new, named = REWORDED[rule]
    turns, trajectories = episode_tables(
        {"a": episode.get("turns", [{"role": "user", "content": "x"}])}
    )
    if "error" in episode:  # an episode that left no turns
        turns = turns.clear()
        trajectories = trajectories.with_columns(
            pl.lit(0, pl.Int64).alias("turn_count"), pl.lit(episode["error"]).alias("error")
        )
    source = (PACK / f"{rule}.toml").read_text()
    assert old in source
    rule_file(tmp_path, f"{rule}.toml", source.replace(old, new))

    def fixes(rules: list[engine.Rule]) -> tuple[list[str], list[dict[str, str]]]:
        found = engine.check(turns, trajectories, rules).findings
        d = diagnose.diagnose(found, turns, trajectories, rules, PACK)
        return sorted(found["message"].to_list()), [f for c in d.causes for f in c.fixes]

    messages, before = fixes(engine.load_rules())
    reworded, after = fixes(engine.load_rules([tmp_path]))
    assert messages != reworded and before  # the text did change, and there is a fix
    assert before == after
    assert named in " ".join(f["action"] + " " + f["detail"] for f in after)
