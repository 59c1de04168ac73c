"""Writes the synthetic cassettes of tests/data/cassettes/synthetic (deterministic: rerun it and
the files are byte-identical). Shapes follow the recorders' own serializers (see README.md);
every key in them is fake."""

from __future__ import annotations

import base64
import gzip
import json
import struct
import zlib
from pathlib import Path

import yaml

OUT = Path(__file__).parent / "synthetic"
FAKE_KEY = "sk-test-FAKEfakeFAKEfake0123456789"


def dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def gz(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)


def frame(event: str, payload: dict, message_type: str = "event") -> bytes:
    """One AWS event-stream frame (the ConverseStream wire format)."""
    headers = b""
    for name, value in (
        (":event-type" if message_type == "event" else ":exception-type", event),
        (":content-type", "application/json"),
        (":message-type", message_type),
    ):
        raw = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    body = json.dumps(payload).encode()
    total = 16 + len(headers) + len(body)
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def chat_response(content: str | None, finish: str, tokens: int, calls: list | None = None) -> dict:
    message: dict = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "qwen3-8b",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 120, "completion_tokens": tokens, "total_tokens": 120 + tokens},
    }


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def vcrpy_agent_loop() -> None:
    """vcrpy's YAML (yaml.dump of {interactions, version}): gzip answer as !!binary, SSE text,
    a call that is not an LLM API call, a brotli body that can not be decoded."""
    first = [
        {"role": "system", "content": "You are a weather agent."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    second = [
        *first,
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"},
    ]
    stream = "".join(
        f"data: {dumps(chunk)}\n\n"
        for chunk in (
            {"id": "c2", "object": "chat.completion.chunk", "model": "qwen3-8b",
             "choices": [{"index": 0, "delta": {"role": "assistant",
                                                "content": "<think>\nThe tool says 18C"}}]},
            {"id": "c2", "object": "chat.completion.chunk", "model": "qwen3-8b",
             "choices": [{"index": 0, "delta": {"content": ", so I should"},
                          "finish_reason": "length"}],
             "usage": {"prompt_tokens": 160, "completion_tokens": 64}},
        )
    ) + "data: [DONE]\n\n"  # fmt: skip
    headers = {"Authorization": [f"Bearer {FAKE_KEY}"], "Content-Type": ["application/json"]}
    url = "https://llm.example.test/v1/chat/completions"
    doc = {
        "interactions": [
            {
                "request": {
                    "body": dumps({"model": "qwen3-8b", "messages": first, "tools": TOOLS}),
                    "headers": headers,
                    "method": "POST",
                    "uri": url,
                },
                "response": {
                    "body": {"string": gz(dumps(chat_response(None, "tool_calls", 18, [CALL])))},
                    "headers": {"Content-Encoding": ["gzip"]},
                    "status": {"code": 200, "message": "OK"},
                },
            },
            {
                "request": {
                    "body": dumps(
                        {
                            "model": "qwen3-8b",
                            "messages": second,
                            "tools": TOOLS,
                            "max_tokens": 64,
                            "stream": True,
                        }
                    ),
                    "headers": headers,
                    "method": "POST",
                    "uri": url,
                },
                "response": {
                    "body": {"string": stream},
                    "headers": {"content-type": ["text/event-stream"]},
                    "status": {"code": 200, "message": "OK"},
                },
            },
            {
                "request": {
                    "body": None,
                    "headers": {},
                    "method": "GET",
                    "uri": f"https://weather.example.test/v1/now?city=Paris&key={FAKE_KEY}",
                },
                "response": {
                    "body": {"string": '{"temp": 18}'},
                    "headers": {},
                    "status": {"code": 200, "message": "OK"},
                },
            },
            {
                "request": {
                    "body": dumps({"model": "qwen3-8b", "messages": first}),
                    "headers": headers,
                    "method": "POST",
                    "uri": url,
                },
                "response": {
                    "body": {"string": b"\x1b\x2f\x00\xf8\x01\x02brotli-bytes"},
                    "headers": {"Content-Encoding": ["br"]},
                    "status": {"code": 200, "message": "OK"},
                },
            },
        ],
        "version": 1,
    }
    (OUT / "vcrpy_agent_loop.yaml").write_text(yaml.safe_dump(doc))  # fmt: skip


def vcrpy_json_anthropic() -> None:
    """vcrpy's JSON serializer: json.dumps({version, interactions}, indent=4)."""
    ask = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "thinking": {"type": "enabled", "budget_tokens": 200},
        "messages": [{"role": "user", "content": "Plan a three-city trip."}],
    }
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "thinking", "thinking": "Three cities: Rome, then", "signature": "x"}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 20, "output_tokens": 256},
    }
    ok = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Rome, Florence, Venice."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 9},
    }
    doc = {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "body": dumps(ask),
                    "headers": {"x-api-key": [FAKE_KEY]},
                    "method": "POST",
                    "uri": "https://api.anthropic.com/v1/messages",
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["application/json"]},
                    "body": {"string": dumps(answer)},
                },
            },
            {
                "request": {
                    "body": dumps({**ask, "max_tokens": 2048}),
                    "headers": {"x-api-key": [FAKE_KEY]},
                    "method": "POST",
                    "uri": "https://api.anthropic.com/v1/messages",
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["application/json"]},
                    "body": {"string": dumps(ok)},
                },
            },
        ],
    }
    (OUT / "vcrpy_anthropic.json").write_text(json.dumps(doc, indent=4) + "\n")


