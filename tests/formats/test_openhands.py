"""OpenHands: V1 conversation directories (base_state.json + events/) and pre-V1 event lists."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import forensics

DATA = Path(__file__).parent.parent / "data" / "agents" / "openhands"
CONVERSATION = DATA / "v1" / "11111111222233334444555555555555"
LEGACY = DATA / "legacy"


def test_v1_directory_is_one_episode_and_every_file_is_accounted_for(scan_of):
    result = scan_of(CONVERSATION)
    assert result.rejects.is_empty()
    by_format = {}
    for f in result.files:
        by_format.setdefault(f.format, []).append(f.records)
    assert by_format == {"openhands_state": [0], "openhands_events": [1] + [0] * 10}
    assert all(f.note for f in result.files if f.records == 0)
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "LLMContextWindowExceedError"
    assert traj["error"].startswith("LLMContextWindowExceedError: Conversation history exceeds")
    assert traj["agent_model"] == "gpt-4o-mini"  # from the real base_state.json
    assert traj["ingest_note"] == "1 event(s) that are no message (state updates, condensation, …)"


def test_v1_events_become_turns_with_the_completion_log_matched_by_response_id(scan_of):
    result = scan_of(CONVERSATION)
    turns = result.turns
    assert turns["actor"].to_list() == ["system", "user_sim", "agent", "env", "env", "agent"]
    assert [Path(p).name[:11] for p in turns["source_path"]] == [
        "event-00000", "event-00001", "event-00003", "event-00005", "event-00006", "event-00009"
    ]  # fmt: skip
    calls = turns.row(2, named=True)
    # two ActionEvents of one LLM response are one turn with two calls
    assert [c["name"] for c in calls["tool_calls"]] == ["terminal", "file_editor"]
    assert (calls["finish_reason"], calls["output_tokens"], calls["input_tokens"]) == (
        "tool_calls", 96, 7000
    )  # fmt: skip
    assert turns.row(4, named=True)["error"] == "File not found: /workspace/utils/dates.py"
    last = turns.row(5, named=True)
    assert (last["finish_reason_raw"], last["output_tokens"], last["max_output_tokens"]) == (
        "length", 16384, 16384
    )  # fmt: skip
    assert turns.row(0, named=True)["tool_count"] == 3
    # the system prompt event offered tools: every agent turn had them
    assert turns.filter(turns["actor"] == "agent")["tools_attached"].to_list() == [True, True]
    found = [(f["rule"], f["turn_index"]) for f in result.findings.iter_rows(named=True)]
    assert ("max-tokens", 5) in found


def test_a_broken_event_file_is_rejected_and_the_rest_read(tmp_path):
    copy = tmp_path / "conv"
    shutil.copytree(CONVERSATION, copy)
    broken = sorted((copy / "events").iterdir())[5]
    broken.write_text('{"kind": "ObservationEvent", "source": "environment", "id": ')
    result = forensics.scan([str(copy)])
    (reject,) = result.rejects.iter_rows(named=True)
    assert reject["source_path"] == str(broken) and reject["reason"].startswith("invalid JSON")
    assert result.turns.height == 5


def test_legacy_event_list_tool_calls_and_finish_reasons():
    result = forensics.scan([str(LEGACY / "wrong_initial_state.json")])
    assert result.rejects.is_empty() and result.files[0].format == "openhands_legacy"
    turns = result.turns
    assert turns["actor"].to_list() == ["user_sim"] + ["agent", "env"] * 3 + ["agent"]
    assert turns["source_line"].to_list()[:3] == [2, 15, 78]
    first = turns.row(1, named=True)
    assert first["tool_calls"][0]["name"] == "str_replace_editor"
    assert json.loads(first["tool_calls"][0]["arguments"])["command"] == "view"
    assert (first["finish_reason"], first["output_tokens"]) == ("tool_calls", 95)
    assert result.findings.is_empty()


def test_legacy_messages_without_tools():
    result = forensics.scan([str(LEGACY / "basic_interactions.json")])
    assert result.turns["actor"].to_list() == ["user_sim", "agent"] * 3
    assert result.turns["content"].to_list()[1] == "1 + 1 equals 2."


def test_evaluation_output_jsonl_with_an_agent_error(tmp_path):
    history = json.loads((LEGACY / "wrong_initial_state.json").read_text())
    failed = [
        *history[:3],
        {"id": 90, "source": "agent", "observation": "error", "content": "Traceback: boom",
         "message": "Traceback: boom", "extras": {}},
        {"id": 91, "source": "environment", "observation": "agent_state_changed", "content": "",
         "message": "", "extras": {"agent_state": "error", "reason": "RuntimeError: sandbox died"}},
    ]  # fmt: skip
    lines = [
        {"instance_id": "django__django-11099", "test_result": {"git_patch": ""},
         "instruction": "Fix it. " * 10_000,
         "metadata": {"agent_class": "CodeActAgent",
                      "llm_config": {"model": "openai/gpt-4o", "max_output_tokens": 4096}},
         "history": history, "error": None},
        {"instance_id": "astropy__astropy-12907", "history": failed,
         "metadata": {"llm_config": {"model": "openai/gpt-4o"}}, "error": "Agent got stuck"},
    ]  # fmt: skip
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    result = forensics.scan([str(path)])
    trajs = {r["task_id"]: r for r in result.trajectories.iter_rows(named=True)}
    assert trajs["astropy__astropy-12907"]["termination_reason"] == "error"
    assert trajs["astropy__astropy-12907"]["error"] == "Agent got stuck"
    assert trajs["django__django-11099"]["agent_model"] == "openai/gpt-4o"
    # the first line's history starts past the 64 KiB head: found by its first keys
    assert result.files[0].format == "openhands_legacy"
    agent = result.turns.filter(
        (result.turns["actor"] == "agent") & (result.turns["task_id"] == "django__django-11099")
    )
    assert set(agent["max_output_tokens"]) == {4096}
    errors = result.turns.filter(result.turns["error"].is_not_null())
    assert errors["content"].to_list() == ["Traceback: boom"]
    assert set(result.turns["source_line"]) == {1, 2}
    (reject,) = result.rejects.iter_rows(named=True)
    assert reject["source_line"] == 3


def test_a_first_event_longer_than_the_detection_head_is_claimed_by_its_name(tmp_path):
    copy = tmp_path / "conv"
    shutil.copytree(CONVERSATION, copy)
    first = sorted((copy / "events").iterdir())[0]
    event = json.loads(first.read_text())
    tools = [{"name": f"tool_{i}", "description": "x" * 500} for i in range(300)]
    # the SDK may write `kind` last: here it comes after 150 KB of tool schemas
    event = {
        **{k: v for k, v in event.items() if k != "kind"},
        "tools": tools,
        "kind": event["kind"],
    }
    first.write_text(json.dumps(event, indent=2))
    result = forensics.scan([str(copy)])
    assert result.rejects.is_empty()
    assert result.turns.height == 6 and result.turns.row(0, named=True)["tool_count"] == 300


def test_a_cut_base_state_is_rejected_and_the_events_still_read(tmp_path):
    copy = tmp_path / "conv"
    shutil.copytree(CONVERSATION, copy)
    text = (copy / "base_state.json").read_text()
    (copy / "base_state.json").write_text(text[:-200])
    result = forensics.scan([str(copy)])
    (reject,) = result.rejects.iter_rows(named=True)
    assert reject["source_path"] == str(copy / "base_state.json")
    assert result.turns.height == 6
    assert result.trajectories["agent_model"].to_list() == [None]


# --- issue 21: an exported event stream, its format-error reply, how it ended -------------

CORPUS = Path(__file__).parent.parent / "data" / "corpus" / "files"


def test_v1_events_exported_as_jsonl_are_one_episode():
    path = CORPUS / "openhands_events" / "OpenHands__software-agent-sdk__goal_events.jsonl"
    result = forensics.scan([str(path)])
    assert result.files[0].format == "openhands_events" and result.rejects.is_empty()
    f = result.findings
    assert sorted(zip(f["rule"], f["turn_index"], f["source_line"], strict=True)) == [
        ("format-error-reply", 0, 4),
        ("reasoning-leak", 0, 4),
        ("reasoning-leak", 3, 9),
        ("run-cut-off", 4, 10),
    ]
    messages = dict(zip(f["rule"], f["message"], strict=True))
    assert messages["format-error-reply"] == (
        "the harness (OpenHands) rejected this reply: Cannot execute multiple commands at once; "
        "the model's reply broke the protocol, no action ran"
    )
    # The stream's own execution_status updates say `running` to the end: nothing closed it.
    assert messages["run-cut-off"].startswith(
        "run cut off: the OpenHands conversation's execution status is still `running`"
    )


def test_the_iteration_limit_of_a_headless_run_is_its_step_limit():
    path = (
        CORPUS / "openhands_legacy" / "OpenHands__OpenHands__multi_swe_bench_example_output.jsonl"
    )
    result = forensics.scan([str(path)])
    capped = result.trajectories.filter(result.trajectories["task_id"] == "ponylang__ponyc-4588")
    assert capped["termination_reason"].to_list() == ["max_iterations"]
    f = result.findings.filter(result.findings["rule"] == "step-limit")
    assert list(zip(f["task_id"], f["turn_index"], f["source_line"], strict=True)) == [
        ("ponylang__ponyc-4588", 100, 3)
    ]
    assert f["message"][0] == (
        "episode ended at the agent's iteration limit (50) before it finished: the harness "
        "records the episode as not finished"
    )
    assert f["evidence"][0].startswith("RuntimeError: Agent reached maximum iteration")
