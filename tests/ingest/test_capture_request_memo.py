"""A capture's requests share their tools and caps: what those decide is worked out once.

exchange._request_side remembers request_fields and params_digest under
requestinfo.params_key while a file is read (requestinfo.shared_items). These tests hold it to
the promise that makes that safe: every call comes out exactly as without the memo.
"""

from __future__ import annotations

import json
import random

from forensics.ingest.api import envelopes, exchange, requestinfo
from forensics.ingest.api.prefix import PrefixParser

from conftest import DATA

TOOLS = [
    {"type": "function", "function": {"name": f"tool_{i}", "parameters": {"type": "object"}}}
    for i in range(3)
]


def _capture(seed: int) -> list[str]:
    """Agent loops whose requests vary their scalar parameters in ways that compare equal but
    pickle apart (0.0 and -0.0, 1 and 1.0 and True), with the tools after the messages (the
    prefix parser then hands every request the same tool list) or before them."""
    rng = random.Random(seed)
    lines = []
    for conv in range(6):
        messages = [{"role": "user", "content": f"task {conv}"}]
        for step in range(5):
            body: dict = {}
            if conv % 2:
                body["tools"] = TOOLS
            body["model"] = rng.choice(["m", "n"])
            body["messages"] = list(messages)
            if conv % 2 == 0:
                body["tools"] = TOOLS
            body["temperature"] = rng.choice([0.0, -0.0, 0.7])
            body["max_tokens"] = rng.choice([1, 1.0, True, None, "1"])
            if step % 3 == 0:
                body["stop"] = ["\n"]
            answer = {"role": "assistant", "content": f"step {step}"}
            response = {"object": "chat.completion", "choices": [{"message": answer}]}
            lines.append(json.dumps({"request": {"body": body}, "response": response}))
            messages += [answer, {"role": "user", "content": f"more {step}"}]
    return lines


def _calls(values: list[dict], *, memo: bool) -> list[exchange.Call | None]:
    def build(line: int, record: dict) -> exchange.Call | None:
        try:
            return exchange.build(envelopes.exchange(record, "pair"), line)
        except exchange.NotACall:
            return None

    if not memo:
        return [build(i, v) for i, v in enumerate(values)]
    with requestinfo.shared_items():
        calls = [build(i, v) for i, v in enumerate(values)]
        remembered = len(requestinfo.params_memo() or {})
    assert remembered < len(values)  # the memo was used, not only filled
    return calls


def test_remembered_request_columns_equal_fresh_ones():
    lines = _capture(3)
    for name in ("vllm_agent_loop.jsonl", "envelopes_streams.jsonl"):
        lines += (DATA / "capture" / name).read_text().splitlines()
    parser = PrefixParser()
    values = []
    for line in lines:
        try:
            value = parser.loads(line)
        except json.JSONDecodeError:
            continue  # the fixtures' bad lines
        if isinstance(value, dict) and envelopes.kind(value) == "pair":
            values.append(value)
    fresh, remembered = _calls(values, memo=False), _calls(values, memo=True)
    assert sum(c is not None for c in fresh) > 30
    for a, b in zip(fresh, remembered, strict=True):
        if a is None or b is None:
            assert a is b
            continue
        assert a.fields == b.fields
        assert a.params_digest == b.params_digest
    # The varied scalars really were told apart: 3 temperatures x 5 caps x 2 models at most.
    assert len({c.params_digest for c in remembered if c is not None}) > 10


def test_each_turn_gets_its_own_offered_tools_list():
    line = _capture(1)[0]
    parser = PrefixParser()
    with requestinfo.shared_items():
        a, b = (
            exchange.build(envelopes.exchange(v, "pair"), 1)
            for v in (parser.loads(line), parser.loads(line))
        )
    assert a.fields["offered_tools"] == ["tool_0", "tool_1", "tool_2"]
    assert a.fields["offered_tools"] is not b.fields["offered_tools"]


def test_params_key_tells_apart_what_pickles_apart():
    def key(**body):
        found = requestinfo.params_key(body)
        return None if found is None else found[0]

    tools = [{"type": "function"}]
    assert key(model="m", temperature=0.0) != key(model="m", temperature=-0.0)
    assert len({key(n=1), key(n=1.0), key(n=True), key(n="1"), key(n=None)}) == 5
    assert key(tools=tools) == key(tools=tools)
    assert key(tools=tools) != key(tools=[{"type": "function"}])  # lists by identity
    assert key(model="m", n=1) != key(n=1, model="m")  # order is part of a pickle
    # The conversation is not part of it; a value of another type gives no key.
    assert key(model="m", messages=[1]) == key(model="m", messages=[2])
    assert key(model="m", extra=(1, 2)) is None
