"""The dialects beyond the chat APIs, one call at a time: Ollama's native API, Bedrock Converse
(and its binary event stream), the servers' native generate endpoints, Gemini bodies without
candidates. Live captures reach them the same way cassettes do."""

from __future__ import annotations

import json
import struct
import zlib

import polars as pl
import pytest

import forensics
from forensics.ingest.api import bedrock, exchange
from forensics.ingest.api.exchange import Exchange, NotACall

from conftest import DATA

OLLAMA = "http://localhost:11434"
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-lite-v1%3A0"


def build(**kwargs) -> exchange.Call:
    return exchange.build(Exchange(**kwargs), 1)


def ndjson(*lines: dict) -> str:
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def frame(event: str, payload: dict, kind: str = "event") -> bytes:
    name = ":event-type" if kind == "event" else ":exception-type"
    headers = b""
    for key, value in ((name, event), (":message-type", kind)):
        headers += bytes([len(key)]) + key.encode() + b"\x07"
        headers += struct.pack(">H", len(value)) + value.encode()
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


# --- Ollama ----------------------------------------------------------------------------------


def chunk(content: str = "", thinking: str | None = None, **extra) -> dict:
    message = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    return {"model": "qwen3:4b", "created_at": "t", "message": message, "done": False, **extra}


def test_ollama_chat_stream_is_merged():
    call = build(
        url=f"{OLLAMA}/api/chat",
        request={"model": "qwen3:4b", "messages": [{"role": "user", "content": "hi"}],
                 "options": {"num_predict": 3, "num_ctx": 8192}},
        response=ndjson(
            chunk(thinking="Greet"),
            chunk("Hel"),
            chunk("lo", done=True, done_reason="length", prompt_eval_count=11, eval_count=3),
        ),
    )  # fmt: skip
    out, fields = call.output, call.fields
    assert (out["content"], out["reasoning"]) == ("Hello", "Greet")
    assert (fields["finish_reason_raw"], fields.get("finish_reason")) == ("length", None)
    assert (fields["max_output_tokens"], fields["input_tokens"], fields["output_tokens"]) == (
        3,
        11,
        3,
    )
    assert (fields["stream"], fields["stream_completed"]) == (True, True)
    assert fields["endpoint"] == OLLAMA
    assert [m["content"] for m in call.messages] == ["hi"]


def test_ollama_length_short_of_num_predict_is_the_context_window():
    call = build(
        url=f"{OLLAMA}/api/chat",
        request={"model": "m", "messages": [], "options": {"num_predict": 500, "num_ctx": 2048}},
        response={"model": "m", "message": {"role": "assistant", "content": "x"}, "done": True,
                  "done_reason": "length", "prompt_eval_count": 2000, "eval_count": 48},
    )  # fmt: skip
    assert call.fields["finish_reason"] == "model_length"
    # Without the request the cap is unknown: the raw reason decides (max_tokens).
    body_only = build(response={"model": "m", "message": {"content": "x"}, "done": True,
                                "done_reason": "length", "eval_count": 48})  # fmt: skip
    assert "finish_reason" not in body_only.fields
    assert body_only.fields["finish_reason_raw"] == "length"


def test_ollama_stream_cut_off_and_error_line():
    cut = build(url=f"{OLLAMA}/api/chat", response=ndjson(chunk("a"), chunk("b")))
    assert cut.fields["stream_completed"] is False
    assert "done: true" in cut.fields["error"]
    failed = build(url=f"{OLLAMA}/api/chat", status=404, response={"error": "model 'x' not found"})
    assert failed.failed and failed.fields["error"] == "model 'x' not found"
    assert failed.output["placeholder"] is True


