"""TRAIL span trees (Patronus/Phoenix exports of smolagents runs with OpenInference attributes):
one trace one trajectory, each turn at its span (span_id and the line of that span's id)."""

from __future__ import annotations

import functools
import json

import forensics
from forensics.ingest import detect

from conftest import DATA

TRAIL = DATA / "traces" / "trail"
HEALTHY = TRAIL / "gaia_0ebe673d.json"
TOOL_ERROR = TRAIL / "gaia_a96c6811_tool_error.json"
RATE_LIMIT = TRAIL / "swe_f12834d0_rate_limit.steps1and8.json"


@functools.cache
def scan(path) -> forensics.ScanResult:
    return forensics.scan([str(path)])


def turns(path):
    cols = ["turn_index", "span_id", "source_line", "role", "actor", "agent_name", "tool_name"]
    return [tuple(r[c] for c in cols) for r in scan(path).turns.to_dicts()]


def test_the_files_are_detected_as_trail_span_trees():
    for path in (HEALTHY, TOOL_ERROR, RATE_LIMIT):
        fmt, why = detect(path.read_bytes()[:65536], path)
        assert fmt is not None and fmt.name == "trail_spans", why


def test_a_healthy_trace_is_one_trajectory_turn_by_span_without_reject():
    result = scan(HEALTHY)
    assert result.rejects.height == 0
    assert result.trajectories["task_id"].to_list() == ["0ebe673d64647ec44c370638b82d3c78"]
    assert result.findings.height == 0
    planning, plan, step = "f71a82ea675d637d", "29f141a7c2556206", "9dfa48b84b860b85"
    final_tool, final_call = "ecc4e15abed97adb", "05168be1bb804a8d"
    assert turns(HEALTHY) == [
        (0, planning, 353, "user", "user_sim", "CodeAgent", None),
        (1, planning, 353, "assistant", "agent", "CodeAgent", None),
        (2, plan, 398, "user", "env", "CodeAgent", None),
        (3, plan, 398, "assistant", "agent", "CodeAgent", None),
        (4, step, 476, "system", "system", "CodeAgent", None),
        (5, step, 476, "user", "env", "CodeAgent", None),
        # The facts and the plan as the agent's memory replays them: new text, not outputs.
        (6, step, 476, "assistant", "agent", "CodeAgent", None),
        (7, step, 476, "assistant", "agent", "CodeAgent", None),
        (8, step, 476, "assistant", "agent", "CodeAgent", None),
        (9, final_tool, 527, "tool", "env", "CodeAgent", "final_answer"),
        # The final-answer call outside the agent's run span names no agent.
        (10, final_call, 567, "system", "system", None, None),
        (11, final_call, 567, "user", "env", None, None),
        (12, final_call, 567, "user", "env", None, None),
        (13, final_call, 567, "user", "env", None, None),
        (14, final_call, 567, "user", "env", None, None),
        (15, final_call, 567, "assistant", "agent", None, None),
    ]
    # Each turn knows the spans around its own, so a label on the step or agent span finds it.
    paths = result.turns["span_path"].to_list()
    agent_run = ["ed7d2f1b7747025d", "0ed8bf5ae2d65a36", "a8b04c65d3a15955"]
    assert paths[0] == [*agent_run, planning]
    assert paths[9] == [*agent_run, "80036c1d5ca204f4", final_tool]  # inside Step 1
    assert paths[15] == ["ed7d2f1b7747025d", "0ed8bf5ae2d65a36", final_call]
    # Line 353 is where the call's span id stands in the file.
    assert '"span_id": "f71a82ea675d637d"' in HEALTHY.read_text().splitlines()[352]
    calls = result.turns.filter(result.turns["model"].is_not_null())
    assert calls["turn_index"].to_list() == [1, 3, 8, 15]
    first = calls.row(0, named=True)
    assert (first["model"], first["input_tokens"], first["output_tokens"]) == ("o3-mini", 401, 882)
    assert first["max_output_tokens"] == 8192  # llm.invocation_parameters max_completion_tokens
    assert first["finish_reason"] is None  # smolagents' output.value keeps no finish reason
    assert calls.row(3, named=True)["content"] == "FINAL ANSWER: right"


