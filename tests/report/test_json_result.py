"""The --json result writes each finding once and no turn text unless asked (issue 23): its size
follows the findings and the episodes, not the text of the input."""

from __future__ import annotations

import json
import random

from click.testing import CliRunner

import forensics
from forensics.cli import cli
from forensics.report import model as report
from forensics.report.render import jsonout

from conftest import SAMPLES


def _scan_json(tmp_path, *extra: str, path: str = str(SAMPLES / "output2.txt")) -> dict:
    out = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["scan", path, "--no-report", "--json", str(out), *extra])
    assert res.exit_code == 1, res.output  # output2 has findings: the gate fails
    return json.loads(out.read_text(encoding="utf-8"))


def test_each_finding_is_written_once_and_causes_name_theirs_by_id(tmp_path):
    doc = _scan_json(tmp_path)
    assert doc["schema_version"] == report.SCHEMA_VERSION == 4
    text = json.dumps(doc, ensure_ascii=False)
    ids = [f["id"] for f in doc["findings"]]
    assert len(ids) == len(set(ids)) == doc["summary"]["findings"] == 47
    # Every excerpt once: a cause's evidence is not a second copy of its findings.
    for f in doc["findings"]:
        quoted = json.dumps(f["evidence"], ensure_ascii=False)
        assert text.count(quoted) == sum(g["evidence"] == f["evidence"] for g in doc["findings"])
    by_id = {f["id"]: f for f in doc["findings"]}
    first, second = doc["causes"]
    assert first["id"] == "truncated-output" and second["id"] == "reasoning-in-content"
    assert [
        (by_id[i]["rule"], by_id[i]["task_id"], by_id[i]["turn_index"]) for i in first["evidence"]
    ] == [
        ("unclosed-think", "12", 2),
        ("unclosed-think", "27", 2),
        ("unclosed-think", "48", 2),
    ]
    assert all(i in by_id for c in doc["causes"] for i in c["evidence"])
    # No turn text: not the report's turn openings, nor the page's turns.
    assert "turn_text" not in doc and "turn_head" not in text and "page" not in doc


def test_json_text_adds_the_turn_of_every_finding_and_nothing_else(tmp_path):
    plain = _scan_json(tmp_path)
    doc = _scan_json(tmp_path, "--json-text")
    texts = doc.pop("turn_text")
    assert doc == plain  # the rest as without the flag
    assert list(texts) == [f["id"] for f in plain["findings"]]  # in the findings' order
    quoted = texts[plain["causes"][0]["evidence"][0]]  # task 12's cut-off turn, as the report
    assert quoted["turn_chars"] == 2212
    assert quoted["turn_head"].startswith("<think>\nOkay, the user wants to return a bunch of")
    assert len(quoted["turn_head"]) == report.HEAD_CHARS
    # an excerpt that starts with the turn needs no opening
    assert all(
        t["turn_head"] == ""
        for f in plain["findings"]
        if not (f["evidence"] or "").startswith("…")
        for t in [texts[f["id"]]]
    )


def test_json_text_without_a_json_result_is_a_usage_error():
    res = CliRunner().invoke(
        cli, ["scan", str(SAMPLES / "output2.txt"), "--no-report", "--json-text"]
    )
    assert res.exit_code == 2 and "--json-text" in res.output


def test_the_report_quotes_each_cause_evidence_with_its_turn_opening(tmp_path):
    m = forensics.scan([str(SAMPLES / "output2.txt")]).report()
    assert set(m["turn_text"]) == {i for c in m["causes"] for i in c["evidence"]}
    from forensics.report.render import markdown

    md = markdown.render(m)
    assert "  <think>\n  Okay, the user wants to return a bunch of items" in md
    assert "\n  [… 2,212 chars in all …]\n" in md


SYSTEM = {"from": "system", "value": "You are a function calling AI model. <tools>\n[]\n</tools>"}
ASK = {"from": "human", "value": "Find the latest numpy release."}
CALL = {
    "from": "gpt",
    "value": '<tool_call>\n{"name": "web_search", "arguments": {"query": "numpy"}}\n</tool_call>',
}
RESULT = {
    "from": "tool",
    "value": '<tool_response>\n{"name": "web_search", "content": "2.3.4"}\n</tool_response>',
}
WORDS = ["alpha", "bravo", "delta", "kilo", "lima", "oscar", "sierra", "tango"]


def _log(folder, healthy_pairs: int) -> str:
    """hermes-agent trajectories: one cut off (a finding), one healthy conversation of
    healthy_pairs long questions and answers (no finding)."""
    rng = random.Random(healthy_pairs)

    def words() -> str:  # varied, so no repetition rule fires
        return " ".join(f"{rng.choice(WORDS)}{rng.randrange(10**6)}" for _ in range(300))

    talk = [SYSTEM]
    for i in range(healthy_pairs):
        talk += [
            {"from": "human", "value": f"Question {i}: {words()}?"},
            {"from": "gpt", "value": f"Answer {i}: {words()}."},
        ]
    records = [
        {"conversations": [SYSTEM, ASK, CALL, RESULT], "model": "kimi-k2", "completed": False},
        {"conversations": talk, "model": "kimi-k2", "completed": True},
    ]
    folder.mkdir()
    path = folder / "trajectory_samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_json_size_does_not_grow_with_healthy_turns(tmp_path):
    small, large = _log(tmp_path / "a", 1), _log(tmp_path / "b", 200)
    grown = (tmp_path / "b" / "trajectory_samples.jsonl").stat().st_size
    assert grown > 1_000_000
    for text in (False, True):
        docs = []
        for path, turns in ((small, 3), (large, 401)):
            result = forensics.scan([path])
            assert result.findings["rule"].to_list() == ["run-cut-off"]
            written = jsonout.render(report.build(result, turn_text=text), turn_text=text)
            doc = json.loads(written.replace(path, "LOG"))
            assert doc["summary"]["turns"] == turns + 4
            assert doc["trajectories"][1]["turn_count"] == turns
            doc["summary"]["turns"] = doc["trajectories"][1]["turn_count"] = None
            docs.append((doc, len(written.encode()) - len(path) * written.count(path)))
        (a, size_a), (b, size_b) = docs
        assert a == b  # 1.4 MB of healthy turns: the same document, but for two counts
        assert size_b - size_a == 4  # their digits: 7 -> 405, 3 -> 401


def test_diff_and_compare_ask_to_scan_a_schema_3_result_again(tmp_path):
    doc = _scan_json(tmp_path)
    old = tmp_path / "old.json"
    # what schema 3 wrote: a cause's evidence as copies of its findings, with the turn text
    by_id = {f["id"]: f for f in doc["findings"]}
    for c in doc["causes"]:
        c["evidence"] = [{**by_id[i], "turn_head": "", "turn_chars": 0} for i in c["evidence"]]
    old.write_text(json.dumps({**doc, "schema_version": 3}), encoding="utf-8")
    new = tmp_path / "r.json"
    for command in ("diff", "compare"):
        res = CliRunner().invoke(cli, [command, str(old), str(new)])
        assert res.exit_code == 2, res.output
        assert "a --json result of report schema 3; this forensics reads schema 4" in res.output
        assert "scan its inputs again" in res.output
