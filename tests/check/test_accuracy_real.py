"""The scorer of the real corpus (benchmarks/accuracy_real.py) and the files it reads.

The full measure scans all 159 corpus files and takes minutes: it runs from benchmarks/, not
here. These tests scan a handful of small files and hold the matcher to its rules (same place
matches, another place or another episode does not), and keep the labels, the crosswalk and
the adjudications well-formed: every line names a corpus file, a labelled incident, a rule of
the pack.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tomllib
from dataclasses import replace

import pytest

from forensics.check import engine

from conftest import ROOT

CORPUS = ROOT / "tests" / "data" / "corpus"
_spec = importlib.util.spec_from_file_location(
    "accuracy_real", ROOT / "benchmarks" / "accuracy_real.py"
)
assert _spec and _spec.loader
ar = importlib.util.module_from_spec(_spec)
sys.modules["accuracy_real"] = ar  # dataclasses resolve their module by name
_spec.loader.exec_module(ar)

MAX_TOKENS = "files/api_capture/DataDog__dd-trace-py__openai_chat_completions_post_3f27d542.json"
CASSETTE = "files/http_cassette/BoxcarsAI__boxcars__calculator.yml"
ATROPOS = "files/atropos_groups/NousResearch__atropos__subjreward.jsonl"
HEALTHY = "files/http_cassette/AgentOps-AI__agentops__test_litellm_provider.yaml"
FILES = (MAX_TOKENS, CASSETTE, ATROPOS, HEALTHY)


@pytest.fixture(scope="module")
def corpus() -> ar.Corpus:
    return ar.load_corpus()


@pytest.fixture(scope="module")
def pack() -> ar.Pack:
    return ar.load_pack()


@pytest.fixture(scope="module")
def scans() -> dict:
    return ar.scan_corpus(list(FILES), jobs=1)


def _label(corpus: ar.Corpus, file: str, index: int = 0) -> ar.Label:
    return next(lab for lab in corpus.labels if lab.file == file and lab.index == index)


def _findings(scans: dict, file: str, rule: str) -> list[ar.Finding]:
    return [f for f in scans[file]["findings"] if f.rule == rule]


def test_a_finding_at_the_labelled_place_matches(corpus, pack, scans):
    label = _label(corpus, MAX_TOKENS)
    (finding,) = _findings(scans, MAX_TOKENS, "max-tokens")
    assert label.kind == "max-tokens" and label.line == 53
    assert ar.matches(label, finding, pack, corpus.crosswalk)


def test_a_finding_elsewhere_in_the_file_does_not(corpus, pack, scans):
    """The cassette's thinking-budget label sits in interaction 2 (line 342); the finding points
    at the line where that interaction starts. Moved to another interaction, it no longer
    matches; a finding of another kind at the right place does not match either."""
    label = _label(corpus, CASSETTE, 1)
    assert (label.kind, label.episode, label.line) == ("thinking-budget-exhausted", 2, 342)
    (finding,) = _findings(scans, CASSETTE, "thinking-budget-exhausted")
    assert finding.span and finding.span[0] <= 342 <= finding.span[1]
    assert ar.matches(label, finding, pack, corpus.crosswalk)
    elsewhere = replace(finding, source_line=2, span=(2, 200))
    assert not ar.matches(label, elsewhere, pack, corpus.crosswalk)
    other_kind = replace(finding, rule="http-error", cause="http-error")
    assert not ar.matches(label, other_kind, pack, corpus.crosswalk)


def test_the_same_cause_or_the_crosswalk_give_the_right_kind(corpus, pack, scans):
    label = _label(corpus, CASSETTE, 1)
    # max-tokens: the crosswalk (kinds.toml) lists it for thinking-budget-exhausted
    (capped,) = _findings(scans, CASSETTE, "max-tokens")
    assert ar.matches(label, capped, pack, corpus.crosswalk)
    # unclosed-think and max-tokens share the cause truncated-output
    unclosed = replace(label, kind="unclosed-think")
    assert ar.right_kind(unclosed, capped, pack, corpus.crosswalk)
    assert not ar.right_kind(
        replace(label, kind="other:no-such-kind"), capped, pack, corpus.crosswalk
    )
    assert ar.covering_rules("other:no-such-kind", pack, corpus.crosswalk) == []
    assert "max-tokens" in ar.covering_rules("unclosed-think", pack, corpus.crosswalk)


def test_the_labellers_episode_must_be_the_findings(corpus, pack, scans):
    """Atropos: 'group line 1, rollout 3' is the reader's task group-1, trial 3."""
    label = _label(corpus, ATROPOS, 0)
    assert label.episode == "group line 1, rollout 3"
    assert ar.episode_of(label) == ("group-1", 3)
    hits = [f for f in scans[ATROPOS]["findings"] if ar.matches(label, f, pack, corpus.crosswalk)]
    assert [(f.task_id, f.trial) for f in hits] == [("group-1", 3)]
    other_rollout = replace(label, episode="group line 1, rollout 2")
    assert not any(ar.matches(other_rollout, f, pack, corpus.crosswalk) for f in hits)
    assert ar.episode_of(replace(label, episode="task 29")) == ("29", None)
    assert ar.episode_of(replace(label, episode="t_1 (sim 4f-2a)")) == ("t_1", None)
    assert ar.episode_of(replace(label, episode=3)) == (None, None)  # a cassette interaction