def test_ollama_generate_and_tools_from_the_request_alone():
    call = build(
        request={"model": "llama3.1", "prompt": "Tell a story.", "system": "Be brief.",
                 "options": {"num_predict": -1}, "think": "high", "stream": False},
        response={"model": "llama3.1", "response": "<think>x</think>Once", "done": True,
                  "done_reason": "stop"},
    )  # fmt: skip
    assert [m["role"] for m in call.messages] == ["system", "user"]
    assert call.output["content"] == "<think>x</think>Once"
    assert (call.fields["max_output_tokens"], call.fields["reasoning_effort"]) == (None, "high")
    assert call.fields["enable_thinking"] is True
    history = build(
        url=f"{OLLAMA}/api/chat",
        request={"model": "m", "messages": [
            {"role": "assistant", "content": "",
             "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
            {"role": "tool", "content": "42", "tool_name": "f"}]},
        response={"model": "m", "message": {"role": "assistant", "content": "42"}, "done": True,
                  "done_reason": "stop"},
    )  # fmt: skip
    assert history.messages[0]["tool_calls"] == [{"id": None, "name": "f", "arguments": '{"a": 1}'}]
    assert history.messages[1]["role"] == "tool"


# --- Bedrock ---------------------------------------------------------------------------------


CONVERSE = {
    "system": [{"text": "Be terse."}],
    "messages": [
        {"role": "user", "content": [{"text": "Weather?"}]},
        {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "tool", "signature": "s"}}},
            {"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Oslo"}}}]},
        {"role": "user", "content": [
            {"toolResult": {"toolUseId": "t1", "content": [{"json": {"c": 3}}]}}]},
    ],
    "inferenceConfig": {"maxTokens": 64},
    "toolConfig": {"tools": [{"toolSpec": {"name": "weather"}}], "toolChoice": {"any": {}}},
    "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
}  # fmt: skip


def test_bedrock_request_history_and_fields():
    call = build(
        url=f"{BEDROCK}/converse",
        request=CONVERSE,
        response={"output": {"message": {"role": "assistant", "content": [{"text": "3C"}]}},
                  "stopReason": "end_turn", "usage": {"inputTokens": 50, "outputTokens": 2,
                                                      "cacheReadInputTokens": 10}},
    )  # fmt: skip
    roles = [m["role"] for m in call.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert call.messages[2]["reasoning"] == "tool"
    assert call.messages[2]["tool_calls"][0]["arguments"] == '{"city": "Oslo"}'
    assert (call.messages[3]["content"], call.messages[3]["tool_call_id"]) == ('{"c": 3}', "t1")
    fields = call.fields
    assert (fields["max_output_tokens"], fields["tool_count"], fields["tool_choice"]) == (
        64,
        1,
        "any",
    )
    assert (fields["enable_thinking"], fields["reasoning_budget"]) == (True, 1024)
    assert (fields["input_tokens"], fields["output_tokens"], fields["model"]) == (
        60,
        2,
        "amazon.nova-lite-v1:0",
    )


def test_bedrock_request_is_recognised_without_url_or_answer():
    call = build(request=CONVERSE)
    assert call.fields["max_output_tokens"] == 64  # the Bedrock reader, not Chat Completions
    assert call.fields["error"] == "response body not captured"


def test_bedrock_body_without_a_message_is_an_error_not_an_empty_turn():
    call = build(url=f"{BEDROCK}/converse", request=CONVERSE, response={"stopReason": "end_turn"})
    assert call.output["placeholder"] is True
    assert call.fields["error"] == "Bedrock response without output.message"
    odd = build(url=f"{BEDROCK}/converse", response={"unexpected": 1})
    assert odd.fields["error"].startswith("Bedrock response without output.message")


def test_bedrock_event_stream_exceptions_and_damage():
    stream = frame("messageStart", {"role": "assistant"})
    stream += frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Par"}})
    stream += frame("throttlingException", {"message": "Too many requests"}, kind="exception")
    call = build(url=f"{BEDROCK}/converse-stream", response=stream)
    assert call.output["content"] == "Par"
    assert call.fields["stream_completed"] is False
    assert "throttlingException: Too many requests" in call.fields["error"]
    assert bedrock.CUT_OFF in call.fields["error"]
    damaged = stream[:-3]  # the last frame cut short
    chunks = bedrock.eventstream_chunks(damaged)
    assert chunks[-1]["exception"]["type"] == "damagedFrame"
    assert not bedrock.is_eventstream(b"\x00" * 20)


def test_bedrock_stream_recognised_from_its_chunks():
    stream = frame("messageStart", {"role": "assistant"})
    stream += frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "ok"}})
    stream += frame("messageStop", {"stopReason": "content_filtered"})
    call = build(response=stream)  # no URL, no request: the frames say what it is
    assert (call.output["content"], call.fields["finish_reason_raw"]) == ("ok", "content_filtered")


