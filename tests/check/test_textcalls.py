"""Tool calls written as text (issue 12 item 8): what enrich records and what the rules say.

The parser follows each harness: tau-bench's ReAct/Act agents `json.loads` the text after the
last `Action:`; JSON action blocks, Gemma's tool_code fences, Mistral [TOOL_CALLS] and Llama
<|python_tag|> payloads are read as their servers' parsers read them.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

import forensics
from forensics.check import textcalls

from conftest import DATA

REACT_RUN = (
    DATA / "textcalls" / "react-llama-3.1-8b-instruct-0.0_range_0-2_user-gpt-4o-llm_1118113344.json"
)


@pytest.mark.parametrize(
    ("text", "fmt", "name", "valid"),
    [
        # tau-bench ReAct, valid
        (
            'Thought:\nlook up\nAction:\n{"name": "get_order", "arguments": {"id": "1"}}',
            textcalls.REACT,
            "get_order",
            True,
        ),
        # the instruction's own example: respond without quotes
        (
            'Action:\n{"name": respond, "arguments": {"content": "Hi"}}',
            textcalls.REACT,
            "respond",
            False,
        ),
        # an invented Observation after the payload: tau-bench's json.loads fails (Extra data)
        ('Action:\n{"name": "f", "arguments": {}}\nObservation: 3', textcalls.REACT, "f", False),
        # tau-bench runs json.loads on the stripped text: a code fence around the call fails
        ('Action:\n```json\n{"name": "f", "arguments": {}}\n```', textcalls.REACT, "f", False),
        ("Thought: x\nAction: search\nAction Input: cats", textcalls.LANGCHAIN, "search", True),
        (
            '```json\n{"action": "get_order", "action_input": {"id": "1"}}\n```',
            textcalls.JSON_ACTION,
            "get_order",
            True,
        ),
        # the legacy OpenAI function_call object, written as content instead of returned
        (
            '{"function_call": {"action": "search_flights", "action_input": {"to": "SFO"}}}',
            textcalls.JSON_ACTION,
            "search_flights",
            True,
        ),
        (
            '```json\n{"function_call": {"name": "get_order", "arguments": {"id": "1"}}}\n```',
            textcalls.JSON_ACTION,
            "get_order",
            True,
        ),
        (
            '{"function_call": {"name": "get_order", "arguments": {"id": ',
            textcalls.JSON_ACTION,
            "get_order",
            False,
        ),
        (
            'Sure.\n```tool_code\nprint(default_api.get_weather(city="London"))\n```',
            textcalls.TOOL_CODE,
            "get_weather",
            True,
        ),
        ('```tool_code\nget_weather(city="London"\n```', textcalls.TOOL_CODE, None, False),
        ('[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', textcalls.MISTRAL, "get_weather", True),
        ('[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1', textcalls.MISTRAL, "f", False),
        (
            '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
            textcalls.PYTHON_TAG,
            "get_weather",
            True,
        ),
        (
            '<|python_tag|>brave_search.call(query="weather")',
            textcalls.PYTHON_TAG,
            "brave_search",
            True,
        ),
    ],
)
def test_parse_reads_each_protocol_as_its_harness_does(text, fmt, name, valid):
    found = textcalls.parse(text)
    assert found is not None
    assert found[0] == fmt
    call = found[1][0]
    assert call["name"] == name
    assert (call["error"] is None) == valid


@pytest.mark.parametrize(
    "text",
    [
        "Hello! How can I help you today?",
        "Action: please hold while I check.",  # words after the label, no payload
        "Internally my actions are [TOOL_CALLS] lists, but you don't need to worry.",
        '{\n  "message": "Your reservation EHGLP3 is confirmed."\n}',  # tau2 JSON-wrapped reply
        '```json\n{"name": "Ann Lee", "email": "ann@example.com"}\n```',  # data, not a call
        # a message dump whose function_call is null (tau-bench console lines) is no call
        '{"content": "Hi", "role": "assistant", "tool_calls": null, "function_call": null}',
        '{"function_call": null}',
        "Action:\n" + "[" * 100_000,  # nesting beyond the parser: no call, no crash
        "\n" * 200_000 + "{",  # blank lines: the gate stays linear
    ],
)
def test_parse_leaves_prose_and_data_alone(text):
    assert textcalls.parse(text) is None


def test_react_run_findings_are_exact():
    """A tau-bench ReAct results file: the healthy task is silent, the broken one is found
    where it breaks, with the file line of each turn."""
    records = json.loads(REACT_RUN.read_text())
    result = forensics.scan([str(REACT_RUN)])
    assert result.rejects.is_empty()
    assert result.turns.height == sum(len(r["traj"]) for r in records)
    agents = result.turns.filter(pl.col("actor") == "agent")
    assert set(agents["tools_attached"]) == {False}  # react: tools described in the prompt
    found = sorted(
        (r["task_id"], r["turn_index"], r["rule"], r["source_line"])
        for r in result.findings.iter_rows(named=True)
    )
    lines = REACT_RUN.read_text().splitlines()
    assert found == [
        ("1", 2, "invalid-text-tool-call", _line(lines, '{\\"name\\": respond')),
        ("1", 4, "fabricated-observation", _line(lines, "Observation: yusuf_rossi_9620")),
        ("1", 4, "invalid-text-tool-call", _line(lines, "Observation: yusuf_rossi_9620")),
        ("1", 8, "invalid-text-tool-call", _line(lines, '\\"#W2378156\\""')),
    ]
    messages = dict(zip(result.findings["turn_index"], result.findings["message"], strict=False))
    assert "tau-bench sends the raw text to the user" in messages[2]
    turns = result.turns.filter((pl.col("task_id") == "1") & (pl.col("turn_index") == 4))
    assert turns["text_call_format"].to_list() == [textcalls.REACT]
    assert turns["text_calls"].to_list()[0][0]["name"] == "find_user_id_by_email"


def _line(lines: list[str], needle: str) -> int:
    """1-based line of the message object (its "role" key opens it) holding `needle`."""
    hit = next(i for i, line in enumerate(lines) if needle in line)
    return next(i for i in range(hit, -1, -1) if lines[i].strip() == "{") + 1
