"""ShareGPT conversations with Hermes <tool_call> text: hermes-agent trajectories and the Hermes
function-calling dataset's own records."""

from __future__ import annotations

import json

import forensics
from forensics.ingest import detect
from forensics.ingest.formats import sharegpt

from conftest import DATA

SHAREGPT = DATA / "traces" / "sharegpt"


def found(result) -> list[tuple[str, str, int, int]]:
    f = result.findings
    return sorted(
        zip(f["rule"], f["trajectory_id"], f["turn_index"], f["source_line"], strict=True)
    )


def test_hermes_agent_trajectories_turns_calls_and_reasoning(scan_of):
    result = scan_of(SHAREGPT / "hermes_agent_trajectories.jsonl")
    assert result.rejects.is_empty()
    turns = result.turns.filter(result.turns["trajectory_id"].str.ends_with("trial-0"))
    assert turns["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    call_turn = turns.row(2, named=True)
    assert call_turn["content"] == ""
    assert call_turn["reasoning"] == "I should count the files with find."
    assert call_turn["tool_calls"] == [
        {
            "id": "call_0",
            "name": "terminal",
            "arguments": '{"command": "find . -name \'*.py\' | wc -l"}',
        }
    ]
    assert call_turn["model"] == "moonshotai/kimi-k2"
    assert call_turn["tools_attached"] is True and call_turn["tool_count"] == 2
    assert turns.row(3, named=True)["actor"] == "env"
    failed = result.trajectories.filter(result.trajectories["trajectory_id"].str.ends_with("1"))
    # completed: false with no iteration notice and not partial: it ended without its answer.
    assert failed["termination_reason"].to_list() == ["cut_off"]
    assert failed["error"][0].startswith("last turn (assistant): <think>")


def test_hermes_agent_failures_are_found_and_the_healthy_line_stays_clean(scan_of):
    result = scan_of(SHAREGPT / "hermes_agent_trajectories.jsonl")
    traj = "hermes_agent_trajectories/task-unknown/trial-1"
    assert found(result) == [
        ("malformed-tool-call", traj, 2, 2),
        ("run-cut-off", traj, 4, 2),
        ("unclosed-think", traj, 4, 2),
    ]
    bad = result.turns.filter(
        (result.turns["trajectory_id"] == traj) & (result.turns["turn_index"] == 2)
    ).row(0, named=True)
    # The cut-off call stays a call, its raw text the arguments, so it is seen as malformed.
    assert [c["name"] for c in bad["tool_calls"]] == ["web_search", "terminal"]
    assert bad["tool_calls"][1]["arguments"].startswith('{"name": "terminal"')


def test_hermes_dataset_card_records_python_dict_calls_parse_and_the_broken_one_is_found():
    result = forensics.scan([str(SHAREGPT / "hermes_fc_v1_card.json")])
    assert result.rejects.is_empty() and result.trajectories.height == 4
    first = result.turns.filter(result.turns["task_id"] == "753d8365-0e54-43b1-9514-3f9b819fd31c")
    call = first.row(2, named=True)["tool_calls"][0]
    assert call["name"] == "search_flights"
    assert json.loads(call["arguments"])["flexible_cancellation"] is True
    traj = "hermes_fc_v1_card/task-afba1f0c-3212-467d-8594-d72a06da4d05/trial-0"
    # Each turn of the pretty-printed array is located at its own line.
    assert found(result) == [("malformed-tool-call", traj, 2, 42)]


def test_split_calls_keeps_unparseable_and_unclosed_calls_visible():
    text, calls = sharegpt.split_calls('a <tool_call>{"name": "f", "arguments": "{}"}</tool_call>')
    assert text == "a" and calls == [{"id": "call_0", "name": "f", "arguments": "{}"}]
    text, calls = sharegpt.split_calls('<tool_call>\n{"name": "g", "arguments": {"x": ')
    assert text == "" and calls[0]["name"] == "g" and calls[0]["arguments"].endswith('{"x":')
    _text, calls = sharegpt.split_calls("<tool_call>not json at all</tool_call>")
    assert calls == [{"id": "call_0", "name": None, "arguments": "not json at all"}]


def test_bad_records_are_rejected_with_their_line_and_the_rest_is_read(tmp_path):
    good = json.dumps(
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
    )
    lines = [good, "{not json", json.dumps({"conversations": "nope"}),
             json.dumps({"conversations": [{"from": "narrator", "value": "x"}]}), good]  # fmt: skip
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = forensics.scan([str(path)])
    assert result.files[0].format == sharegpt.FORMAT
    assert sorted(result.trajectories["source_line"].to_list()) == [1, 4, 5]
    rejects = sorted(zip(result.rejects["source_line"], result.rejects["reason"], strict=True))
    assert [line for line, _ in rejects] == [2, 3, 4]
    assert "unknown speaker 'narrator'" in rejects[2][1]


def test_detection():
    fmt, _why = detect((SHAREGPT / "hermes_agent_trajectories.jsonl").read_bytes()[:65536])
    assert fmt is not None and fmt.name == sharegpt.FORMAT
    fmt, _why = detect((SHAREGPT / "hermes_fc_v1_card.json").read_bytes()[:65536])
    assert fmt is not None and fmt.name == sharegpt.FORMAT


def test_glaive_style_function_call_speakers():
    result = forensics.scan([str(SHAREGPT / "glaive_chatml_card.jsonl")])
    assert result.rejects.is_empty() and result.findings.is_empty()
    assert result.turns["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    (call,) = result.turns["tool_calls"][2]
    assert call["name"] == "create_contact"
    assert json.loads(call["arguments"]) == {"name": "John Doe", "email": "johndoe@example.com"}


# --- issue 21: how a hermes-agent run ended (run_agent.py, batch_runner.py) ----------------

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
# agent/context_compressor.py MAX_ITERATIONS_SUMMARY_REQUEST, sent as a user message
NOTICE = (
    "You've reached the maximum number of tool-calling iterations allowed. Please provide a "
    "final response summarizing what you've found and accomplished so far, without calling "
    "any more tools."
)


def _hermes(tmp_path, *records) -> forensics.ScanResult:
    path = tmp_path / "trajectory_samples.jsonl"
    lines = [
        json.dumps({"conversations": conv, "model": "kimi-k2", "completed": completed, **extra})
        for conv, completed, extra in records
    ]
    path.write_text("\n".join(lines) + "\n")
    return forensics.scan([str(path)])


def test_hermes_completed_false_maps_to_how_the_run_ended(tmp_path):
    result = _hermes(
        tmp_path,
        # out of iterations: hermes-agent asked for a summary and got one
        (
            [
                SYSTEM,
                ASK,
                CALL,
                RESULT,
                {"from": "human", "value": NOTICE},
                {"from": "gpt", "value": "NumPy 2.3.4 is the latest release."},
            ],
            False,
            {},
        ),
        # batch_runner's partial: stopped after three calls to tools that do not exist
        ([SYSTEM, ASK, CALL, RESULT], False, {"partial": True}),
        # neither: the run ended without its final answer
        ([SYSTEM, ASK, CALL, RESULT], False, {}),
        # a completed run ending on a tool result is not judged
        ([SYSTEM, ASK, CALL, RESULT, {"from": "gpt", "value": "2.3.4"}], True, {}),
    )
    ends = result.trajectories.sort("trial")
    assert ends["termination_reason"].to_list() == [
        "max_iterations", "invalid_tool_calls", "cut_off", None,
    ]  # fmt: skip
    assert ends["error"][0] == NOTICE
    f = result.findings
    assert sorted(zip(f["rule"], f["trial"], f["turn_index"], f["source_line"], strict=True)) == [
        ("run-cut-off", 2, 3, 3),
        ("run-exit-model", 1, 3, 2),
        ("step-limit", 0, 5, 1),
    ]
    messages = dict(zip(f["rule"], f["message"], strict=True))
    assert messages["step-limit"] == (
        "episode ended at the agent's iteration limit before it finished: the harness records "
        "the episode as not finished"
    )
    assert messages["run-exit-model"] == (
        "episode ended by calls to tools that do not exist (exit status invalid_tool_calls)"
    )
    assert messages["run-cut-off"].startswith(
        "run cut off: hermes-agent marked the run not completed"
    )


def test_hermes_older_iteration_answer_counts_too(tmp_path):
    answer = {
        "from": "gpt",
        "value": "I've reached the maximum number of iterations. Here's what I found so far.",
    }
    result = _hermes(tmp_path, ([SYSTEM, ASK, CALL, RESULT, answer], False, {}))
    assert result.trajectories["termination_reason"].to_list() == ["max_iterations"]
    assert result.findings["rule"].to_list() == ["step-limit"]


def test_a_system_prompt_naming_the_limit_is_not_the_notice(tmp_path):
    system = {
        "from": "system",
        "value": f"Tools: <tools>\n[]\n</tools>. If you see '{NOTICE}', stop.",
    }
    result = _hermes(tmp_path, ([system, ASK, CALL, RESULT], False, {}))
    assert result.trajectories["termination_reason"].to_list() == ["cut_off"]