# --- native generate endpoints ---------------------------------------------------------------


def test_sglang_abort_and_string_finish_reason():
    abort = build(
        url="http://127.0.0.1:30000/generate",
        request={"text": "Hi", "sampling_params": {"max_new_tokens": 8}},
        response={"text": "", "meta_info": {"id": "a", "finish_reason": {
            "type": "abort", "message": "client disconnected"}, "completion_tokens": 0}},
    )  # fmt: skip
    assert abort.fields["finish_reason_raw"] == "abort"
    assert abort.fields["error"] == "client disconnected"
    plain = build(response={"text": "ok", "meta_info": {"finish_reason": "stop"}})
    assert (plain.output["content"], plain.fields["finish_reason_raw"]) == ("ok", "stop")


def test_sglang_sse_stream_with_cumulative_text():
    events = [
        {"text": "Hel", "meta_info": {"id": "r", "finish_reason": None, "completion_tokens": 1}},
        {"text": "Hello", "meta_info": {"id": "r", "finish_reason": None, "completion_tokens": 2}},
        {"text": "Hello!", "meta_info": {"id": "r", "finish_reason": {"type": "length"},
                                         "completion_tokens": 3}},
    ]  # fmt: skip
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    call = build(
        url="http://h/generate",
        request={"text": "x", "sampling_params": {"max_new_tokens": 3}, "stream": True},
        response=body,
    )
    assert (call.output["content"], call.fields["output_tokens"]) == ("Hello!", 3)
    assert (call.fields["stream"], call.fields["stream_completed"]) == (True, True)


def test_vllm_token_generate_from_the_body_alone():
    call = build(
        response={"request_id": "r", "choices": [
            {"index": 0, "token_ids": [5, 6], "finish_reason": "length"}]}
    )  # fmt: skip
    assert (call.output["content"], call.fields["output_tokens"]) == (None, 2)
    assert call.fields["finish_reason_raw"] == "length"


def test_a_generate_path_of_another_service_is_not_claimed():
    with pytest.raises(NotACall):
        build(url="https://images.example.test/v1/images/generate", response={"url": "x"})


# --- Gemini bodies without candidates ----------------------------------------------------------


def test_gemini_body_without_candidates_says_so():
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    blocked = build(url=url, response={"promptFeedback": {"blockReason": "SAFETY"}})
    assert blocked.fields["finish_reason_raw"] == "SAFETY"
    empty = build(url=url, response={"promptFeedback": {"safetyRatings": []}})
    assert empty.fields["error"] == "response without candidates: no answer and no block reason"


def test_gemini_files_without_usage_are_read(tmp_path):
    (tmp_path / "blocked.json").write_text(json.dumps({"promptFeedback": {"blockReason": "OTHER"}}))
    (tmp_path / "answers.jsonl").write_text(
        ndjson(
            {"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"}]},
            {"candidates": [{"content": {"parts": [{"text": "b"}]}, "finishReason": "MAX_TOKENS"}]},
        )
    )
    result = forensics.scan([str(tmp_path)])
    assert result.rejects.is_empty()
    assert sorted(result.turns["finish_reason_raw"].to_list()) == ["MAX_TOKENS", "OTHER", "STOP"]
    assert {f.format for f in result.files} == {"gemini"}


# --- live captures reach the new dialects too ------------------------------------------------


