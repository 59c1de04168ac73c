"""Exact findings on sample_logs/: rule, task, turn, source line — and the diagnosis.

What is pinned is what the stable rules find. A preview rule (`forensics rules new`) is not
measured yet, here as on the accuracy corpus: these scans leave it out, so adding one changes
nothing below until it is promoted.
"""

from __future__ import annotations

import polars as pl
import pytest

import forensics
from forensics.check import engine
from forensics.config import Settings

from conftest import SAMPLES

PREVIEW = tuple(sorted(r.id for r in engine.load_rules() if r.preview))
STABLE = Settings(disable=PREVIEW)


@pytest.fixture(scope="module")
def output2(output2_scan):
    """output2.txt as the stable rules see it: the shared scan, unless a preview rule fires."""
    if output2_scan.findings.filter(pl.col("rule").is_in(PREVIEW)).is_empty():
        return output2_scan
    return forensics.scan([str(SAMPLES / "output2.txt")], settings=STABLE)


# output2.txt run 2 (tasks 12, 27, 48): agent turns at even turn indexes, user simulator at odd.
# (task, first message line, number of agent turns); lines advance by 2 per message.
RUN2 = [("12", 118, 6), ("27", 148, 4), ("48", 170, 8)]


def _expected_output2() -> set[tuple[str, str, int, int]]:
    expected = set()
    for task, first_line, agents in RUN2:
        # turn 1 is the user's opening message; each exchange is agent (even) then user (odd).
        expected.add(("reasoning-leak", task, 1, first_line))
        for k in range(agents):
            agent_turn = 2 + 2 * k
            expected.add(("unclosed-think", task, agent_turn, first_line + 2 + 4 * k))
            expected.add(("reasoning-leak", task, agent_turn + 1, first_line + 4 + 4 * k))
        # reward 0, tools attached, not one call or question: pointed at the last agent turn
        last = agents - 1
        expected.add(("no-action-failure", task, 2 + 2 * last, first_line + 2 + 4 * last))
    expected |= {
        ("think-loop", "12", 4, 124),  # agent turns 2-12 repeat each other
        ("think-loop", "12", 9, 134),  # user simulator turns 7-11
        ("think-loop", "27", 4, 154),
        ("think-loop", "48", 4, 176),
        ("think-loop", "48", 13, 194),
    }
    return expected


def _found(result) -> set[tuple[str, str, int, int]]:
    return {
        (r["rule"], r["task_id"], r["turn_index"], r["source_line"])
        for r in result.findings.iter_rows(named=True)
    }


def test_output2_exact_findings(output2):
    assert _found(output2) == _expected_output2()


def test_output2_actors_and_control(output2):
    findings = output2.findings
    assert set(findings.filter(findings["rule"] == "unclosed-think")["actor"]) == {"agent"}
    assert set(findings.filter(findings["rule"] == "reasoning-leak")["actor"]) == {"user_sim"}
    # The healthy control trajectory (run 1, task 5) has no finding at all.
    assert "5" not in set(findings["task_id"])


def test_output2_trajectories(output2):
    rows = {r["task_id"]: r for r in output2.trajectories.iter_rows(named=True)}
    assert sorted(rows) == ["12", "27", "48", "5"]
    assert rows["5"]["reward"] == 1.0 and rows["5"]["variant"] == "control"
    assert rows["5"]["agent_model"] == "gpt-4.1-mini"
    for task in ("12", "27", "48"):
        row = rows[task]
        assert row["reward"] == 0.0
        assert row["variant"] == "frustrated"
        assert row["agent_model"] == row["user_model"] == "Qwen/Qwen3-0.6B"
        assert row["termination_reason"] == "user_stop"
        assert row["tool_call_count"] == 0
        labels = {lab["key"]: lab["value"] for lab in row["labels"]}
        assert labels["server.tool_call_parser"] == "hermes"
        assert labels["user_strategy"] == "llm"
        assert labels["wrapper.exit_reason"] == "all_tasks_failed"
    assert [rows[t]["turn_count"] for t in ("5", "12", "27", "48")] == [40, 14, 10, 18]


