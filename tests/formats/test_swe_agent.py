"""SWE-agent .traj and mini-swe-agent trajectories read into the tables."""

from __future__ import annotations

import json
from pathlib import Path

import forensics

DATA = Path(__file__).parent.parent / "data" / "agents"
TRAJ = DATA / "swe_agent" / "6e44b9__sweagenttestrepo-1c2844.traj"
V07 = DATA / "swe_agent" / "networking_1.traj"
MINI = DATA / "mini_swe_agent" / "swe-agent__test-repo-1" / "swe-agent__test-repo-1.traj.json"


def test_function_calling_traj_turns_tool_calls_and_exit_status():
    result = forensics.scan([str(TRAJ)])
    assert result.rejects.is_empty() and result.files[0].format == "swe_agent_traj"
    turns = result.turns
    assert turns["actor"].to_list() == ["system", "user_sim"] + ["agent", "env"] * 4
    assert turns["role"].to_list()[2:4] == ["assistant", "tool"]
    assert turns["source_line"].to_list()[:3] == [61, 67, 73]
    assert turns["tool_calls"][2].to_list() == [
        {
            "id": "call_fJuazlMUN5fQDQ73G6XSpYpx",
            "name": "find_file",
            "arguments": '{"file_name":"missing_colon.py"}',
        }
    ]
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "submitted"
    assert traj["task_id"] == "6e44b9__sweagenttestrepo-1c2844"
    assert traj["agent_model"] == "gpt-4o"
    labels = {label["key"]: label["value"] for label in traj["labels"]}
    assert labels["model_stats.api_calls"] == "5"
    assert traj["tool_call_count"] == 4
    # replay_config: parse_function function_calling -> tools went with every request
    assert set(turns.filter(turns["actor"] == "agent")["tools_attached"]) == {True}
    assert result.findings.is_empty()  # a healthy, submitted run


def test_thought_action_traj_observations_are_env_turns():
    result = forensics.scan([str(V07)])
    turns = result.turns
    assert turns["actor"].to_list()[:4] == ["system", "user_sim", "agent", "env"]
    assert set(turns.filter(turns["role"] == "user")["actor"].to_list()[1:]) == {"env"}
    assert set(turns["tools_attached"]) == {None}  # no replay_config: not known
    assert result.findings.is_empty()


def test_exit_statuses_and_demonstrations(tmp_path):
    doc = json.loads(TRAJ.read_text())
    doc["info"]["exit_status"] = "exit_cost"
    demo = dict(doc["history"][2], is_demo=True)
    doc["history"].insert(2, demo)
    path = tmp_path / "run" / "task-7.traj"
    path.parent.mkdir()
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "exit_cost"
    assert traj["run_id"] == "run" and traj["task_id"] == "task-7"
    assert traj["ingest_note"] == (
        "1 demonstration message(s) (is_demo) are few-shot examples, not turns"
    )
    assert result.turns.height == 10  # the demonstration is not a turn


def test_bad_history_item_is_rejected_with_its_json_path(tmp_path):
    doc = json.loads(TRAJ.read_text())
    doc["history"][3] = "not a message"
    path = tmp_path / "x.traj"
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    (reject,) = result.rejects.iter_rows(named=True)
    assert reject["json_path"] == "$.history[3]" and reject["source_line"] is not None
    assert result.turns.height == 9


def test_mini_trajectory_turns_carry_the_raw_response():
    result = forensics.scan([str(MINI)])
    assert result.rejects.is_empty() and result.files[0].format == "mini_swe_agent"
    turns = result.turns
    assert turns.height == 22  # the exit message is the end of the run, not a turn
    assert turns["actor"].to_list()[:4] == ["system", "user_sim", "agent", "env"]
    agent = turns.row(2, named=True)
    assert (agent["finish_reason"], agent["input_tokens"], agent["output_tokens"]) == (
        "stop", 1600, 80
    )  # fmt: skip
    assert (agent["max_output_tokens"], agent["cost_usd"]) == (4096, 0.0021)
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "Submitted"
    assert traj["agent_model"] == "anthropic/claude-sonnet-4-20250514"
    assert traj["task_id"] == "swe-agent__test-repo-1"
    assert set(turns.filter(turns["actor"] == "agent")["tools_attached"]) == {None}
    assert result.findings.is_empty()


def test_mini_tools_attached_from_tool_calls_or_a_text_based_model(tmp_path):
    doc = json.loads(MINI.read_text())
    doc["info"]["mini_version"] = "1.9.0"  # 1.x models parse actions from the text
    path = tmp_path / "a.traj.json"
    path.write_text(json.dumps(doc))
    turns = forensics.scan([str(path)]).turns
    assert set(turns.filter(turns["actor"] == "agent")["tools_attached"]) == {False}
    first = next(m for m in doc["messages"] if m["role"] == "assistant")
    first["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    ]
    path.write_text(json.dumps(doc))
    turns = forensics.scan([str(path)]).turns
    assert set(turns.filter(turns["actor"] == "agent")["tools_attached"]) == {True}


def test_mini_truncated_turn_and_exception_exit(tmp_path):
    doc = json.loads(MINI.read_text())
    last_agent = max(i for i, m in enumerate(doc["messages"]) if m["role"] == "assistant")
    response = doc["messages"][last_agent]["extra"]["response"]
    response["choices"][0]["finish_reason"] = "length"
    response["usage"]["completion_tokens"] = 4096
    doc["messages"][-1] = {
        "role": "exit",
        "content": "boom",
        "extra": {
            "exit_status": "RuntimeError",
            "submission": "",
            "exception_str": "RuntimeError: docker exec failed",
        },
    }
    path = tmp_path / "t" / "t.traj.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "RuntimeError"
    assert traj["error"] == "RuntimeError: docker exec failed"
    hits = [(r["rule"], r["turn_index"]) for r in result.findings.iter_rows(named=True)]
    assert ("max-tokens", 20) in hits


def test_history_of_the_wrong_type_is_rejected_at_its_path(tmp_path):
    doc = json.loads(TRAJ.read_text())
    doc["history"] = {"role": "assistant"}
    path = tmp_path / "x.traj"
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    (reject,) = result.rejects.iter_rows(named=True)
    assert (reject["json_path"], reject["reason"]) == ("$.history", "history is not an array")
    assert result.trajectories["termination_reason"].to_list() == ["submitted"]