def test_a_failed_tool_is_an_env_turn_at_its_span_with_the_exception():
    result = scan(TOOL_ERROR)
    assert result.rejects.height == 0
    tool = result.turns.filter(result.turns["span_id"] == "a32382f79f8ec253").row(0, named=True)
    assert (tool["turn_index"], tool["role"], tool["actor"], tool["tool_name"]) == (
        9,
        "tool",
        "env",
        "inspect_file_as_text",
    )
    assert tool["error"].startswith("FileConversionException: Could not convert 'data/gaia/")
    # What the agent was shown next: the observation replayed in the next call's input, at the
    # span TRAIL labels (d66194ef5db1af69: "Environment Setup Errors").
    shown = result.turns.filter(result.turns["span_id"] == "d66194ef5db1af69")
    # smolagents sends an observation to the model as a user message: the environment's.
    assert list(zip(shown["role"], shown["actor"], strict=True)) == [
        ("user", "env"),
        ("assistant", "agent"),
    ]
    assert shown["content"][0].startswith("Call id: call_2\nError:\nCode execution failed")
    # One smolagents tool-call message re-renders an earlier output: not a turn again.
    note = next(f.note for f in result.files)
    assert "1 smolagents tool-call message(s) not repeated" in note


def test_a_rate_limited_call_is_its_turn_with_the_error_and_the_run_failed():
    result = scan(RATE_LIMIT)
    assert result.rejects.height == 0
    rows = result.turns.to_dicts()
    assert len(rows) == 17
    assert [r["span_id"] for r in rows] == ["6bbe5f907cf89ced"] * 3 + ["61c56440907bf40a"] * 14
    # Step 8's call replays the history of the dropped steps 2-7; the output of step 1 that
    # it replays with smolagents' `<end_code>` appended is not read twice.
    assert [r["role"] for r in rows[2:6]] == ["assistant", "user", "assistant", "user"]
    assert rows[3]["actor"] == "env" and rows[3]["content"].startswith("Call id: call_1\n")
    failed = rows[-1]
    assert (failed["role"], failed["content"], failed["model"]) == ("assistant", None, None)
    assert failed["error"].startswith("RateLimitError: litellm.RateLimitError: AnthropicException")
    assert failed["source_line"] == 345
    traj = result.trajectories.row(0, named=True)
    assert traj["termination_reason"] == "error"
    assert traj["error"].startswith("AgentGenerationError: Error in generating model output:")


def _write(tmp_path, value) -> str:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(value, indent=4))
    return str(path)


def _span(span_id, name, kind, children=(), **attributes):
    return {
        "span_id": span_id,
        "span_name": name,
        "status_code": "Ok",
        "status_message": "",
        "events": [],
        "span_attributes": {"openinference.span.kind": kind, **attributes},
        "child_spans": list(children),
    }


def test_tool_calls_of_an_openinference_output_and_bad_spans_rejected_at_their_place(tmp_path):
    """A ToolCallingAgent's call (its output's tool_calls in OpenInference's flattened keys),
    a span that is no object and children that are no list: the bad parts are rejects with
    their JSON path, the rest is read."""
    out = "llm.output_messages.0.message"
    call = _span(
        "c1",
        "LiteLLMModel.__call__",
        "LLM",
        **{
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "find it",
            f"{out}.role": "assistant",
            f"{out}.tool_calls.0.tool_call.id": "call_1",
            f"{out}.tool_calls.0.tool_call.function.name": "web_search",
            f"{out}.tool_calls.0.tool_call.function.arguments": '{"query": "x"}',
            "llm.token_count.prompt": "12",
        },
    )
    bad_children = _span("s2", "Step 2", "CHAIN")
    bad_children["child_spans"] = "nope"
    agent = _span("a1", "ToolCallingAgent.run", "AGENT", [call, 7, bad_children])
    path = _write(tmp_path, {"trace_id": "t1", "spans": [agent]})
    result = forensics.scan([path])
    row = result.turns.filter(result.turns["role"] == "assistant").row(0, named=True)
    assert row["tool_calls"] == [
        {"id": "call_1", "name": "web_search", "arguments": '{"query": "x"}'}
    ]
    assert (row["agent_name"], row["span_id"], row["input_tokens"]) == (
        "ToolCallingAgent",
        "c1",
        12,
    )
    reasons = sorted(zip(result.rejects["json_path"], result.rejects["reason"], strict=True))
    assert reasons == [
        ("$.spans[0].child_spans[1]", "span is not a JSON object"),
        (
            "$.spans[0].child_spans[2].child_spans",
            "child_spans is not a list: the span's children were not read",
        ),
    ]


def test_a_record_without_spans_is_rejected_with_its_line(tmp_path):
    path = tmp_path / "traces.jsonl"
    good = {"trace_id": "t1", "spans": [_span("c1", "main", "CHAIN")]}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"trace_id": "t2"}) + "\n")
    result = forensics.scan([str(path)])
    assert result.trajectories.height == 1
    assert result.rejects.select("source_line", "reason").rows() == [
        (2, "record is not a span tree (no spans list)")
    ]