def ruby_vcr_ollama() -> None:
    """Ruby VCR's JSON: http_interactions with {encoding, string} / {base64_string} bodies."""
    options = {"num_ctx": 2048, "temperature": 0}
    messages = [{"role": "user", "content": "Summarise the attached log."}]
    lines = [
        {"model": "qwen3:8b", "created_at": "2025-01-01T00:00:00Z",
         "message": {"role": "assistant", "content": "", "thinking": "The log is long"},
         "done": False},
        {"model": "qwen3:8b", "created_at": "2025-01-01T00:00:01Z",
         "message": {"role": "assistant", "content": "", "thinking": " and I"},
         "done": False},
        {"model": "qwen3:8b", "created_at": "2025-01-01T00:00:02Z",
         "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "length",
         "prompt_eval_count": 1900, "eval_count": 148},
    ]  # fmt: skip
    tool_answer = {
        "model": "qwen3:8b",
        "created_at": "2025-01-01T00:01:00Z",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}],
        },
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 80,
        "eval_count": 20,
    }
    capped = {
        "model": "llama3.1",
        "created_at": "2025-01-01T00:02:00Z",
        "response": "Once upon a time there was",
        "done": True,
        "done_reason": "length",
        "prompt_eval_count": 12,
        "eval_count": 8,
    }

    def interaction(path: str, request: dict, body: dict) -> dict:
        return {
            "request": {
                "method": "post",
                "uri": f"http://localhost:11434{path}",
                "body": {"encoding": "UTF-8", "string": dumps(request)},
                "headers": {"Content-Type": ["application/json"]},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"Content-Type": ["application/x-ndjson"]},
                "body": body,
                "http_version": None,
            },
            "recorded_at": "Wed, 01 Jan 2025 00:00:00 GMT",
        }

    doc = {
        "http_interactions": [
            interaction(
                "/api/chat",
                {"model": "qwen3:8b", "messages": messages, "options": options},
                {"encoding": "UTF-8", "string": "\n".join(dumps(x) for x in lines) + "\n"},
            ),
            interaction(
                "/api/chat",
                {"model": "qwen3:8b", "stream": False, "tools": TOOLS,
                 "messages": [{"role": "user", "content": "Weather in Oslo?"}]},
                {"encoding": "ASCII-8BIT",
                 "base64_string": base64.b64encode(gz(dumps(tool_answer))).decode()},
            ),
            interaction(
                "/api/generate",
                {"model": "llama3.1", "prompt": "Tell a story.", "stream": False,
                 "options": {"num_predict": 8}},
                {"encoding": "UTF-8", "string": dumps(capped)},
            ),
        ],
        "recorded_with": "VCR 6.3.1",
    }  # fmt: skip
    (OUT / "ruby_vcr_ollama.json").write_text(json.dumps(doc, indent=2) + "\n")


