"""Streamed bodies: SSE framing and the reassembly of each API's deltas into one turn."""

from __future__ import annotations

from forensics.ingest.api import anthropic, openai_chat, openai_responses, sse


def test_sse_framing():
    text = (
        ": keep-alive comment\r\n\r\n"
        'event: message_start\r\ndata: {"a":\r\ndata: 1}\r\n\r\n'
        'data: {"text": "line\u2028separator"}\n\n'
        "data: [DONE]"  # the last event may lack its blank line
    )
    events = list(sse.events(text))
    assert [(e.name, e.data, e.line) for e in events] == [
        ("message_start", '{"a":\n1}', 3),
        (None, '{"text": "line\u2028separator"}', 7),
        (None, "[DONE]", 9),
    ]
    assert sse.looks_like(text)
    assert not sse.looks_like('{"data": 1}')


def chunk(delta, finish=None, index=0, **extra):
    return {"choices": [{"index": index, "delta": delta, "finish_reason": finish}], **extra}


def test_chat_stream_edge_cases():
    chunks = [
        # vLLM during the reasoning-field rename sends the same text under both names.
        chunk({"role": "assistant", "reasoning": "Hmm.", "reasoning_content": "Hmm."}),
        chunk({"content": "A"}, index=1),  # a second choice (n > 1) is not the conversation
        # Servers that send whole calls without an index (older Ollama): one call each.
        chunk({"tool_calls": [{"id": "t1", "function": {"name": "f", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"id": "t2", "function": {"name": "g", "arguments": '{"x": 1}'}}]}),
        chunk({}, "tool_calls", usage={"prompt_tokens": 5, "completion_tokens": 3}),
        chunk({}, None, usage={"prompt_tokens": 5, "completion_tokens": 4}),  # cumulative
    ]
    message, fields = openai_chat.stream_turn(chunks, done=False)
    assert message["reasoning"] == "Hmm."
    assert message["content"] is None
    assert [(c["id"], c["name"], c["arguments"]) for c in message["tool_calls"]] == [
        ("t1", "f", "{}"),
        ("t2", "g", '{"x": 1}'),
    ]
    assert fields["finish_reason_raw"] == "tool_calls"
    assert fields["stream_completed"] is True  # a finish reason is an ending even without [DONE]
    assert (fields["input_tokens"], fields["output_tokens"]) == (5, 4)
    assert "error" not in fields


def test_chat_stream_without_ending_is_cut_off():
    message, fields = openai_chat.stream_turn([chunk({"content": "Half"})], done=False)
    assert message["content"] == "Half"
    assert (fields["finish_reason_raw"], fields["stream_completed"]) == (None, False)
    assert fields["error"] == openai_chat.CUT_OFF
    _, done = openai_chat.stream_turn([chunk({"content": "Half"})], done=True)
    assert done["stream_completed"] is True and "error" not in done


def test_anthropic_stream_keeps_invalid_tool_input_and_errors():
    events = [
        {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 7}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a": '},
        },
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    message, fields = anthropic.stream_turn(events)
    assert message["tool_calls"] == [{"id": "t", "name": "f", "arguments": '{"a": '}]
    assert fields["stream_completed"] is False
    assert (
        fields["error"]
        == f"error inside the stream: overloaded_error: Overloaded; {anthropic.CUT_OFF}"
    )
    assert (fields["model"], fields["input_tokens"]) == ("claude", 7)


def test_anthropic_user_blocks_split_into_tool_and_user_messages():
    body = {
        "system": [{"type": "text", "text": "Policy."}],
        "messages": [
            {"role": "user", "content": "Hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "redacted_thinking", "data": "x"},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {"q": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [{"type": "text", "text": "42"}],
                    },
                    {"type": "text", "text": "And?"},
                ],
            },
        ],
    }
    messages = anthropic.request_messages(body)
    assert [(m["role"], m["content"]) for m in messages] == [
        ("system", "Policy."),
        ("user", "Hi"),
        ("assistant", None),
        ("tool", "42"),
        ("user", "And?"),
    ]
    assert messages[2]["tool_calls"] == [{"id": "t", "name": "f", "arguments": '{"q": 1}'}]


def test_responses_stream_without_terminal_event():
    events = [
        {"type": "response.created", "response": {"model": "gpt-4o", "status": "in_progress"}},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        },
        {"type": "response.output_text.delta", "output_index": 1, "delta": "Partial "},
        {"type": "response.output_text.delta", "output_index": 1, "delta": "answer"},
    ]
    message, fields = openai_responses.stream_turn(events)
    assert message["content"] == "Partial answer"
    assert [c["name"] for c in message["tool_calls"]] == ["f"]
    assert (fields["stream_completed"], fields["model"]) == (False, "gpt-4o")
    assert fields["error"] == openai_responses.CUT_OFF


def test_chat_request_fields_dialects():
    body = {
        "model": "qwen3",
        "messages": [{"role": "developer", "content": [{"type": "text", "text": "Rules"}]}],
        "max_tokens": 100,
        "max_completion_tokens": 300,  # vLLM and SGLang use max_completion_tokens first
        "functions": [{"name": "legacy"}],
        "function_call": {"name": "legacy"},
        "chat_template_kwargs": {"thinking": False},
        "stream": True,
    }
    fields = openai_chat.request_fields(body)
    assert fields == {
        "model": "qwen3",
        "max_output_tokens": 300,
        "tool_count": 1,
        "tools_attached": True,
        "tool_choice": "function:legacy",
        "stream": True,
        "enable_thinking": False,
        "offered_tools": ["legacy"],
    }
    assert openai_chat.request_messages(body)[0] == {
        "role": "system",
        "content": "Rules",
        "reasoning": None,
        "tool_calls": [],
    }


def test_azure_filter_annotation_chunks_stay_in_their_stream(tmp_path):
    """Azure OpenAI sends its content-filter results as chunks with an empty id: the prompt's
    before the first delta, the asynchronous filter's after the finish reason. They are part of
    the one stream, not a second one cut off (a false stream-cut-off on a complete stream, real
    corpus: microsoft__semantic-kernel__azure_streaming_async_filter.txt)."""
    import json

    import forensics

    safe = {"filtered": False, "severity": "safe"}
    annotations = [
        {"choices": [], "created": 0, "id": "", "model": "", "object": "",
         "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {"hate": safe}}]},
        chunk({"content": "", "role": "assistant"}, id="chatcmpl-1", model="gpt-4o"),
        chunk({"content": "Kindness"}, id="chatcmpl-1", model="gpt-4o"),
        chunk({}, "stop", id="chatcmpl-1", model="gpt-4o"),
        {"choices": [{"content_filter_offsets": {"check_offset": 0, "start_offset": 0,
                                                 "end_offset": 8},
                      "content_filter_results": {"hate": safe}, "finish_reason": None,
                      "index": 0}],
         "created": 0, "id": "", "model": "", "object": ""},
    ]  # fmt: skip
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in annotations) + "data: [DONE]\n\n"
    path = tmp_path / "azure.txt"
    path.write_text(body)
    result = forensics.scan([str(path)])
    assert result.turns.select("content", "finish_reason", "stream_completed").rows() == [
        ("Kindness", "stop", True)
    ]
    assert result.findings.is_empty()
