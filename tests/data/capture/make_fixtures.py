"""Writes the synthetic capture fixtures of this folder (see README.md). Deterministic.

    python tests/data/capture/make_fixtures.py

Each fixture is a small, realistic capture of an agent loop in one container shape, built to
hold specific failures at known lines; tests/formats/test_capture*.py assert them exactly.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
VLLM = "http://vllm.internal:8000/v1/chat/completions"
SECRET = "sk-test-4f9a1c2e7b3d5a8f0e6c"  # fake key: the tests check it never reaches a table

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "find_user_id_by_email",
            "description": "Find a user id by email.",
            "parameters": {
                "type": "object",
                "properties": {"email": {"type": "string"}},
                "required": ["email"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_order_details",
            "description": "Get the status and details of an order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
]
SYSTEM = {
    "role": "system",
    "content": "You are a retail customer-service agent. Follow the policy.",
}
TRUNCATED_THINK = (
    "<think>\nOkay, the user wants to cancel order #W2378156. First, I need to authenticate the "
    "user by email. Let me check the policy: cancellation is only possible for pending orders, "
    "and I must confirm the reason with the user before calling the tool. So the steps are"
)


def chat_response(rid, message, finish, prompt, completion, model="Qwen/Qwen3-0.6B"):
    return {
        "id": rid,
        "object": "chat.completion",
        "created": 1750000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def assistant(content, calls=None):
    msg = {"role": "assistant", "content": content, "tool_calls": calls or []}
    return msg


def call(cid, name, args):
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def chunk(rid, delta, finish=None, usage=None, model="Qwen/Qwen3-0.6B"):
    body = {
        "id": rid,
        "object": "chat.completion.chunk",
        "created": 1750000000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["choices"] = []
        body["usage"] = usage
    return "data: " + json.dumps(body) + "\n\n"


def write_jsonl(name, records):
    lines = [json.dumps(r) if r is not None else "" for r in records]
    (HERE / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def vllm_agent_loop():
    """{"request": body, "response": body} lines of three interleaved conversations."""
    user_a = {
        "role": "user",
        "content": "Hi, I'd like to check my order. My email is yusuf@example.com.",
    }
    req_a1 = {
        "model": "Qwen/Qwen3-0.6B",
        "messages": [SYSTEM, user_a],
        "tools": TOOLS,
        "tool_choice": "auto",
        "max_tokens": 512,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    out_a1 = assistant(
        None, [call("chatcmpl-tool-a1", "find_user_id_by_email", {"email": "yusuf@example.com"})]
    )
    user_b = {"role": "user", "content": "Cancel my order #W2378156, please."}
    req_b1 = {
        "model": "Qwen/Qwen3-0.6B",
        "messages": [SYSTEM, user_b],
        "tools": TOOLS,
        "max_tokens": 512,
    }
    out_b1 = assistant(TRUNCATED_THINK)
    tool_a = {"role": "tool", "tool_call_id": "chatcmpl-tool-a1", "content": "yusuf_rossi_9620"}
    req_a2 = {**req_a1, "messages": [SYSTEM, user_a, out_a1, tool_a]}
    out_a2 = assistant("")
    user_b2 = {"role": "user", "content": "Hello? Are you still there?"}
    req_b2 = {**req_b1, "messages": [SYSTEM, user_b, out_b1, user_b2]}
    out_b2 = assistant(
        "<think>\nThe user is waiting. I should authenticate first.\n</think>\n\n",
        [call("chatcmpl-tool-b2", "find_user_id_by_email", {"email": "unknown"})],
    )
    user_c = {"role": "user", "content": "Just say hello."}
    req_c = {**req_a1, "messages": [SYSTEM, user_c], "tool_choice": "none"}
    write_jsonl(
        "vllm_agent_loop.jsonl",
        [
            {
                "request": req_a1,
                "response": chat_response("chatcmpl-a1", out_a1, "tool_calls", 612, 31),
            },
            {
                "request": req_b1,
                "response": chat_response("chatcmpl-b1", out_b1, "length", 590, 512),
            },
            {"request": req_a2, "response": chat_response("chatcmpl-a2", out_a2, "stop", 660, 1)},
            {
                "request": req_b2,
                "response": chat_response("chatcmpl-b2", out_b2, "tool_calls", 1120, 60),
            },
            {
                "request": req_c,
                "response": chat_response("chatcmpl-c", assistant(""), "stop", 580, 1),
            },
        ],
    )


def envelopes_streams():
    """{"request": {url, headers, body}, "response": {status, headers, body}} lines."""
    headers = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}
    user = {"role": "user", "content": "Where is order #W1? And the status of #W2?"}
    req1 = {
        "model": "qwen3-8b",
        "messages": [SYSTEM, user],
        "tools": TOOLS,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 2048,
        "chat_template_kwargs": {"enable_thinking": True},
    }
    sse1 = (
        chunk("s1", {"role": "assistant", "content": ""})
        + chunk("s1", {"reasoning_content": "Two orders: "})
        + chunk("s1", {"reasoning_content": "look both up."})
        + chunk(
            "s1",
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_order_details", "arguments": ""},
                    }
                ]
            },
        )
        + chunk(
            "s1",
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_order_details", "arguments": '{"order_'},
                    }
                ]
            },
        )
        + chunk("s1", {"tool_calls": [{"index": 0, "function": {"arguments": '{"order_id": '}}]})
        + chunk("s1", {"tool_calls": [{"index": 1, "function": {"arguments": 'id": "#W2"}'}}]})
        + chunk("s1", {"tool_calls": [{"index": 0, "function": {"arguments": '"#W1"}'}}]})
        + chunk("s1", {}, "tool_calls")
        + chunk(
            "s1",
            None,
            usage={
                "prompt_tokens": 700,
                "completion_tokens": 42,
                "total_tokens": 742,
                "completion_tokens_details": {"reasoning_tokens": 9},
            },
        )
        + "data: [DONE]\n\n"
    )
    out1 = assistant(
        "",
        [
            call("call_1", "get_order_details", {"order_id": "#W1"}),
            call("call_2", "get_order_details", {"order_id": "#W2"}),
        ],
    )
    tools_done = [
        {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "delivered"}'},
        {"role": "tool", "tool_call_id": "call_2", "content": '{"status": "pending"}'},
    ]
    req2 = {**req1, "messages": [SYSTEM, user, out1, *tools_done]}
    sse2 = chunk("s2", {"role": "assistant", "content": ""}) + chunk(
        "s2", {"content": "Order #W1 was delivered; order #W2 is"}
    )
    user3 = {"role": "user", "content": "Write me a very long poem about refunds."}
    req3 = {"model": "minimax/minimax-m2", "messages": [user3], "stream": True, "max_tokens": 16}
    err = {
        "id": "s3",
        "object": "chat.completion.chunk",
        "error": {"code": 400, "message": "Token limit reached"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": None}],
    }
    sse3 = (
        ": OPENROUTER PROCESSING\n\n"
        + chunk(
            "s3",
            {"role": "assistant", "content": "Refunds arrive like"},
            model="minimax/minimax-m2",
        )
        + chunk("s3", {"content": " autumn leaves"}, "length", model="minimax/minimax-m2")
        + chunk("s3", {"content": ""}, "length", model="minimax/minimax-m2")
        + "data: "
        + json.dumps(err)
        + "\n\n"
        + "data: [DONE]\n\n"
    )
    user4 = {"role": "user", "content": "Is order #W3 refundable?"}
    req4 = {"model": "qwen3-8b", "messages": [SYSTEM, user4], "tools": TOOLS, "max_tokens": 1024}
    err500 = {
        "error": {"message": "CUDA out of memory", "type": "InternalServerError", "code": 500}
    }
    ok4 = chat_response(
        "r4",
        assistant(
            "Let me look that up.", [call("call_4", "get_order_details", {"order_id": "#W3"})]
        ),
        "tool_calls",
        610,
        25,
        model="qwen3-8b",
    )
    anthropic_req = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": "You are a retail agent.",
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [
            {"name": "get_order_details", "description": "", "input_schema": {"type": "object"}}
        ],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Cancel #W9 now."}]}],
    }
    anthropic_res = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [
            {
                "type": "thinking",
                "thinking": "The user wants to cancel. Policy says",
                "signature": "sig",
            },
            {"type": "text", "text": "I can help with"},
        ],
        "stop_reason": "max_tokens",
        "stop_sequence": None,
        "usage": {"input_tokens": 300, "cache_read_input_tokens": 100, "output_tokens": 64},
    }
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_02",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 410, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Need the order first."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_order_details",
                    "input": {},
                },
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"order_id": '},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '"#W9"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 48},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    anthropic_sse = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    anthropic_req2 = {**anthropic_req, "max_tokens": 4096, "stream": True}
    write_jsonl(
        "envelopes_streams.jsonl",
        [
            {
                "request": {"method": "POST", "url": VLLM, "headers": headers, "body": req1},
                "response": {
                    "status": 200,
                    "headers": {"content-type": "text/event-stream"},
                    "body": sse1,
                },
            },
            {
                "request": {"method": "POST", "url": VLLM, "headers": headers, "body": req2},
                "response": {
                    "status": 200,
                    "headers": {"content-type": "text/event-stream"},
                    "body": sse2,
                },
            },
            {
                "request": {
                    "method": "POST",
                    "url": "https://openrouter.ai/api/v1/chat/completions",
                    "headers": headers,
                    "body": req3,
                },
                "response": {"status": 200, "body": sse3},
            },
            {
                "request": {"method": "POST", "url": VLLM, "headers": headers, "body": req4},
                "response": {"status": 500, "body": err500},
            },
            {
                "request": {"method": "POST", "url": VLLM, "headers": headers, "body": req4},
                "response": {"status": 200, "body": ok4},
            },
            {
                "request": {
                    "method": "GET",
                    "url": "http://vllm.internal:8000/health?token=abc",
                    "headers": headers,
                },
                "response": {"status": 200, "body": "ok"},
            },
            None,
            {
                "request": {
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "headers": {"x-api-key": SECRET, "anthropic-version": "2023-06-01"},
                    "body": anthropic_req,
                },
                "response": {"status": 200, "body": anthropic_res},
            },
            {
                "request": {
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "headers": {"x-api-key": SECRET},
                    "body": anthropic_req2,
                },
                "response": {"status": 200, "body": anthropic_sse},
            },
        ],
    )
    # Line 7 is blank; a broken line follows the last record (a writer killed mid-line).
    with (HERE / "envelopes_streams.jsonl").open("a", encoding="utf-8") as f:
        f.write(
            '{"request": {"method": "POST", "url": "'
            + VLLM
            + '", "headers": {"Authorization": "Bearer '
            + SECRET
            + '"}, "body": {"model": "qwen3-8b", "messa\n'
        )


def batch():
    """OpenAI Batch input and output lines in one file, outputs out of order."""

    def line_in(cid, text, max_tokens=256):
        return {
            "custom_id": cid,
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "gpt-4o-mini",
                "messages": [{"role": "user", "content": text}],
                "max_tokens": max_tokens,
            },
        }

    def line_out(cid, content, finish, completion):
        body = chat_response(
            f"chatcmpl-{cid}",
            assistant(content),
            finish,
            20,
            completion,
            model="gpt-4o-mini-2024-07-18",
        )
        return {
            "id": f"batch_req_{cid}",
            "custom_id": cid,
            "response": {"status_code": 200, "request_id": f"req_{cid}", "body": body},
            "error": None,
        }

    write_jsonl(
        "batch.jsonl",
        [
            line_in("task-1", "Summarise the refund policy in detail.", 8),
            line_in("task-2", "Say OK."),
            line_in("task-3", "Never answered."),
            line_out("task-2", "OK.", "stop", 2),
            line_out("task-1", "Refunds are issued to the original payment", "length", 8),
            line_out("task-4", "An answer whose request is not in this file.", "stop", 9),
            line_in("task-5", "This one fails."),
            {
                "id": "batch_req_task-5",
                "custom_id": "task-5",
                "response": None,
                "error": {"code": "server_error", "message": "The model produced invalid content."},
            },
        ],
    )


def har():
    """A HAR 1.2 capture of an agent talking to vLLM through a proxy."""

    def header_list(pairs):
        return [{"name": k, "value": v} for k, v in pairs]

    def entry(method, url, body, status, content, error=None):
        request = {
            "method": method,
            "url": url,
            "httpVersion": "HTTP/1.1",
            "headers": header_list(
                [
                    ("Authorization", f"Bearer {SECRET}"),
                    ("x-api-key", "plainsecret123456"),
                    ("Content-Type", "application/json"),
                ]
            ),
            "cookies": [],
            "queryString": [],
            "headersSize": -1,
            "bodySize": len(body or ""),
        }
        if body is not None:
            request["postData"] = {"mimeType": "application/json", "text": body, "params": []}
        response = {
            "status": status,
            "statusText": "",
            "httpVersion": "HTTP/1.1",
            "headers": [],
            "cookies": [],
            "content": content,
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
        }
        if error:
            response["_error"] = error
        return {
            "startedDateTime": "2025-06-01T10:00:00.000+00:00",
            "time": 120.5,
            "request": request,
            "response": response,
            "cache": {},
            "timings": {"send": 1, "wait": 100, "receive": 19.5},
        }

    user = {"role": "user", "content": "I want to return my order #W5."}
    req1 = {
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "messages": [SYSTEM, user],
        "tools": TOOLS,
        "max_tokens": 1024,
    }
    res1 = chat_response("h1", assistant(""), "stop", 640, 167, model="Qwen/Qwen2.5-7B-Instruct")
    user2 = {"role": "user", "content": "Hello? Can you help me return #W5?"}
    req2 = {**req1, "messages": [SYSTEM, user, assistant(""), user2], "stream": True}
    sse = (
        chunk("h2", {"role": "assistant", "content": ""}, model="Qwen/Qwen2.5-7B-Instruct")
        + chunk(
            "h2",
            {"content": "Sure, which email is on the account?"},
            model="Qwen/Qwen2.5-7B-Instruct",
        )
        + chunk("h2", {}, "stop", model="Qwen/Qwen2.5-7B-Instruct")
        + "data: [DONE]\n\n"
    )
    req4 = {**req1, "messages": [SYSTEM, {"role": "user", "content": "Track order #W6."}]}
    req5 = {**req4, "stream": True}
    doc = {
        "log": {
            "version": "1.2",
            "creator": {"name": "mitmproxy", "version": "11.0.0", "comment": ""},
            "pages": [],
            "entries": [
                entry(
                    "POST",
                    VLLM,
                    json.dumps(req1),
                    200,
                    {"size": 0, "mimeType": "application/json", "text": json.dumps(res1)},
                ),
                entry(
                    "POST",
                    VLLM,
                    json.dumps(req2),
                    200,
                    {
                        "size": 0,
                        "mimeType": "text/event-stream",
                        "text": base64.b64encode(sse.encode()).decode(),
                        "encoding": "base64",
                    },
                ),
                entry(
                    "GET",
                    "http://vllm.internal:8000/v1/models",
                    None,
                    200,
                    {"size": 2, "mimeType": "application/json", "text": "{}"},
                ),
                entry("POST", VLLM, json.dumps(req4), 0, {}, error="Connection reset by peer"),
                entry(
                    "POST",
                    VLLM,
                    json.dumps(req5),
                    200,
                    {"size": 0, "mimeType": "text/event-stream", "text": ""},
                ),
            ],
        }
    }
    (HERE / "agent.har").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def litellm_logs():
    """LiteLLM spend-log rows and standard logging payloads, one per line."""
    messages = [SYSTEM, {"role": "user", "content": "Exchange my keyboard for the tactile one."}]
    proxy_request = {
        "model": "gemini/gemini-2.5-flash",
        "messages": messages,
        "tools": TOOLS,
        "max_tokens": 2048,
    }
    empty_stop = chat_response(
        "ll-1", assistant("", None), "stop", 900, 0, model="gemini-2.5-flash"
    )
    spend = {
        "request_id": "ll-1",
        "call_type": "acompletion",
        "api_key": "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b",
        "cache_hit": "None",
        "startTime": "2025-06-01 10:00:00.000000",
        "endTime": "2025-06-01 10:00:01.000000",
        "model": "gemini-2.5-flash",
        "metadata": json.dumps({"usage_object": {"prompt_tokens": 900, "completion_tokens": 0}}),
        "spend": 0.00027,
        "total_tokens": 900,
        "prompt_tokens": 900,
        "completion_tokens": 0,
        "request_tags": "[]",
        "api_base": "https://generativelanguage.googleapis.com",
        "custom_llm_provider": "gemini",
        "messages": json.dumps(messages),
        "response": json.dumps(empty_stop),
        "proxy_server_request": json.dumps(proxy_request),
        "status": "success",
    }
    bare = {
        **spend,
        "request_id": "ll-2",
        "messages": "{}",
        "response": "{}",
        "proxy_server_request": "{}",
    }
    failed = {
        "id": "ll-3",
        "call_type": "acompletion",
        "stream": False,
        "status": "failure",
        "model": "gpt-4o",
        "messages": [SYSTEM, {"role": "user", "content": "Where is my refund?"}],
        "response": None,
        "model_parameters": {"tools": TOOLS, "max_tokens": 512},
        "error_str": "litellm.RateLimitError: Rate limit reached for gpt-4o",
        "error_information": {
            "error_code": "429",
            "error_class": "RateLimitError",
            "error_message": "Rate limit reached for gpt-4o",
        },
        "hidden_params": {"api_base": "https://api.openai.com"},
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    embedding = {
        "id": "ll-4",
        "call_type": "aembedding",
        "status": "success",
        "model": "text-embedding-3-small",
        "messages": ["refund policy"],
        "response": {"data": []},
    }
    truncated = chat_response(
        "ll-5",
        assistant("<think>\nThe customer wants an exchange. Policy check: the item must be"),
        "length",
        800,
        256,
        model="qwen3-32b",
    )
    wrapped = {
        "standard_logging_object": {
            "id": "ll-5",
            "call_type": "completion",
            "stream": True,
            "status": "success",
            "model": "hosted_vllm/qwen3-32b",
            "messages": messages,
            "response": truncated,
            "model_parameters": {"max_tokens": 256, "tools": TOOLS},
            "api_base": "http://vllm.internal:8000/v1",
        }
    }
    write_jsonl("litellm_logs.jsonl", [spend, bare, failed, embedding, wrapped])


def streams_sse():
    """Raw SSE text: three streamed bodies saved one after another, the last one cut off."""
    first = (
        chunk("x1", {"role": "assistant", "content": ""})
        + chunk(
            "x1", {"content": "<think>\nThe user asks about the return window. Policy: 30 days for"}
        )
        + chunk("x1", {}, "length")
        + chunk(
            "x1", None, usage={"prompt_tokens": 55, "completion_tokens": 64, "total_tokens": 119}
        )
        + "data: [DONE]\n\n"
    )
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "model": "claude-haiku-4-5",
                    "usage": {"input_tokens": 20, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Returns are accepted within 30 days."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    second = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    third = chunk("x3", {"role": "assistant", "content": ""}) + chunk(
        "x3", {"content": "The refund will be"}
    )
    (HERE / "streams.sse").write_text(first + second + third, encoding="utf-8")


def bodies_json():
    """A pretty-printed JSON array of response bodies alone (no requests)."""
    incomplete = {
        "id": "resp_1",
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "model": "o4-mini-2025-04-16",
        "max_output_tokens": 128,
        "output": [
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Working out the refund."}],
            },
        ],
        "usage": {
            "input_tokens": 90,
            "output_tokens": 128,
            "output_tokens_details": {"reasoning_tokens": 128},
        },
    }
    refusal = {
        "id": "msg_9",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-1",
        "content": [],
        "stop_reason": "refusal",
        "usage": {"input_tokens": 40, "output_tokens": 0},
    }
    (HERE / "bodies.json").write_text(
        json.dumps([incomplete, refusal], indent=2) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    vllm_agent_loop()
    envelopes_streams()
    batch()
    har()
    litellm_logs()
    streams_sse()
    bodies_json()
