"""forensics.ingest.api.prefix: each line reads exactly as json.loads reads it, history reused."""

from __future__ import annotations

import json
import random

import pytest

from forensics.ingest.api.prefix import PrefixParser

SYSTEM = {"role": "system", "content": "You are an agent. " * 10}
TOOLS = [{"type": "function", "function": {"name": f"t{i}", "parameters": {}}} for i in range(3)]


def _loop(turns: int, seed: int, *, tools: bool = True, spacing: str = ", ") -> list[str]:
    rng = random.Random(seed)
    messages: list[dict] = [SYSTEM, {"role": "user", "content": f"task {seed}"}]
    lines = []
    for k in range(turns):
        body: dict = {"model": "m", "messages": list(messages)}
        if tools:
            body["tools"] = TOOLS
        answer = {"role": "assistant", "content": f"step {k} " + "x" * rng.randint(0, 50)}
        record = {"request": {"body": body}, "response": {"choices": [{"message": answer}]}}
        lines.append(json.dumps(record, separators=(spacing, ": ")))
        messages += [answer, {"role": "tool", "content": f"result {k} \u00e9\\n"}]
    return lines


def _check(lines: list[str]) -> PrefixParser:
    parser = PrefixParser()
    for line in lines:
        try:
            expected = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            with pytest.raises(type(exc)) as got:
                parser.loads(line)
            assert str(got.value) == str(exc)
            continue
        assert parser.loads(line) == expected, line[:200]
    return parser


def test_agent_loops_interleaved_reuse_the_history():
    loops = [_loop(8, seed) for seed in range(4)]
    lines = [line for step in zip(*loops, strict=True) for line in step]
    parser = _check(lines)
    total = sum(map(len, lines))
    assert parser.reused_chars > total // 2


def test_shared_messages_are_the_same_objects():
    parser = PrefixParser()
    first, second = (parser.loads(line) for line in _loop(2, 1))
    old = first["request"]["body"]["messages"]
    new = second["request"]["body"]["messages"]
    assert new[: len(old)] == old
    assert all(a is b for a, b in zip(old, new, strict=False))
    assert new is not old  # each record has its own list


def test_retries_forks_and_compact_spacing():
    lines = _loop(5, 7, spacing=",")
    forked = _loop(5, 7)[:3]
    lines = lines[:3] + lines[2:3] + lines[3:] + forked + lines[:2]
    _check(lines)


def test_lines_that_must_be_read_whole():
    base = _loop(3, 3)
    hostile = [
        # the key spelled in a string, escaped, twice, or with another value
        base[1].replace('"model": "m"', '"model": "\\"messages\\": ["'),
        base[1].replace('"messages":', '"m\\u0065ssages": [], "messages":'),
        base[1].replace('"messages":', '"messages": [], "messages":'),
        base[1].replace('{"request"', '{"other": {"messages": 1}, "request"'),
        base[2][: len(base[2]) // 2],  # cut in the middle of the history
        base[2].replace('"tool"', '"tool"]', 1),  # broken inside the new part
        base[2][:-1] + ', "tools": [1]}',  # tools of another object
        base[2]
        .replace('"messages": [', '"other": {"messages": [', 1)
        .replace('"tools":', '"x": 0}, "tools":', 1),
        base[2].replace('"messages": [', '"messages": ["not a dict", ', 1),
        '{"request": {"body": {"messages": "a string"}}}',
        '{"messages": [' * 3,
        "[" * 100_000,
        '{"request": {"body": {"messages": [], "tools": [1, 2]}}}',
    ]
    _check([*base[:2], *hostile, *base])


def test_tools_lists_are_parsed_once_and_shared():
    parser = PrefixParser()
    values = [parser.loads(line) for line in _loop(3, 5)]
    tools = [v["request"]["body"]["tools"] for v in values]
    assert tools[0] == TOOLS and tools[1] is tools[0] and tools[2] is tools[0]
