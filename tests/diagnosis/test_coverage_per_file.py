"""Coverage is per file and says so: a rule that lacked the data in some files and ran on the
others is not "not checked" as if it never ran, and a rule that ran on none is not "not checked
on some input"."""

from __future__ import annotations

import json
from pathlib import Path

import forensics
from forensics.diagnosis import coverage
from forensics.report import model as report
from forensics.report.render import html, markdown, text

from conftest import DATA, SAMPLES, run_cli

OUTPUT2 = str(SAMPLES / "output2.txt")
CAPTURE = str(DATA / "capture" / "vllm_agent_loop.jsonl")


def test_groups_name_the_files_that_lacked_the_data_and_where_the_rules_ran():
    rows = [
        {"path": "a.txt", "rule": "max-tokens", "missing": ["finish_reason", "output_tokens"]},
        {"path": "b.txt", "rule": "max-tokens", "missing": ["finish_reason", "output_tokens"]},
        {"path": "a.txt", "rule": "http-error", "missing": ["finish_reason", "http_status"]},
        {"path": "c.jsonl", "rule": "stream-cut-off", "missing": ["stream_completed"]},
        {"path": "a.txt", "rule": "stream-cut-off", "missing": ["stream_completed"]},
        {"path": "b.txt", "rule": "stream-cut-off", "missing": ["stream_completed"]},
    ]
    formats = {"a.txt": "tau_bench_log", "b.txt": "tau_bench_log", "c.jsonl": "api_capture"}
    assert coverage.groups(rows, formats, checked=["a.txt", "b.txt", "c.jsonl"]) == [
        # http-error lacked only a.txt's finish_reason (its transport column is no news there)
        {
            "missing": ["finish_reason"],
            "rules": ["http-error"],
            "files": 1,
            "paths": ["a.txt"],
            "of_files": 3,
            "ran_on": {"http-error": 2},
        },
        {
            "missing": ["finish_reason", "output_tokens"],
            "rules": ["max-tokens"],
            "files": 2,
            "paths": ["a.txt", "b.txt"],
            "of_files": 3,
            "ran_on": {"max-tokens": 1},
        },
        # told for the capture only, and it ran nowhere: the logs lacked it too, untold
        {
            "missing": ["stream_completed"],
            "rules": ["stream-cut-off"],
            "files": 1,
            "paths": ["c.jsonl"],
            "of_files": 3,
            "ran_on": {},
        },
    ]
    grouped = coverage.groups(rows, formats, checked=["a.txt", "b.txt", "c.jsonl"])
    assert coverage.summary(grouped, 3) == {
        "files": 3,
        "not_run": ["stream-cut-off"],
        "partly_run": ["http-error", "max-tokens"],
    }


def test_a_multi_format_scan_says_which_files_lacked_the_data(tmp_path):
    # The console log has no finish_reason; the capture has it, and thinking-budget-exhausted
    # and max-tokens fire there: they are not "not checked" as if they never ran.
    code, out, _ = run_cli("scan", "--no-report", "--no-config", "--json", str(tmp_path / "r.json"),
                           OUTPUT2, CAPTURE)  # fmt: skip
    assert code == 1
    block = out.split("not checked (these files lack the data the rules read):\n")[1]
    lines = block.split("\ngate:")[0].splitlines()
    assert lines[0] == (
        f"   no finish_reason in 1 of 2 files ({OUTPUT2}): answer-in-reasoning, empty-tool-calls, "
        "http-error, length-as-tool-calls, stop-no-tool-calls, thinking-budget-exhausted "
        "(ran on the other file)"
    )
    assert f"   no stream_completed in 1 of 2 files ({CAPTURE}): stream-cut-off" in lines
    doc = json.loads((tmp_path / "r.json").read_text())
    fired = set(doc["summary"]["findings_by_rule"])
    assert {"thinking-budget-exhausted", "max-tokens"} <= fired
    for group in doc["not_checked_groups"]:
        assert group["of_files"] == 2 and group["paths"]
        assert all(group["ran_on"].get(r) for r in group["rules"] if r in fired)
    assert "stream-cut-off" in doc["coverage"]["not_run"]
    assert {"thinking-budget-exhausted", "max-tokens"} <= set(doc["coverage"]["partly_run"])
    assert not fired & set(doc["coverage"]["not_run"])


def test_a_one_file_scan_says_the_rule_ran_on_none(output2_scan):
    model = report.build(output2_scan, page=True)
    (check,) = [v for v in model["validation_checks"] if v["not_checked_for_lack_of"]]
    assert check["rule"] == "max-tokens"
    assert (check["not_checked_files"], check["of_files"]) == (1, 1)
    assert "max-tokens" in model["coverage"]["not_run"] and model["coverage"]["files"] == 1
    page = html.render(model)
    assert "on some input" not in page
    assert (
        "not checked on any input (no finish_reason or output_tokens): its 0 proves nothing" in page
    )
    md = markdown.render(model)
    assert (
        "- [ ] `max-tokens`: 0 → 0 (not checked on any input: no finish_reason or output_tokens; "
        "its 0 proves nothing)" in md
    )
    # one file: the terminal's lines stay as they were, without a file count
    assert "   no finish_reason or output_tokens: max-tokens\n" in text.render(model)


def test_a_rule_lacking_the_data_in_some_files_says_a_zero_there_proves_nothing(scan_of):
    model = report.build(scan_of(OUTPUT2, CAPTURE), page=True)
    checks = {v["rule"]: v for v in model["validation_checks"]}
    assert (checks["max-tokens"]["not_checked_files"], checks["max-tokens"]["of_files"]) == (1, 2)
    page = html.render(model)
    assert (
        "not checked on 1 of 2 files (no finish_reason or output_tokens): a 0 there proves "
        "nothing" in page
    )
    assert f"1 of 2: {OUTPUT2}</td>" in page
    assert "<code>max-tokens</code> (ran on 1 file)" in page


# --- issue 21 item 10: what a reply without what followed it can not show -------------------

CORPUS = DATA / "corpus" / "files"


def test_a_reply_alone_says_its_calls_can_not_be_checked_and_a_whole_run_says_nothing():
    reply = (
        CORPUS / "api_capture" / "patterns-ai-core__langchainrb__mistral_chat_with_tool_calls.json"
    )
    cassette = (
        CORPUS
        / "http_cassette"
        / "Arize-ai__openinference__anthropic_multiple_tool_calling_streaming.yaml"
    )
    healthy = (
        CORPUS
        / "tau2_results"
        / "yoheinakajima__activegraph-tau2-bench__run-20260531-193831_results.json"
    )
    result = forensics.scan([str(reply), str(cassette), str(healthy)])
    notes = {Path(f.path).name: f.note for f in result.files}
    assert notes[reply.name] == (
        "1 model reply ends on 1 tool call with nothing recorded after it (the reply alone, "
        "without the request it answers): whether it ran cannot be checked from this file "
        "(text-tool-call-not-executed, tool-call-ids)"
    )
    # The request is recorded, but not what came after the two parallel calls.
    assert notes[cassette.name] == (
        "1 model reply ends on 2 tool calls with nothing recorded after it: whether they ran "
        "cannot be checked from this file (text-tool-call-not-executed, tool-call-ids)"
    )
    assert notes[healthy.name] is None
    # The note is a note, not a finding: the reply's one finding is the labelled missing type.
    assert result.findings["rule"].to_list() == ["tool-call-missing-type"]
