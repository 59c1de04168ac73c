"""The validation plan and the parser verdict speak about what was scanned, decided once."""

from __future__ import annotations

import forensics
from forensics.report import model as report

from conftest import DATA, SAMPLES


def plan(path) -> list[str]:
    return forensics.scan(str(path)).diagnosis.validation


def test_a_tau_bench_log_gets_tau_bench_rerun_flags_and_the_truncation_followup():
    steps = plan(SAMPLES / "output2.txt")
    assert "(tau-bench run.py: --task-ids 27 12)" in steps[0]
    assert steps[1].startswith("Scan the new log:")
    assert steps[-1].endswith("look at the tool-call parser next.")


def test_a_tau2_run_gets_tau2_flags_and_no_unrelated_followup():
    steps = plan(DATA / "tau2" / "qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset6.json")
    assert "(tau2 run: --task-ids " in steps[0] and "tau-bench" not in " ".join(steps)
    assert steps[1].startswith("Scan the new results:")
    assert not any("tool-call parser" in s for s in steps)  # no truncation cause here


def test_a_capture_names_no_harness_and_no_task_flags():
    steps = plan(DATA / "capture" / "vllm_agent_loop.jsonl")
    text = " ".join(steps)
    assert "--task-ids" not in text and "tau" not in text
    assert all(s.startswith("Scan the new capture:") for s in steps if s.startswith("Scan"))


def test_the_parser_verdict_is_decided_once_and_shown_as_decided():
    result = forensics.scan(str(SAMPLES / "output2.txt"))
    (check,) = result.diagnosis.parsers
    assert (check.parser, check.model, check.verdict) == (
        "hermes",
        "Qwen/Qwen3-0.6B",
        "matches Qwen/Qwen3-0.6B",
    )
    rows = [p for p in report.build(result)["parameters"] if p["key"] == "tool_call_parser"]
    assert [r["value"] for r in rows] == ["--tool-call-parser hermes (matches Qwen/Qwen3-0.6B)"]
    assert any(k.startswith("--tool-call-parser hermes matches") for k in result.diagnosis.keep)


def test_rules_on_one_turn_for_one_cause_are_one_incident():
    """A cut-off turn found by max-tokens, unclosed-think and the thinking-budget rule is one
    incident of the cause that claims them, which lists the rules it matched."""
    result = forensics.scan(str(DATA / "capture" / "vllm_agent_loop.jsonl"))
    model = report.build(result)
    assert (model["summary"]["findings"], model["summary"]["incidents"]) == (5, 3)
    budget = next(c for c in model["causes"] if c["id"] == "thinking-budget-exhausted")
    assert budget["incident_rules"] == [
        {"rules": ["max-tokens", "thinking-budget-exhausted", "unclosed-think"], "incidents": 1}
    ]
    # The summary holds counts, numbers only: what each counts is said in docs/causes.md.
    assert "counts" not in model["summary"]
    assert all(
        isinstance(v, int) for k, v in model["summary"].items() if k in ("findings", "incidents")
    )
    assert "(1 incident from 3 rule hits)" in model["verdict"]
    truncated = forensics.scan(str(SAMPLES / "output2.txt")).diagnosis
    assert "(20 incidents from 26 rule hits)" in truncated.verdict  # think-loop, no-action too