def ruby_vcr_bedrock() -> None:
    """Ruby VCR's YAML (`---`, http_interactions): Converse verdicts and a binary stream."""
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/{}"
    ask = {
        "messages": [{"role": "user", "content": [{"text": "How do I pick a lock?"}]}],
        "inferenceConfig": {"maxTokens": 300},
        "guardrailConfig": {"guardrailIdentifier": "g1", "guardrailVersion": "1"},
    }
    guarded = {
        "output": {"message": {"role": "assistant",
                               "content": [{"text": "Sorry, I can not help with that."}]}},
        "stopReason": "guardrail_intervened",
        "usage": {"inputTokens": 9, "outputTokens": 0, "totalTokens": 9},
    }  # fmt: skip
    filtered = {
        "output": {"message": {"role": "assistant", "content": []}},
        "stopReason": "content_filtered",
        "usage": {"inputTokens": 9, "outputTokens": 0, "totalTokens": 9},
    }
    stream_ask = {
        "messages": [{"role": "user", "content": [{"text": "Weather in Lima, then a poem."}]}],
        "inferenceConfig": {"maxTokens": 40},
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {}}}}]
        },
    }
    stream = b"".join(
        [
            frame("messageStart", {"role": "assistant"}),
            frame("contentBlockDelta", {"contentBlockIndex": 0,
                                        "delta": {"reasoningContent": {"text": "Need the tool"}}}),
            frame("contentBlockStart", {"contentBlockIndex": 1, "start": {
                "toolUse": {"toolUseId": "tu1", "name": "get_weather"}}}),
            frame("contentBlockDelta", {"contentBlockIndex": 1,
                                        "delta": {"toolUse": {"input": '{"city": "Li'}}}),
            frame("contentBlockDelta", {"contentBlockIndex": 1,
                                        "delta": {"toolUse": {"input": 'ma"}'}}}),
            frame("contentBlockStop", {"contentBlockIndex": 1}),
            frame("messageStop", {"stopReason": "max_tokens"}),
            frame("metadata", {"usage": {"inputTokens": 30, "outputTokens": 40},
                               "metrics": {"latencyMs": 100}}),
        ]
    )  # fmt: skip

    def interaction(path: str, request: dict, body: dict, status: int = 200) -> dict:
        return {
            "request": {
                "method": "post",
                "uri": url.format(path),
                "body": {"encoding": "UTF-8", "string": dumps(request)},
                "headers": {"Authorization": ["AWS4-HMAC-SHA256 Credential=AKIAFAKEFAKEFAKE"]},
            },
            "response": {
                "status": {"code": status, "message": "OK"},
                "headers": {"Content-Type": ["application/json"]},
                "body": body,
            },
            "recorded_at": "Wed, 01 Jan 2025 00:00:00 GMT",
        }

    doc = {
        "http_interactions": [
            interaction("converse", ask, {"encoding": "UTF-8", "string": dumps(guarded)}),
            interaction("converse", ask, {"encoding": "UTF-8", "string": dumps(filtered)}),
            interaction(
                "converse-stream",
                stream_ask,
                {"encoding": "ASCII-8BIT", "base64_string": base64.b64encode(stream).decode()},
            ),
        ],
        "recorded_with": "VCR 6.3.1",
    }
    (OUT / "ruby_vcr_bedrock.yml").write_text("---\n" + yaml.safe_dump(doc, sort_keys=False))


def go_vcr_generate() -> None:
    """go-vcr's YAML (version 2: url, code, plain-string bodies, 4-space indent) recording an RL
    environment that calls SGLang's /generate with a rendered ChatML prompt, and vLLM's
    token-level endpoint."""
    system = "<|im_start|>system\nYou are a math agent.<|im_end|>\n"
    user = "<|im_start|>user\nWhat is 17 * 23?<|im_end|>\n"
    answer = "<think>\n17 * 23 = 340 + 51\n</think>\n\n391"
    truncated = "<think>\nRecompute: 17 * 23 = 17 * 20 + 17 * 3 = 340"
    prompt1 = system + user + "<|im_start|>assistant\n"
    prompt2 = system + user + "<|im_start|>assistant\n" + "391<|im_end|>\n"
    prompt2 += "<|im_start|>user\nAre you sure?<|im_end|>\n<|im_start|>assistant\n"
    sglang1 = {
        "text": answer,
        "meta_info": {"id": "r1", "finish_reason": {"type": "stop", "matched": 151645},
                      "prompt_tokens": 30, "completion_tokens": 9},
    }  # fmt: skip
    sglang2 = {
        "text": truncated,
        "meta_info": {"id": "r2", "finish_reason": {"type": "length", "length": 16},
                      "prompt_tokens": 45, "completion_tokens": 16},
    }  # fmt: skip
    vllm = {
        "request_id": "gen-1",
        "choices": [{"index": 0, "token_ids": [1, 2, 3, 4], "finish_reason": "length"}],
    }

    def interaction(i: int, path: str, request: dict, response: dict) -> dict:
        return {
            "id": i,
            "request": {
                "proto": "HTTP/1.1",
                "body": dumps(request),
                "form": {},
                "headers": {"Content-Type": ["application/json"]},
                "url": f"http://127.0.0.1:30000{path}",
                "method": "POST",
            },
            "response": {
                "proto": "HTTP/1.1",
                "body": dumps(response),
                "headers": {"Content-Type": ["application/json"]},
                "status": "200 OK",
                "code": 200,
                "duration": "120ms",
            },
        }

    doc = {
        "version": 2,
        "interactions": [
            interaction(0, "/generate",
                        {"text": prompt1, "sampling_params": {"max_new_tokens": 512}}, sglang1),
            interaction(1, "/generate",
                        {"text": prompt2, "sampling_params": {"max_new_tokens": 16}}, sglang2),
            interaction(2, "/inference/v1/generate",
                        {"model": "Qwen/Qwen3-8B", "token_ids": [9, 8, 7],
                         "sampling_params": {"max_tokens": 4}}, vllm),
        ],
    }  # fmt: skip

    class Indented(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)

    text = yaml.dump(doc, Dumper=Indented, sort_keys=False, indent=4, width=1000)
    (OUT / "go_vcr_generate.yaml").write_text("---\n" + text)


