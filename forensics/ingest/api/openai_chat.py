"""OpenAI Chat Completions bodies, as sent by OpenAI and every compatible server.

vLLM, SGLang, OpenRouter, Groq, DeepSeek, Together, Z.ai and LiteLLM all speak this dialect
with extras (formats-api §2). Requests give the conversation and the caps; responses and
streamed chunks give the assistant turn. Messages come out as plain dicts
(role, content, reasoning, tool_calls as {id, name, arguments}) ready for `Episode.add`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from forensics.ingest.parse.apicommon import (
    as_dict,
    as_int,
    as_list,
    as_str,
    error_text,
    json_text,
    request_basics,
    text_of,
    thinking_switch,
    tool_choice_text,
)

CUT_OFF = "stream cut off: it ended with neither [DONE] nor a finish reason"


def _tool_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        fn = call.get("function") or call.get("custom")
        fn = fn if isinstance(fn, dict) else call
        args = fn.get("arguments", fn.get("input"))
        out.append(
            {
                "id": as_str(call.get("id")),
                "name": as_str(fn.get("name")),
                "arguments": json_text(args),
            }
        )
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and legacy.get("name"):
        out.append(
            {
                "id": None,
                "name": as_str(legacy["name"]),
                "arguments": json_text(legacy.get("arguments")),
            }
        )
    return out


def message(raw: Mapping[str, Any], default_role: str = "assistant") -> dict[str, Any]:
    """A chat message in the shape the collector reads."""
    role = raw.get("role") or default_role
    if role == "developer":  # the o-series name of the system role
        role = "system"
    elif role == "function":
        role = "tool"
    reasoning = raw.get("reasoning_content")
    if not isinstance(reasoning, str) or not reasoning:
        reasoning = raw.get("reasoning") if isinstance(raw.get("reasoning"), str) else reasoning
    content = raw.get("content")
    if content is None and isinstance(raw.get("text"), str):  # legacy completions choice
        content = raw["text"]
    out = {
        "role": role,
        "content": text_of(content),
        "reasoning": reasoning if isinstance(reasoning, str) else None,
        "tool_calls": _tool_calls(raw),
    }
    if (refusal := refusal_of(raw.get("refusal"), content)) is not None:
        out["refusal"] = refusal
    # The call a tool result answers: what tool-call-ids pairs results with calls by.
    if role == "tool" and (call_id := as_str(raw.get("tool_call_id"))):
        out["tool_call_id"] = call_id
    return out


def refusal_of(field: Any, content: Any) -> str | None:
    """The refusal of a message: the `refusal` field (a structured-output refusal, content
    null), else the `refusal` content parts an assistant message in a request carries."""
    if isinstance(field, str) and field.strip():
        return field
    parts = (
        [
            p["refusal"]
            for p in content
            if isinstance(p, dict)
            and p.get("type") == "refusal"
            and isinstance(p.get("refusal"), str)
        ]
        if isinstance(content, list)
        else []
    )
    return "\n".join(parts) if parts else None


def request_message(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A message of a request: without a role it is the user's."""
    return message(raw, "user")


def request_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if isinstance(messages, str):  # a prompt sent as one string
        return [{"role": "user", "content": messages, "reasoning": None, "tool_calls": []}]
    return [request_message(m) for m in as_list(messages) if isinstance(m, dict)]


def tools_offered(body: Mapping[str, Any]) -> int:
    count = 0
    for key in ("tools", "functions"):
        if isinstance(body.get(key), list):
            count += len(body[key])
    return count


def request_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    """Turn columns the request decides; a request that names no tools attached none."""
    choice = tool_choice_text(body.get("tool_choice", body.get("function_call")))
    cap = as_int(body.get("max_completion_tokens"))
    if cap is None:
        cap = as_int(body.get("max_tokens"))
    tools = tools_offered(body)
    return {**request_basics(body, tools, choice, cap), "enable_thinking": thinking_switch(body)}


def _usage(usage: Any) -> dict[str, Any]:
    usage = as_dict(usage)
    details = as_dict(usage.get("completion_tokens_details"))
    return {
        "input_tokens": as_int(usage.get("prompt_tokens")),
        "output_tokens": as_int(usage.get("completion_tokens")),
        "reasoning_tokens": as_int(details.get("reasoning_tokens")),
    }


def first_choice(choices: Any) -> Mapping[str, Any]:
    """Choice 0: agents ask for one; with n > 1 the others are samples, not the conversation."""
    if not isinstance(choices, list):
        return {}
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return {}


