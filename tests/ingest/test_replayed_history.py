"""Captured traffic: history a client re-sends is not scored as new agent turns, and a retry that
re-sends an earlier request continues its trajectory (issue 13, reasoning-leak precision)."""

from __future__ import annotations

import json

import polars as pl

import forensics

SYSTEM = {"role": "system", "content": "You are a retail agent."}
THINKING = "<think>\nThe user greets me; greet back.\n</think>\n\nHello! How can I help?"


def chat(content: str) -> dict:
    return {
        "object": "chat.completion",
        "model": "Qwen/Qwen3-8B",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


def scan(tmp_path, records) -> forensics.ScanResult:
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return forensics.scan([str(path)])


def test_reasoning_a_client_replays_in_history_is_not_a_leak(tmp_path):
    """The capture starts mid-conversation: the client re-sends an earlier answer with its
    reasoning kept inline. Only the answer the capture holds is judged."""
    history = [
        SYSTEM,
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": THINKING},
        {"role": "user", "content": "Where is my order #W2378156?"},
    ]
    record = {
        "request": {"model": "Qwen/Qwen3-8B", "messages": history},
        "response": chat("Could you give me your email address?"),
    }
    result = scan(tmp_path, [record])
    turns = result.turns.sort("turn_index")
    assert turns["replayed"].to_list() == [True, True, True, True, False]
    assert result.findings.filter(pl.col("rule") == "reasoning-leak").is_empty()


def test_a_leak_in_a_captured_answer_is_still_found_once(tmp_path):
    first = {
        "request": {
            "model": "Qwen/Qwen3-8B",
            "messages": [SYSTEM, {"role": "user", "content": "hi"}],
        },
        "response": chat(THINKING),
    }
    # The client replays the answer verbatim, reasoning and all, in the next request.
    second = {
        "request": {
            "model": "Qwen/Qwen3-8B",
            "messages": [
                SYSTEM,
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": THINKING},
                {"role": "user", "content": "Where is my order?"},
            ],
        },
        "response": chat("Could you give me your email address?"),
    }
    result = scan(tmp_path, [first, second])
    leaks = result.findings.filter(pl.col("rule") == "reasoning-leak")
    assert (leaks["turn_index"].to_list(), leaks["source_line"].to_list()) == ([2], [1])


def test_a_retry_of_an_earlier_request_continues_its_trajectory(tmp_path):
    """After two calls the client re-sends the first follow-up request verbatim (it re-samples
    that answer): the retry joins the trajectory with its new answer only."""
    opening = [SYSTEM, {"role": "user", "content": "hi"}]
    first = {"request": {"model": "m", "messages": opening}, "response": chat("Hello!")}
    follow = [
        *opening,
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Order?"},
    ]
    second = {"request": {"model": "m", "messages": follow}, "response": chat("Which order?")}
    third = {
        "request": {
            "model": "m",
            "messages": [
                *follow,
                {"role": "assistant", "content": "Which order?"},
                {"role": "user", "content": "#W1"},
            ],
        },
        "response": chat("Found it."),
    }
    retry = {"request": {"model": "m", "messages": follow}, "response": chat("Sure, which one?")}
    result = scan(tmp_path, [first, second, third, retry])
    assert result.trajectories.height == 1
    turns = result.turns.sort("turn_index")
    assert turns["source_line"].to_list() == [1, 1, 1, 2, 2, 3, 3, 4]
    assert turns["content"].to_list()[-1] == "Sure, which one?"
    assert turns["replayed"].to_list()[-1] is False


def test_identical_first_requests_of_parallel_trials_stay_apart(tmp_path):
    opening = [SYSTEM, {"role": "user", "content": "hi"}]
    a = {"request": {"model": "m", "messages": opening}, "response": chat("Hello!")}
    b = {"request": {"model": "m", "messages": opening}, "response": chat("Hi there!")}
    result = scan(tmp_path, [a, b])
    assert result.trajectories.height == 2
