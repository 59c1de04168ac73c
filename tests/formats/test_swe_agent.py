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


# --- issue 21: text protocols and how a run ended ------------------------------------------

FORMAT_ERRORS = DATA / "mini_swe_agent" / "format_errors"
CORPUS = Path(__file__).parent.parent / "data" / "corpus" / "files"


def found(result) -> list[tuple[str, int, int]]:
    f = result.findings
    return sorted(zip(f["rule"], f["turn_index"], f["source_line"], strict=True))


def test_mini_v1_reply_with_two_blocks_is_the_harness_format_error():
    result = forensics.scan([str(FORMAT_ERRORS / "v1_format_error.traj.json")])
    assert result.rejects.is_empty()
    assert found(result) == [("format-error-reply", 2, 53)]
    (finding,) = result.findings.iter_rows(named=True)
    assert "2 action blocks where the protocol takes exactly one" in finding["message"]
    assert finding["evidence"].startswith(
        "harness: Please always provide EXACTLY ONE action in triple backticks, found 2 actions."
    )
    assert json.loads(finding["details"]) == {
        "harness": "mini-swe-agent",
        "found": 2,
        "blame": "model",
    }


def test_mini_v2_rejected_replies_are_read_back_from_the_format_error_message():
    result = forensics.scan([str(FORMAT_ERRORS / "v2_format_errors.traj.json")])
    turns = result.turns
    # The two replies v2 kept only inside its FormatError messages are agent turns again, before
    # the harness's answer, with the finish reason and usage of their raw response.
    assert turns["actor"].to_list()[:8] == [
        "system", "user_sim", "agent", "env", "agent", "env", "agent", "env",
    ]  # fmt: skip
    rejected = turns.filter(turns["turn_index"].is_in([2, 6]))
    assert rejected["output_tokens"].to_list() == [61, 1]
    assert rejected["finish_reason"].to_list() == ["stop", "stop"]
    assert rejected["content"][1] == ""
    assert turns["error"][3] == "FormatError (found 2 actions)"
    # Two blocks: the model broke the protocol. One token, nothing in it: an empty reply.
    assert found(result) == [("empty-protocol-reply", 6, 167), ("format-error-reply", 2, 57)]
    assert result.trajectories["termination_reason"].to_list() == ["Submitted"]


def test_mini_v2_parser_that_does_not_read_the_taught_format_is_not_the_models_fault():
    result = forensics.scan([str(FORMAT_ERRORS / "v2_regex_mismatch.traj.json")])
    assert found(result) == [
        ("action-format-mismatch", 2, 57),
        ("action-format-mismatch", 4, 104),
        ("action-format-mismatch", 6, 151),
        ("run-exit-model", 7, 151),
    ]
    assert "one ```bash block, the format the prompt teaches" in result.findings["message"][0]
    # The mismatch (plumbing) explains the format-error exit the model would be blamed for.
    (cause,) = result.diagnosis.causes
    assert cause.id == "action-format-mismatch" and cause.score_class == "infra"
    assert [e["rule"] for e in cause.explains] == ["run-exit-model"]


def test_mini_v2_trajectory_saved_mid_run_is_cut_off():
    result = forensics.scan([str(FORMAT_ERRORS / "v2_saved_mid_run.traj.json")])
    assert ("run-cut-off", 7, 167) in found(result)
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "cut_off"
    assert "saved mid-run" in traj["ingest_note"]
    cut = result.findings.filter(result.findings["rule"] == "run-cut-off").row(0, named=True)
    assert cut["message"] == (
        "run cut off: the mini-swe-agent (v2) trajectory has no exit message and no exit "
        "status: it was saved mid-run"
    )
    assert cut["evidence"].startswith("last message (user):")


def test_mini_bare_message_lists_are_read_as_mini_swe_agent_and_stay_clean():
    # mini-swe-agent's own test data: a bare list of messages (they were read as a tau-bench
    # console log before, and the empty submission output as an empty user-simulator message).
    for name in ("local", "github_issue"):
        path = CORPUS / "mini_swe_agent" / f"SWE-agent__mini-swe-agent__{name}.traj.json"
        result = forensics.scan([str(path)])
        assert result.files[0].format == "mini_swe_agent" and result.rejects.is_empty()
        assert result.findings.is_empty()
        actors = result.turns["actor"].to_list()
        assert actors[:3] == ["system", "user_sim", "agent"] and "user_sim" not in actors[2:]


def test_mini_limits_exceeded_is_the_limit_the_stats_reached(tmp_path):
    doc = json.loads(MINI.read_text())
    doc["info"]["exit_status"] = "LimitsExceeded"
    doc["info"]["config"]["agent"] = {"step_limit": 5, "cost_limit": 3.0}
    doc["info"]["model_stats"] = {"instance_cost": 0.4, "api_calls": 5}
    doc["messages"] = [m for m in doc["messages"] if m["role"] != "exit"]
    path = tmp_path / "limits.traj.json"
    path.write_text(json.dumps(doc))
    (traj,) = forensics.scan([str(path)]).trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "max_iterations"
    assert traj["error"] == "LimitsExceeded: 5 model calls reached the step_limit 5"
    doc["info"]["model_stats"] = {"instance_cost": 3.2, "api_calls": 2}
    path.write_text(json.dumps(doc))
    (traj,) = forensics.scan([str(path)]).trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "cost_limit"


def test_swe_agent_history_only_traj_is_read():
    path = CORPUS / "swe_agent_traj" / "SWE-agent__SWE-agent__function_calling_simple.traj"
    result = forensics.scan([str(path)])
    assert result.files[0].format == "swe_agent_traj" and result.rejects.is_empty()
    assert result.turns.height == 12 and result.findings.is_empty()
