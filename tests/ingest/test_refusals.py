"""Refusals and safety stops as one signal across providers (issue 21 item 3): the refusal a
model returns apart from content is read, and the derived column `refused` joins it with the
finish reasons that withhold an answer, so the empty-answer rules do not blame the plumbing for
a refusal; tool results of OpenAI-style captures keep the id of the call they answer."""

from __future__ import annotations

import json

import forensics
from forensics.ingest.api import openai_chat, openai_responses
from forensics.ingest.api.exchange import Exchange, build

CHAT = "https://api.openai.com/v1/chat/completions"
TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_order", "parameters": {"type": "object", "properties": {}}},
    }
]
REFUSAL = "I'm sorry, but I can't help with that request."


def _chat_response(message: dict, finish: str = "stop") -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12},
    }


def _scan(tmp_path, records: list[dict]) -> forensics.ScanResult:
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return forensics.scan([str(path)])


def test_openai_chat_refusal_field_is_read_and_reported_as_a_refusal(tmp_path):
    request = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "Write a phishing email from my bank."}],
        "tools": TOOLS,
    }
    response = _chat_response({"role": "assistant", "content": None, "refusal": REFUSAL})
    result = _scan(tmp_path, [{"url": CHAT, "request": request, "response": response}])
    turn = result.turns.filter(result.turns["role"] == "assistant").row(0, named=True)
    assert (turn["content"], turn["refusal"], turn["finish_reason"]) == (None, REFUSAL, "stop")
    assert turn["refused"] is True
    # stop-no-tool-calls (an empty stop while tools were attached) blamed the model's answer
    # going missing; the refusal is content-filtered's
    assert [(f["rule"], f["turn_index"]) for f in result.findings.iter_rows(named=True)] == [
        ("content-filtered", 1)
    ]
    assert result.findings["evidence"][0] == REFUSAL


def test_a_streamed_refusal_is_joined_from_its_deltas():
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "refusal": ""}}]},
        {"choices": [{"index": 0, "delta": {"refusal": "I'm sorry, "}}]},
        {"choices": [{"index": 0, "delta": {"refusal": "I can't."}, "finish_reason": "stop"}]},
    ]
    message, _ = openai_chat.stream_turn(chunks, True)
    assert (message["content"], message["refusal"]) == (None, "I'm sorry, I can't.")


def test_responses_refusal_part_is_a_refusal_not_the_answer_text():
    items = [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": REFUSAL}],
        }
    ]
    message = openai_responses.output_message(items)
    assert (message["content"], message["refusal"]) == (None, REFUSAL)


def test_every_provider_blocking_stop_is_refused_and_language_is_not(tmp_path):
    cases = {
        "content_filter": True,  # OpenAI, Azure
        "refusal": True,  # Anthropic
        "SAFETY": True,  # Gemini
        "RECITATION": True,
        "PROHIBITED_CONTENT": True,
        "BLOCKLIST": True,
        "SPII": True,
        "guardrail_intervened": True,  # Bedrock Converse
        "LANGUAGE": False,  # Gemini: unsupported language, nothing was blocked
        "stop": False,
    }
    records = []
    for i, finish in enumerate(cases):
        request = {"model": "m", "messages": [{"role": "user", "content": f"question {i}"}]}
        response = _chat_response({"role": "assistant", "content": "partial"}, finish)
        records.append({"url": CHAT, "request": request, "response": response})
    result = _scan(tmp_path, records)
    assistant = result.turns.filter(result.turns["role"] == "assistant")
    got = dict(zip(assistant["finish_reason_raw"], assistant["refused"], strict=True))
    assert got == cases


def test_tool_results_of_a_chat_capture_keep_their_call_id_so_pairing_can_be_judged():
    call = build(
        Exchange(
            url=CHAT,
            request={
                "model": "gpt-4o",
                "tools": TOOLS,
                "messages": [
                    {"role": "user", "content": "Where is order 7?"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_7",
                                "type": "function",
                                "function": {"name": "get_order", "arguments": "{}"},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "call_7", "content": "shipped"},
                ],
            },
            response=_chat_response({"role": "assistant", "content": "It has shipped."}),
        ),
        1,
    )
    assert call.normalise is not None
    tool = call.normalise(call.messages[2])
    assert (tool["role"], tool["tool_call_id"]) == ("tool", "call_7")


def test_tool_call_ids_now_judge_a_chat_capture(tmp_path):
    history = [
        {"role": "user", "content": "Where is order 7?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_7",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": "{}"},
                }
            ],
        },
        # the client answered a call id the model never made (its history was edited)
        {"role": "tool", "tool_call_id": "call_8", "content": "shipped"},
    ]
    request = {"model": "gpt-4o", "tools": TOOLS, "messages": history}
    response = _chat_response({"role": "assistant", "content": "It has shipped."})
    result = _scan(tmp_path, [{"url": CHAT, "request": request, "response": response}])
    tools = result.turns.filter(result.turns["role"] == "tool")
    assert tools["tool_call_id"].to_list() == ["call_8"]
    found = [(f["rule"], f["turn_index"]) for f in result.findings.iter_rows(named=True)]
    assert ("tool-call-ids", 2) in found


def test_a_client_that_replays_a_call_under_its_own_id_is_not_a_pairing_fault(tmp_path):
    # pydantic-ai replayed Responses calls under their item id (fc_…) instead of call_id, the
    # result consistently so: the provider saw matching pairs, and so must the rule
    responses = "https://api.openai.com/v1/responses"
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_capital",
        "arguments": '{"country": "France"}',
    }
    tools = [{"type": "function", "name": "get_capital", "parameters": {"type": "object"}}]
    first = {
        "request": {
            "url": responses,
            "body": {"model": "gpt-4o", "tools": tools, "input": "Capital of France?"},
        },
        "response": {"body": {"object": "response", "status": "completed", "output": [call]}},
    }
    replayed = {**call, "call_id": "fc_1"}
    second_input = [
        {"role": "user", "content": "Capital of France?"},
        replayed,
        {"type": "function_call_output", "call_id": "fc_1", "output": "Paris"},
    ]
    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Paris."}],
    }
    second = {
        "request": {
            "url": responses,
            "body": {"model": "gpt-4o", "tools": tools, "input": second_input},
        },
        "response": {"body": {"object": "response", "status": "completed", "output": [answer]}},
    }
    result = _scan(tmp_path, [first, second])
    tools = result.turns.filter(result.turns["role"] == "tool")
    assert tools["tool_call_id"].to_list() == ["call_1"]
    assert result.findings.is_empty()