def test_output2_turns_keep_source_lines_and_actors(output2):
    turns = output2.turns
    assert turns.height == 82
    first = turns.filter((turns["task_id"] == "12") & (turns["turn_index"] <= 2)).sort("turn_index")
    assert first["source_line"].to_list() == [117, 118, 120]
    assert first["role"].to_list() == ["system", "user", "assistant"]
    assert first["actor"].to_list() == ["system", "user_sim", "agent"]
    agents = turns.filter(turns["actor"] == "agent")
    assert set(agents["tools_attached"].to_list()) == {True}
    assert set(agents.filter(agents["task_id"] != "5")["max_output_tokens"]) == {512}


def test_output2_diagnosis(output2):
    causes = output2.diagnosis.causes
    assert [c.id for c in causes] == ["truncated-output", "reasoning-in-content"]
    first, second = causes
    assert first.trajectories == 3 and first.reward_lost == 3.0
    assert first.explains == [
        {"rule": "think-loop", "findings": 5, "trajectories": 3},
        {"rule": "no-action-failure", "findings": 3, "trajectories": 3},
    ]
    fix1 = first.fixes[0]
    assert "max_tokens" in fix1["action"]
    assert "18 agent turns in 3 trajectories" in fix1["detail"]
    assert "max_tokens=512" in fix1["detail"]
    assert "enable_thinking" in first.fixes[1]["detail"]
    actions = [f["action"] for f in second.fixes]
    assert actions[0].endswith("--reasoning-parser qwen3")
    assert "own endpoint" in actions[1]
    assert "Qwen/Qwen3-0.6B at http://127.0.0.1:8000/v1" in second.fixes[1]["detail"]
    plan = " ".join(output2.diagnosis.validation)
    assert "--task-ids 27 12" in plan
    assert "unclosed-think" in plan and "reasoning-leak" in plan and "tool_calls" in plan
    keep = " ".join(output2.diagnosis.keep)
    assert "--tool-call-parser hermes" in keep and "task 5" in keep


def test_results_json_same_findings_as_log():
    log = forensics.scan([str(SAMPLES / "output2.txt")], settings=STABLE)
    results = forensics.scan([str(SAMPLES / "tau_bench_results_frustrated.json")], settings=STABLE)

    def key(result):
        return sorted(
            (r["rule"], r["task_id"], r["turn_index"])
            for r in result.findings.iter_rows(named=True)
        )

    assert key(results) == key(log)
    # Every finding points at the line of its message object inside the JSON file.
    text = (SAMPLES / "tau_bench_results_frustrated.json").read_text().splitlines()
    for row in results.findings.iter_rows(named=True):
        assert text[row["source_line"] - 1].strip() == "{", row


def test_truncated_checkpoint_recovers_complete_records():
    result = forensics.scan([str(SAMPLES / "tau_bench_results_truncated.json")])
    assert sorted(result.trajectories["task_id"]) == ["12", "27"]
    assert result.rejects.height == 1
    reject = result.rejects.row(0, named=True)
    assert reject["source_line"] == 346  # the "{" of record 3 (task 48)
    assert reject["reason"].startswith("truncated file: it ends inside record 3")
    assert "2 complete records kept" in reject["reason"]


def test_control_results_file_is_clean():
    result = forensics.scan([str(SAMPLES / "tau_bench_results_control.json")], settings=STABLE)
    assert result.trajectories.height == 1
    assert result.findings.is_empty()
    assert result.diagnosis.causes == []


@pytest.mark.parametrize("name", ["output2.txt", "tau_bench_results_frustrated.json"])
def test_secrets_never_reach_tables(name):
    result = forensics.scan([str(SAMPLES / name)])
    for frame in (result.turns, result.trajectories, result.rejects):
        assert "Fake1234567890" not in str(frame.to_dicts())
