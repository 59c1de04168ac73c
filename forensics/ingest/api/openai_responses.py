"""OpenAI Responses API bodies (`/v1/responses`): input items in, output items out.

There is no finish_reason in this API (formats-api §3): a response is `completed`, or
`incomplete` with `incomplete_details.reason` (max_output_tokens, content_filter), or `failed`.
The raw column keeps that status (or the incomplete reason); the normalised one follows the
Chat Completions convention: a completed response that calls tools finished with tool_calls.
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
    tool_choice_text,
)

CUT_OFF = "stream cut off: it ended before response.completed, .incomplete or .failed"
_CALLS = ("function_call", "custom_tool_call")
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def _call(item: Mapping[str, Any]) -> dict[str, Any]:
    args = item.get("arguments", item.get("input"))
    return {
        "id": as_str(item.get("call_id") or item.get("id")),
        "name": as_str(item.get("name")),
        "arguments": json_text(args),
    }


def _reasoning_text(item: Mapping[str, Any]) -> str | None:
    texts = []
    for key in ("content", "summary"):
        for part in as_list(item.get(key)):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return "\n".join(texts) if texts else None


def output_message(items: Any) -> dict[str, Any]:
    """The output items of a response as one assistant message."""
    texts: list[str] = []
    thoughts: list[str] = []
    refusals: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            for part in as_list(item.get("content")):
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "refusal":  # the model refused: not an answer's text
                    if isinstance(part.get("refusal"), str):
                        refusals.append(part["refusal"])
                elif isinstance(part.get("text"), str):
                    texts.append(part["text"])
        elif kind == "reasoning":
            if (text := _reasoning_text(item)) is not None:
                thoughts.append(text)
        elif kind in _CALLS:
            calls.append(_call(item))
    out: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "reasoning": "\n".join(thoughts) if thoughts else None,
        "tool_calls": calls,
    }
    if "".join(refusals).strip():
        out["refusal"] = "".join(refusals)
    return out


def request_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        out.append(
            {"role": "system", "content": body["instructions"], "reasoning": None, "tool_calls": []}
        )
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    previous_kind = None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type") or "message"
        if kind in _CALLS:
            # Calls follow the assistant message of the same output as separate items.
            if previous_kind in ("assistant", *_CALLS) and out and out[-1]["role"] == "assistant":
                out[-1]["tool_calls"].append(_call(item))
            else:
                out.append(
                    {
                        "role": "assistant",
                        "content": None,
                        "reasoning": None,
                        "tool_calls": [_call(item)],
                    }
                )
        elif kind.endswith("_call_output"):
            result: dict[str, Any] = {
                "role": "tool",
                "content": text_of(item.get("output")),
                "reasoning": None,
                "tool_calls": [],
            }
            if call_id := as_str(item.get("call_id")):
                result["tool_call_id"] = call_id
            out.append(result)
        elif kind == "message":
            role = item.get("role") or "user"
            role = "system" if role == "developer" else role
            message: dict[str, Any] = {
                "role": role,
                "content": text_of(item.get("content")),
                "reasoning": None,
                "tool_calls": [],
            }
            if (refusal := output_message([item]).get("refusal")) is not None:
                message["refusal"] = refusal
            out.append(message)
            kind = role
        previous_kind = kind
    return out


def request_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    tools = len(body["tools"]) if isinstance(body.get("tools"), list) else 0
    choice = tool_choice_text(body.get("tool_choice"))
    effort = as_dict(body.get("reasoning")).get("effort")
    return {
        **request_basics(body, tools, choice, as_int(body.get("max_output_tokens"))),
        "reasoning_effort": as_str(effort),
    }


def is_response(body: Any) -> bool:
    return isinstance(body, dict) and body.get("object") == "response"


def response_turn(body: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    fields: dict[str, Any] = {}
    if model := as_str(body.get("model")):
        fields["model"] = model
    usage = as_dict(body.get("usage"))
    for column, key in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens")):
        if (value := as_int(usage.get(key))) is not None:
            fields[column] = value
    reasoning = as_int(as_dict(usage.get("output_tokens_details")).get("reasoning_tokens"))
    if reasoning is not None:
        fields["reasoning_tokens"] = reasoning
    if (error := error_text(body.get("error"))) is not None:
        fields["error"] = error
    # A Response echoes the cap it ran with: the request side, when only the response was kept.
    if (cap := as_int(body.get("max_output_tokens"))) is not None:
        fields["max_output_tokens"] = cap
    if "output" not in body:
        return None, fields
    message = output_message(body.get("output"))
    status = as_str(body.get("status"))
    if status == "incomplete":
        reason = as_str(as_dict(body.get("incomplete_details")).get("reason"))
        fields["finish_reason_raw"] = reason or status
    elif status is not None:
        fields["finish_reason_raw"] = status
        if status == "completed":
            fields["finish_reason"] = "tool_calls" if message["tool_calls"] else "stop"
        elif status == "failed":
            fields["finish_reason"] = "error"
    return message, fields


def stream_turn(events: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A streamed response: the terminal event carries the whole Response; without one, the
    finished output items (or the text deltas) say what was produced before the cut."""
    done_items: dict[int, Any] = {}
    deltas: dict[int, list[str]] = {}
    errors: list[str] = []
    final: Mapping[str, Any] | None = None
    last: Mapping[str, Any] = {}
    for event in events:
        kind = event.get("type")
        if isinstance(event.get("response"), dict):
            last = event["response"]
        if kind in _TERMINAL:
            final = last
        elif kind == "response.output_item.done":
            done_items[as_int(event.get("output_index")) or 0] = event.get("item")
        elif kind == "response.output_text.delta":
            deltas.setdefault(as_int(event.get("output_index")) or 0, []).append(
                as_str(event.get("delta")) or ""
            )
        elif kind == "error":
            errors.append(f"error inside the stream: {error_text(event)}")
    if final is not None:
        message, fields = response_turn(final)
        message = message or output_message([])
        fields["stream_completed"] = True
    else:
        items = [done_items[i] for i in sorted(done_items)]
        for index in sorted(set(deltas) - set(done_items)):
            items.append(
                {
                    "type": "message",
                    "content": [{"type": "output_text", "text": "".join(deltas[index])}],
                }
            )
        message = output_message(items)
        fields = {"stream_completed": False}
        if model := as_str(last.get("model")):
            fields["model"] = model
        errors.append(CUT_OFF)
    if errors:
        fields["error"] = "; ".join([*([fields["error"]] if fields.get("error") else []), *errors])
    return message, fields