def is_response(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    kind = body.get("object")
    if isinstance(kind, str) and kind.startswith(("chat.completion", "text_completion")):
        return True
    return isinstance(body.get("choices"), list)


# What a Chat Completions response says about its call, for readers of agent logs that keep
# the raw response beside their own record of the message (OpenHands, mini-swe-agent).
CALL_COLUMNS = ("model", "input_tokens", "output_tokens", "reasoning_tokens", "finish_reason_raw")


def call_columns(body: Mapping[str, Any]) -> dict[str, Any]:
    """CALL_COLUMNS of a response body, those it has."""
    fields = response_turn(body)[1]
    return {k: fields[k] for k in CALL_COLUMNS if fields.get(k) is not None}


def response_turn(body: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(assistant message, turn columns) of a response body; no message for an error body."""
    fields: dict[str, Any] = {}
    if model := as_str(body.get("model")):
        fields["model"] = model
    fields.update({k: v for k, v in _usage(body.get("usage")).items() if v is not None})
    errors = []
    if (error := error_text(body.get("error"))) is not None:
        errors.append(error)
    if body.get("object") == "error":  # vLLM's error body
        errors.append(error_text(body) or "error")
    choice = first_choice(body.get("choices"))
    out: dict[str, Any] | None = None
    if choice:
        raw = as_dict(choice.get("message") or choice.get("delta") or choice)
        out = message(raw)
        fields["finish_reason_raw"] = as_str(choice.get("finish_reason"))
        calls = raw.get("tool_calls")
        fields["tool_calls_without_type"] = (
            sum(1 for c in calls if isinstance(c, dict) and c.get("type") is None)
            if isinstance(calls, list)
            else 0
        )
    elif isinstance(body.get("error"), dict):
        # Groq's tool_use_failed keeps what the model wrote in failed_generation: it is the
        # turn's text even though the server refused it.
        failed = body["error"].get("failed_generation")
        if isinstance(failed, str):
            out = {"role": "assistant", "content": failed, "reasoning": None, "tool_calls": []}
    if errors:
        fields["error"] = "; ".join(errors)
    return out, fields


def stream_turn(
    chunks: Iterable[Mapping[str, Any]], done: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One assistant turn from streamed chunks; done: the stream ended with [DONE].

    Content and reasoning deltas are concatenated, tool-call deltas are joined by their index,
    the last non-null finish reason and usage win (OpenRouter repeats its finish chunk; vLLM's
    continuous usage is cumulative), and an `error` object inside the stream is kept.
    """
    content: list[str] = []
    reasoning: list[str] = []
    refusal: list[str] = []
    calls: dict[Any, dict[str, Any]] = {}
    fields: dict[str, Any] = {"stream_completed": done}
    errors: list[str] = []
    finish: str | None = None
    saw_content = False
    for chunk in chunks:
        if (error := error_text(chunk.get("error"))) is not None:
            errors.append(f"error inside the stream: {error}")
        if model := as_str(chunk.get("model")):
            fields["model"] = model
        if isinstance(chunk.get("usage"), dict):
            fields.update({k: v for k, v in _usage(chunk["usage"]).items() if v is not None})
        for choice in as_list(chunk.get("choices")):
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = as_dict(choice.get("delta") or choice.get("message"))
            if isinstance(delta.get("content"), str):
                saw_content = True
                content.append(delta["content"])
            piece = delta.get("reasoning_content")
            if not isinstance(piece, str):
                piece = delta.get("reasoning")
            if isinstance(piece, str):
                reasoning.append(piece)
            if isinstance(delta.get("refusal"), str):  # a refusal streams as its own deltas
                refusal.append(delta["refusal"])
            for part in as_list(delta.get("tool_calls")):
                if not isinstance(part, dict):
                    continue
                key = part.get("index")
                if not isinstance(key, int):
                    key = part.get("id") or f"#{len(calls)}"
                slot = calls.setdefault(
                    key, {"id": None, "name": None, "arguments": [], "type": None}
                )
                if part.get("id"):
                    slot["id"] = as_str(part["id"])
                if part.get("type") is not None:
                    slot["type"] = part["type"]
                fn = as_dict(part.get("function"))
                if fn.get("name"):
                    slot["name"] = as_str(fn["name"])
                if isinstance(fn.get("arguments"), str):
                    slot["arguments"].append(fn["arguments"])
            if choice.get("finish_reason") is not None:
                finish = as_str(choice["finish_reason"])
    fields["finish_reason_raw"] = finish
    # Deltas name the type once per call, in its first fragment (Mistral never does).
    fields["tool_calls_without_type"] = sum(1 for c in calls.values() if c["type"] is None)
    if finish is not None:
        fields["stream_completed"] = True
    if not fields["stream_completed"]:
        errors.append(CUT_OFF)
    if errors:
        fields["error"] = "; ".join(errors)
    out = {
        "role": "assistant",
        "content": "".join(content) if saw_content else None,
        "reasoning": "".join(reasoning) if reasoning else None,
        "tool_calls": [
            {"id": c["id"], "name": c["name"], "arguments": "".join(c["arguments"])}
            for c in calls.values()
        ],
    }
    if "".join(refusal).strip():
        out["refusal"] = "".join(refusal)
    return out, fields