def langchain_gz() -> None:
    """langchain_tests' CustomSerializer: gzip of yaml.safe_dump({requests, responses})."""
    ask = {"model": "gpt-5-nano", "input": "Write a long essay.", "max_output_tokens": 32}
    incomplete = {
        "id": "resp_1",
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "model": "gpt-5-nano",
        "output": [{"type": "reasoning", "id": "rs_1", "summary": []}],
        "usage": {"input_tokens": 12, "output_tokens": 32,
                  "output_tokens_details": {"reasoning_tokens": 32}},
    }  # fmt: skip
    doc = {
        "requests": [
            {
                "method": "POST",
                "uri": "https://api.openai.com/v1/responses",
                "body": dumps(ask),
                "headers": {"authorization": ["PLACEHOLDER"]},
            }
        ],
        "responses": [
            {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["application/json"]},
                "body": {"string": dumps(incomplete)},
            }
        ],
    }
    (OUT / "langchain_incomplete_response.yaml.gz").write_bytes(gz(yaml.safe_dump(doc)))


def broken() -> None:
    """Three interactions; the middle one is not valid YAML (a tab and an unclosed quote)."""
    ok = {
        "request": {
            "body": dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            "method": "POST",
            "uri": "https://llm.example.test/v1/chat/completions",
        },
        "response": {
            "body": {"string": dumps(chat_response("hello", "stop", 2))},
            "status": {"code": 200, "message": "OK"},
        },
    }
    good = yaml.safe_dump({"interactions": [ok]}).split("\n", 1)[1]
    bad = "- request:\n    body: 'unclosed\n\tmethod: POST\n  response: {\n"
    text = "interactions:\n" + good + bad + good + "version: 1\n"
    (OUT / "broken.yaml").write_text(text)
    bomb = 'interactions:\n- request: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n'
    for name, prev in zip("bcdefghij", "abcdefghi", strict=True):
        bomb += f"  {name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
    (OUT / "bomb.yaml").write_text(bomb + "version: 1\n")
    full = (OUT / "vcrpy_anthropic.json").read_text()
    cut = full.index('"response"', full.index('"response"') + 1)
    (OUT / "truncated.json").write_text(full[:cut])
    (OUT / "empty.yaml").write_text("interactions: []\nversion: 1\n")


def ollama_saved() -> None:
    """What `curl -N localhost:11434/api/generate` printed, three answers in a row: a stream
    cut by num_predict inside <think>, a whole answer, a stream cut off before its done line."""

    def line(text: str, done: bool = False, **extra: object) -> str:
        return dumps({"model": "deepseek-r1:8b", "created_at": "2025-01-01T00:00:00Z",
                      "response": text, "done": done, **extra})  # fmt: skip

    lines = [
        line("<think>"),
        line("\nThe user"),
        line(" wants", True, done_reason="length", prompt_eval_count=9, eval_count=3),
        line("<think>\nok\n</think>\n\nHi!", True, done_reason="stop", eval_count=7),
        line("<think>"),
        line("\nStill"),
    ]
    (OUT / "ollama_saved_streams.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    vcrpy_agent_loop()
    vcrpy_json_anthropic()
    ruby_vcr_ollama()
    ruby_vcr_bedrock()
    go_vcr_generate()
    langchain_gz()
    broken()
    ollama_saved()
