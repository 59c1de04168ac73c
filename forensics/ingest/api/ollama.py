"""Ollama's native API: `/api/chat` and `/api/generate`, whole or streamed as NDJSON.

A chat answer is `{"message": {role, content, thinking, tool_calls}, "done": true,
"done_reason": …, "prompt_eval_count", "eval_count"}`; generate answers `response` (and
`thinking`) instead of a message. Streams are one such object per line, text as deltas, the
counts and `done_reason` on the last (`done: true`) line. Tool-call arguments arrive as objects.
The cap is `options.num_predict` (-1 and -2 mean none); `options.num_ctx` is the context window
(Ollama's default is small). Ollama streams unless the request says `"stream": false`.

`done_reason: "length"` means either cap: num_predict, or the context window filling up. When
the output stopped short of num_predict (or none was set) the window is what stopped it:
`model_length`, not `max_tokens`, with the raw reason kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from forensics.ingest.parse.apicommon import as_dict, as_int, as_str, error_text, json_text

CUT_OFF = "stream cut off: it ended without a done: true line"


def claims_path(path: str) -> bool:
    return path.endswith(("/api/chat", "/api/generate"))


def is_response(body: Mapping[str, Any]) -> bool:
    return "done" in body and ("message" in body or "response" in body) and "model" in body


def is_request(body: Mapping[str, Any]) -> bool:
    if "messages" not in body and "prompt" not in body:
        return False
    return "options" in body or "keep_alive" in body or "think" in body


def _calls(raw: Any) -> list[dict[str, Any]]:
    out = []
    for call in raw if isinstance(raw, list) else []:
        fn = as_dict(as_dict(call).get("function"))
        if not fn:
            continue
        out.append(
            {
                "id": as_str(as_dict(call).get("id")),
                "name": as_str(fn.get("name")),
                "arguments": json_text(fn.get("arguments")),
            }
        )
    return out


def _message(raw: Mapping[str, Any], default_role: str) -> dict[str, Any]:
    role = as_str(raw.get("role")) or default_role
    thinking = raw.get("thinking")
    message: dict[str, Any] = {
        "role": role,
        "content": as_str(raw.get("content")),
        "reasoning": thinking if isinstance(thinking, str) and thinking else None,
        "tool_calls": _calls(raw.get("tool_calls")),
    }
    if role == "tool" and (name := as_str(raw.get("tool_name") or raw.get("name"))):
        message["name"] = name
    return message


def request_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    if isinstance(body.get("messages"), list):
        return [_message(m, "user") for m in body["messages"] if isinstance(m, dict)]
    out = []
    if isinstance(body.get("system"), str) and body["system"]:
        out.append({"role": "system", "content": body["system"], "tool_calls": []})
    if isinstance(body.get("prompt"), str):
        out.append({"role": "user", "content": body["prompt"], "tool_calls": []})
    return out


def _cap(value: Any) -> int | None:
    cap = as_int(value)
    return cap if cap is not None and cap > 0 else None  # -1: no cap, -2: fill the context


def request_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    options = as_dict(body.get("options"))
    tools = body.get("tools")
    count = len(tools) if isinstance(tools, list) else 0
    think = body.get("think")
    return {
        "model": as_str(body.get("model")),
        "max_output_tokens": _cap(options.get("num_predict")),
        "tool_count": count,
        "tools_attached": count > 0,
        "stream": body.get("stream") is not False,
        "enable_thinking": think if isinstance(think, bool) else True if think else None,
        "reasoning_effort": think if isinstance(think, str) else None,
    }


def _counts(body: Mapping[str, Any], fields: dict[str, Any]) -> None:
    if (prompt := as_int(body.get("prompt_eval_count"))) is not None:
        fields["input_tokens"] = prompt
    if (output := as_int(body.get("eval_count"))) is not None:
        fields["output_tokens"] = output


def response_turn(body: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    fields: dict[str, Any] = {}
    if "error" in body and "message" not in body and "response" not in body:
        fields["error"] = error_text(body.get("error"))
        return None, fields
    return stream_turn([body])


def stream_turn(chunks: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One assistant turn from the lines of a stream (or the one line of a whole answer)."""
    content: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    fields: dict[str, Any] = {}
    errors: list[str] = []
    finished = False
    lines = 0
    for chunk in chunks:
        lines += 1
        if model := as_str(chunk.get("model")):
            fields["model"] = model
        if "error" in chunk:
            errors.append(f"error inside the stream: {error_text(chunk.get('error'))}")
        if "message" in chunk:
            message = _message(as_dict(chunk.get("message")), "assistant")
            calls.extend(message["tool_calls"])
            text, thought = message["content"], message["reasoning"]
        else:
            text, thought = as_str(chunk.get("response")), as_str(chunk.get("thinking"))
        if text:
            content.append(text)
        if thought:
            thinking.append(thought)
        if chunk.get("done") is True:
            finished = True
            fields["finish_reason_raw"] = as_str(chunk.get("done_reason"))
            _counts(chunk, fields)
    if lines > 1:
        fields["stream_completed"] = finished
        if not finished:
            errors.append(CUT_OFF)
    elif not finished:
        errors.append("answer with done: false and nothing after it: cut off")
    if errors:
        fields["error"] = "; ".join(errors)
    message = {
        "role": "assistant",
        "content": "".join(content) if content else None,
        "reasoning": "".join(thinking) if thinking else None,
        "tool_calls": calls,
    }
    return message, fields


def adjust(fields: dict[str, Any], request: Mapping[str, Any] | None) -> None:
    """`length` short of num_predict (or with none set) is the context window: model_length."""
    if fields.get("finish_reason_raw") != "length" or request is None:
        return  # without the request the cap is unknown: the reason stays max_tokens
    cap = _cap(as_dict(request.get("options")).get("num_predict"))
    output = fields.get("output_tokens")
    if cap is None or (isinstance(output, int) and output < cap):
        fields["finish_reason"] = "model_length"
