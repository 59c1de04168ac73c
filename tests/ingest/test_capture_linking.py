"""Linking captured calls into trajectories: prefix matching, forks, retries, linear cost."""

from __future__ import annotations

import json

import polars as pl
import pytest

import forensics
from forensics.ingest.api import linking

SYSTEM = {"role": "system", "content": "You are an agent."}


def response(content, calls=(), finish="stop"):
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    return {
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def agent_loop(user: str, steps: int, tag: str = "") -> list[dict]:
    """One conversation of `steps` calls, each re-sending the growing history."""
    history = [SYSTEM, {"role": "user", "content": user}]
    records = []
    for step in range(steps):
        answer = response(None, [("lookup", json.dumps({"step": step, "tag": tag}))], "tool_calls")
        records.append(
            {
                "request": {"model": "m", "messages": list(history), "tools": [{}]},
                "response": answer,
            }
        )
        echoed = {
            **answer["choices"][0]["message"],
            "tool_calls": answer["choices"][0]["message"]["tool_calls"],
        }
        history += [
            echoed,
            {"role": "tool", "tool_call_id": f"c{step}", "content": f"result {step}"},
        ]
    return records


def scan(tmp_path, records) -> forensics.ScanResult:
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return forensics.scan([str(path)])


def lines_by_trajectory(result) -> list[list[int]]:
    groups = result.turns.sort("turn_index").group_by("trajectory_id", maintain_order=True)
    return sorted(g["source_line"].to_list() for _, g in groups)


def test_an_agent_loop_is_one_trajectory_with_each_message_once(tmp_path):
    result = scan(tmp_path, agent_loop("Where is my order?", 6))
    assert result.trajectories.height == 1
    # system + user, then per call: its answer, and the tool result the next call brings.
    assert result.turns.height == 2 + 6 + 5
    assert result.turns.sort("turn_index")["source_line"].to_list() == [1, 1, 1] + [
        n for n in range(2, 7) for _ in range(2)
    ]
    answers = result.turns.filter(pl.col("role") == "assistant")
    assert answers["finish_reason"].to_list() == ["tool_calls"] * 6


def test_interleaved_conversations_and_identical_trials_stay_apart(tmp_path):
    a = agent_loop("Cancel order #1", 3, "a")
    b = agent_loop("Cancel order #1", 3, "b")  # same opening, different answers: another trial
    c = agent_loop("Cancel order #1", 3, "a")  # byte-identical to a: a third trial
    records = [a[0], b[0], c[0], a[1], b[1], c[1], a[2], c[2], b[2]]
    result = scan(tmp_path, records)
    assert lines_by_trajectory(result) == [
        [1, 1, 1, 4, 4, 7, 7],
        [2, 2, 2, 5, 5, 9, 9],
        [3, 3, 3, 6, 6, 8, 8],
    ]


def test_a_call_that_continues_an_earlier_state_forks_with_its_whole_history(tmp_path):
    loop = agent_loop("Hello", 3)
    # After call 3, a client re-sends call 2's conversation with a different tool result.
    fork = json.loads(json.dumps(loop[1]))
    fork["request"]["messages"][-1]["content"] = "another result"
    result = scan(tmp_path, [*loop, fork])
    assert lines_by_trajectory(result) == [[1, 1, 1, 2, 2, 3, 3], [4, 4, 4, 4, 4]]


def test_echoed_history_without_reasoning_still_links(tmp_path):
    first = {
        "request": {"model": "m", "messages": [SYSTEM, {"role": "user", "content": "hi"}]},
        "response": response("<think>\nGreet back.\n</think>\n\nHello! How can I help?"),
    }
    # Clients strip the reasoning block (and ids, whitespace) before sending the history back.
    second = {
        "request": {
            "model": "m",
            "messages": [
                SYSTEM,
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": "Hello! How can I help?  ",
                    "reasoning_content": "x",
                },
                {"role": "user", "content": "Track #3"},
            ],
        },
        "response": response("Sure."),
    }
    result = scan(tmp_path, [first, second])
    assert lines_by_trajectory(result) == [[1, 1, 1, 2, 2]]


def test_tool_arguments_compare_as_json_not_as_text(tmp_path):
    first = {
        "request": {"model": "m", "messages": [SYSTEM, {"role": "user", "content": "go"}]},
        "response": response(None, [("f", '{"b": 1, "a": [1, 2]}')], "tool_calls"),
    }
    echoed = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "other-id",
                "type": "function",
                "function": {"name": "f", "arguments": '{"a":[1,2],"b":1}'},
            }
        ],
    }
    second = {
        "request": {
            "model": "m",
            "messages": [
                SYSTEM,
                {"role": "user", "content": "go"},
                echoed,
                {"role": "tool", "content": "ok"},
            ],
        },
        "response": response("done"),
    }
    result = scan(tmp_path, [first, second])
    assert lines_by_trajectory(result) == [[1, 1, 1, 2, 2]]


def test_responses_api_chains_by_previous_response_id(tmp_path):
    first = {
        "request": {
            "url": "https://api.openai.com/v1/responses",
            "body": {"model": "o4-mini", "instructions": "Be brief.", "input": "Refund #7?"},
        },
        "response": {
            "status": 200,
            "body": {
                "id": "resp_1",
                "object": "response",
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "Which email?"}],
                    }
                ],
            },
        },
    }
    second = {
        "request": {
            "url": "https://api.openai.com/v1/responses",
            "body": {
                "model": "o4-mini",
                "instructions": "Be brief.",
                "previous_response_id": "resp_1",
                "input": [{"role": "user", "content": "a@b.c"}],
            },
        },
        "response": {
            "status": 200,
            "body": {
                "id": "resp_2",
                "object": "response",
                "status": "completed",
                "output": [
                    {"type": "function_call", "call_id": "k", "name": "refund", "arguments": "{}"}
                ],
            },
        },
    }
    result = scan(tmp_path, [first, second])
    assert result.turns.select("source_line", "role").rows() == [
        (1, "system"),
        (1, "user"),
        (1, "assistant"),
        (2, "user"),
        (2, "assistant"),
    ]
    assert result.turns["finish_reason"].to_list()[-1] == "tool_calls"


def test_linking_hashes_each_message_once(tmp_path, monkeypatch):
    """The cost is one fingerprint per message a conversation added plus one per answer: the
    history a request re-sends resumes the previous request's running hash (the prefix parser
    shares those message objects), whatever the number of live trajectories."""
    fingerprints = reductions = 0
    real_fingerprint, real_canonical = linking.Linker._canonical, linking.canonical

    def fingerprint(self, message):
        nonlocal fingerprints
        fingerprints += 1
        return real_fingerprint(self, message)

    def canonical(message, cache):
        nonlocal reductions
        reductions += 1
        return real_canonical(message, cache)

    monkeypatch.setattr(linking.Linker, "_canonical", fingerprint)
    monkeypatch.setattr(linking, "canonical", canonical)
    records = []
    loops = [agent_loop(f"task {i}", 8, str(i)) for i in range(5)]
    for step in range(8):
        records += [loop[step] for loop in loops]
    result = scan(tmp_path, records)
    added = sum(len(loop[-1]["request"]["messages"]) for loop in loops)
    assert fingerprints == added + len(records)
    assert reductions <= fingerprints
    assert result.trajectories.height == 5


@pytest.mark.parametrize("steps", [1, 4])
def test_trajectory_source_line_is_its_first_call(tmp_path, steps):
    result = scan(tmp_path, agent_loop("x", steps))
    assert result.trajectories["source_line"].to_list() == [1]