def test_a_jsonl_capture_of_ollama_streams(tmp_path):
    record = {
        "request": {"url": f"{OLLAMA}/api/chat", "method": "POST",
                    "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
        "response": {"status": 200, "body": ndjson(
            chunk("<think>plan"), chunk(" more", done=True, done_reason="length", eval_count=9))},
    }  # fmt: skip
    path = tmp_path / "capture.jsonl"
    path.write_text(json.dumps(record) + "\n")
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty()
    rules = set(result.findings.filter(pl.col("source_line") == 1)["rule"])
    assert {"unclosed-think"} <= rules
    turn = result.turns.filter(pl.col("role") == "assistant").row(0, named=True)
    assert (turn["content"], turn["finish_reason"]) == ("<think>plan more", "model_length")


def test_bedrock_invoke_stream_unwraps_the_models_own_events():
    """InvokeModelWithResponseStream (Claude on Bedrock): `chunk` frames carry Anthropic's
    stream events as base64 JSON."""
    import base64

    def chunk(event: dict) -> bytes:
        return frame("chunk", {"bytes": base64.b64encode(json.dumps(event).encode()).decode()})

    stream = chunk({"type": "message_start", "message": {"model": "claude", "usage": {}}})
    stream += chunk({"type": "content_block_start", "index": 0,
                     "content_block": {"type": "text", "text": ""}})  # fmt: skip
    stream += chunk({"type": "content_block_delta", "index": 0,
                     "delta": {"type": "text_delta", "text": "Hi"}})  # fmt: skip
    stream += chunk({"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
                     "usage": {"output_tokens": 1}})  # fmt: skip
    stream += chunk({"type": "message_stop"})
    call = build(
        url="https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2/"
        "invoke-with-response-stream",
        request={"anthropic_version": "bedrock-2023-05-31", "max_tokens": 1,
                 "messages": [{"role": "user", "content": "Hi"}]},
        response=stream,
    )  # fmt: skip
    assert (call.output["content"], call.fields["finish_reason_raw"]) == ("Hi", "max_tokens")
    assert (call.fields["max_output_tokens"], call.fields["stream_completed"]) == (1, True)


@pytest.mark.parametrize(
    ("url", "request_body", "answer"),
    [
        # Embeddings: `input` made the request look like a Responses call.
        ("https://api.openai.com/v1/embeddings", {"input": ["a"], "model": "e"},
         {"object": "list", "data": [{"object": "embedding", "embedding": [0.1]}]}),
        # A search API whose request has a `contents` object, as Gemini's has a list.
        ("https://api.exa.ai/search", {"query": "q", "contents": {"text": True}},
         {"requestId": "r", "results": []}),
        # Token counting re-sends the conversation but answers a number.
        ("https://api.anthropic.com/v1/messages/count_tokens",
         {"model": "c", "messages": [{"role": "user", "content": "hi"}]}, {"input_tokens": 9}),
    ],
)  # fmt: skip
def test_an_answer_no_api_claims_is_not_a_call(url, request_body, answer):
    with pytest.raises(NotACall, match=r"^not an LLM API call \(POST https"):
        build(url=url, method="POST", request=request_body, response=answer, status=200)
    with pytest.raises(NotACall):  # nor are their failures
        build(url=url, request=request_body, response={"error": "quota"}, status=429)


def test_a_failed_call_to_an_unknown_url_is_still_a_call():
    """Error bodies are no API's answer shape, yet a failed chat call is evidence."""
    failed = build(
        url="https://proxy.example.test/llm",
        request={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        response={"error": {"message": "quota exceeded"}},
        status=429,
    )
    assert failed.failed and failed.fields["http_status"] == 429
    assert failed.fields["error"] == "quota exceeded"


# --- Ollama answers saved as they came -------------------------------------------------------

SAVED = DATA / "cassettes" / "synthetic" / "ollama_saved_streams.jsonl"
REAL_OLLAMA = DATA / "cassettes" / "real"


def test_saved_ollama_streams_one_turn_per_answer():
    result = forensics.scan([str(SAVED)])
    assert result.files[0].format == "ollama_ndjson"
    rows = result.turns.sort("source_line")
    assert rows["source_line"].to_list() == [1, 4, 5]
    assert rows["content"].to_list() == [
        "<think>\nThe user wants",
        "<think>\nok\n</think>\n\nHi!",
        "<think>\nStill",
    ]
    assert rows["finish_reason"].to_list() == ["max_tokens", "stop", None]
    assert rows["stream_completed"].to_list() == [True, None, False]
    found = set(zip(result.findings["rule"], result.findings["source_line"], strict=True))
    assert found == {
        ("max-tokens", 1),
        ("thinking-budget-exhausted", 1),
        ("unclosed-think", 1),
        ("reasoning-leak", 4),
        ("stream-cut-off", 5),
        ("unclosed-think", 5),
    }


def test_real_saved_ollama_generate_streams():
    """ollama-bash-lib's demo output: pretty-printed stream objects one after another."""
    result = forensics.scan([str(p) for p in sorted(REAL_OLLAMA.glob("ollama_bash_lib_*.json"))])
    assert result.rejects.is_empty()
    by_model = {row["model"]: row for row in result.turns.iter_rows(named=True)}
    deepseek = by_model["deepseek-v3.1:671b"]
    assert (deepseek["content"], deepseek["output_tokens"], deepseek["input_tokens"]) == (
        "Fluffy, hoppy, twitchy.",
        11,
        11,
    )
    assert (deepseek["finish_reason"], deepseek["stream_completed"]) == ("stop", True)
    qwen = by_model["qwen3:8b"]  # no `think` switch: the reasoning comes inline
    assert qwen["content"].startswith("<think>\nOkay, the user wants me to describe a rabbit")
    assert "</think>" in qwen["content"] and qwen["output_tokens"] == 331
    assert result.findings.select("rule", "source_line").rows() == [("reasoning-leak", 1)]


def test_a_har_entry_with_a_bedrock_event_stream(tmp_path):
    """A browser or proxy capture keeps the binary stream base64-encoded."""
    import base64

    stream = frame("messageStart", {"role": "assistant"})
    stream += frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Lima is"}})
    stream += frame("messageStop", {"stopReason": "max_tokens"})
    stream += frame("metadata", {"usage": {"inputTokens": 5, "outputTokens": 2}})
    entry = {
        "request": {"method": "POST", "url": f"{BEDROCK}/converse-stream",
                    "postData": {"text": json.dumps(CONVERSE)}},
        "response": {"status": 200, "content": {
            "mimeType": "application/vnd.amazon.eventstream", "encoding": "base64",
            "text": base64.b64encode(stream).decode()}},
    }  # fmt: skip
    path = tmp_path / "bedrock.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {}, "entries": [entry]}}))
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty()
    turn = result.turns.filter(pl.col("role") == "assistant").sort("turn_index").row(-1, named=True)
    assert (turn["content"], turn["finish_reason"], turn["output_tokens"]) == (
        "Lima is",
        "max_tokens",
        2,
    )
    assert set(result.findings["rule"]) >= {"max-tokens"}


def test_bedrock_citations_are_text_and_unread_blocks_are_named():
    cited = build(
        url=f"{BEDROCK}/converse",
        response={"output": {"message": {"role": "assistant", "content": [
            {"citationsContent": {"content": [{"text": "Paris."}], "citations": []}}]}},
            "stopReason": "end_turn"},
    )  # fmt: skip
    assert (cited.output["content"], cited.fields.get("error")) == ("Paris.", None)
    image = build(
        url=f"{BEDROCK}/converse",
        response={"output": {"message": {"role": "assistant", "content": [
            {"image": {"format": "png", "source": {"bytes": "AAAA"}}}]}},
            "stopReason": "end_turn"},
    )  # fmt: skip
    assert image.output["content"] is None and "unread" not in image.output
    assert image.fields["error"] == "answer holds only blocks that are not read: image"


def test_tgi_generate_whole_and_streamed():
    url = "http://tgi.example.test/generate"
    ask = {"inputs": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
           "parameters": {"max_new_tokens": 2, "details": True}}  # fmt: skip
    capped = build(
        url=url,
        request=ask,
        response={"generated_text": "Hello there",
                  "details": {"finish_reason": "length", "generated_tokens": 2}},
    )  # fmt: skip
    assert [m["role"] for m in capped.messages] == ["user"]
    assert (capped.output["content"], capped.fields["finish_reason_raw"]) == (
        "Hello there",
        "length",
    )
    assert (capped.fields["max_output_tokens"], capped.fields["output_tokens"]) == (2, 2)
    plain = build(url=url, request={"inputs": "Hi", "parameters": {}},
                  response={"generated_text": "Hey"})  # fmt: skip
    assert (plain.output["content"], plain.fields.get("error")) == ("Hey", None)
    events = [
        {"index": 1, "token": {"id": 1, "text": "He"}, "generated_text": None, "details": None},
        {"index": 2, "token": {"id": 2, "text": "y"}, "generated_text": "Hey",
         "details": {"finish_reason": "eos_token", "generated_tokens": 2}},
    ]  # fmt: skip
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    streamed = build(url="http://tgi.example.test/generate_stream", response=body)
    assert (streamed.output["content"], streamed.fields["finish_reason_raw"]) == (
        "Hey",
        "eos_token",
    )
    assert streamed.fields["stream_completed"] is True