def test_scores_raw_and_adjudicated(corpus, pack, scans):
    result = ar.evaluate(corpus, pack, scans)
    raw = result.figures["raw"]
    assert raw.overall.findings == sum(len(s["findings"]) for s in scans.values())
    assert not result.unmatched_findings
    assert raw.healthy == 1 and not raw.healthy_alarmed
    # the atropos file's two incidents are found; the cassette's code-error feedback is not covered
    assert raw.not_covered == {"other:code-error-feedback": 1}
    assert [lab.kind for lab in result.unmatched_labels] == ["other:code-error-feedback"]
    (adj,) = result.adjudicated.values()
    assert adj["verdict"] == "out-of-scope"
    assert result.figures["adjudicated"].end_to_end.labels == raw.end_to_end.labels - 1
    block = ar.markdown(result)
    assert "| `max-tokens` | hard |" in block and "4 files from 4 repositories" in block


def test_command_writes_the_figures(tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert ar.main(["--only", MAX_TOKENS, "--json", str(out), "-j", "1"]) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["corpus"]["files"] == 1
    assert figures["figures"]["raw"]["overall"]["precision"] == 1.0
    assert "precision 1.00 (1/1)" in capsys.readouterr().out


# --- the files the scorer reads ----------------------------------------------------------------

ATTRIBUTIONS = {"infra", "model", "simulator", "unclear"}
CONFIDENCES = {"high", "medium", "low"}
KIND = re.compile(r"other:[a-z0-9]+(?:-[a-z0-9]+)*")


def _label_records() -> list[tuple[str, int, dict]]:
    out = []
    for path in sorted((CORPUS / "labels").glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            out.append((f"{path.name}:{n}", n, json.loads(line)))
    return out


def test_every_label_line_is_well_formed_and_names_a_corpus_file():
    sources = {e["path"] for e in tomllib.loads((CORPUS / "sources.toml").read_text())["file"]}
    rules = {r.id for r in engine.load_rules()}
    seen: set[str] = set()
    problems = []
    for where, _, rec in _label_records():
        file = rec.get("file")
        if file not in sources or not (CORPUS / file).is_file():
            problems.append(f"{where}: {file} is not a corpus file")
            continue
        if file in seen:
            problems.append(f"{where}: {file} labelled twice")
        seen.add(file)
        if (
            not re.fullmatch(r"L\d+", str(rec.get("labeller")))
            or f"{rec['labeller']}.jsonl" != where.split(":")[0]
        ):
            problems.append(f"{where}: labeller {rec.get('labeller')!r} is not its file's")
        if not isinstance(rec.get("healthy"), bool) or not isinstance(
            rec.get("agent_artifact"), bool
        ):
            problems.append(f"{where}: healthy and agent_artifact are booleans")
        incidents = rec.get("incidents")
        if not isinstance(incidents, list) or rec.get("healthy") == bool(incidents):
            problems.append(f"{where}: healthy is true exactly when there is no incident")
            continue
        n_lines = len((CORPUS / file).read_bytes().splitlines())
        for i, inc in enumerate(incidents):
            kind = inc.get("kind", "")
            if kind not in rules and not KIND.fullmatch(kind):
                problems.append(f"{where} incident {i}: kind {kind!r} is no rule and no other:slug")
            if inc.get("attribution") not in ATTRIBUTIONS:
                problems.append(f"{where} incident {i}: attribution {inc.get('attribution')!r}")
            if inc.get("confidence") not in CONFIDENCES:
                problems.append(f"{where} incident {i}: confidence {inc.get('confidence')!r}")
            line = inc.get("line")
            if line is not None and not (isinstance(line, int) and 1 <= line <= n_lines):
                problems.append(f"{where} incident {i}: line {line!r} outside the file")
            if not inc.get("evidence") or len(inc["evidence"]) > 200 or not inc.get("locator"):
                problems.append(f"{where} incident {i}: evidence (up to 200 chars) and locator")
    assert not problems, "\n".join(problems)
    assert seen == sources, f"corpus files without a label: {sorted(sources - seen)}"


def test_the_crosswalk_names_rules_of_the_pack_and_says_why():
    rules = {r.id for r in engine.load_rules()}
    walk = tomllib.loads((CORPUS / "kinds.toml").read_text(encoding="utf-8"))
    named = set(walk["place"]["episode_rules"])
    for entry in walk["kind"]:
        assert entry["kind"] in rules or KIND.fullmatch(entry["kind"]), entry
        assert entry["reason"].strip(), entry
        named |= set(entry["rules"])
    assert named <= rules, f"not rules of the pack: {sorted(named - rules)}"


def test_every_adjudication_names_a_disagreement_it_can_be_found_by():
    """Each line is a verdict with its reason on a finding (file, rule, episode, turn) or on a
    labelled incident (file, labeller, its index and kind); a label judged wrong quotes the
    file; every false positive the adjudication blames on the tool is listed for a
    regression test in FALSE_POSITIVES.md."""
    labels = {(rec["file"], rec["labeller"]): rec for _, _, rec in _label_records()}
    fp_list = (CORPUS / "FALSE_POSITIVES.md").read_text(encoding="utf-8")
    for adj in ar.load_adjudications(CORPUS / "adjudication.jsonl"):
        where = f"adjudication.jsonl:{adj['_line']}"
        assert (CORPUS / adj["file"]).is_file(), where
        assert adj.get("reason", "").strip() and adj.get("class", "").strip(), where
        if adj["side"] == "label":
            rec = labels[(adj["file"], adj["labeller"])]
            assert rec["incidents"][adj["incident"]]["kind"] == adj["kind"], where
        else:
            assert {"rule", "episode", "turn"} <= set(adj), where
            if adj["verdict"] == "tool-wrong":
                assert f"`{adj['rule']}`" in fp_list and adj["file"].split("/")[-1] in fp_list, (
                    f"{where}: a tool-wrong false positive is listed in FALSE_POSITIVES.md"
                )
        if adj["verdict"] == "label-wrong":
            text = (CORPUS / adj["file"]).read_text(encoding="utf-8", errors="replace")
            assert adj.get("quote") and adj["quote"] in text, where
