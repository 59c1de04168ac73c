"""Anthropic Messages bodies: requests, responses and their named-event streams.

Content is a list of typed blocks (formats-api §4): `text` goes to content, `thinking` to
reasoning, `tool_use` to tool calls; a user message's `tool_result` blocks become tool messages
so tool output is attributed to the environment, not to the user.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from forensics.ingest.parse import jsonwalk
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

CUT_OFF = "stream cut off: it ended with neither message_stop nor a stop_reason"
_TOOL_USE = ("tool_use", "server_tool_use")


def _assistant(blocks: Any) -> dict[str, Any]:
    if isinstance(blocks, str):
        return {"role": "assistant", "content": blocks, "reasoning": None, "tool_calls": []}
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thoughts.append(block["thinking"])
        elif kind in _TOOL_USE:
            calls.append(
                {
                    "id": as_str(block.get("id")),
                    "name": as_str(block.get("name")),
                    "arguments": json_text(block.get("input")),
                }
            )
    return {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "reasoning": "\n".join(thoughts) if thoughts else None,
        "tool_calls": calls,
    }


def _user(blocks: Any) -> list[dict[str, Any]]:
    if not isinstance(blocks, list):
        return [{"role": "user", "content": text_of(blocks), "reasoning": None, "tool_calls": []}]
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            out.append(
                {
                    "role": "tool",
                    "content": text_of(block.get("content")),
                    "reasoning": None,
                    "tool_calls": [],
                    "tool_call_id": as_str(block.get("tool_use_id")),
                }
            )
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, str):
            texts.append(block)
    if texts or not out:
        out.append(
            {"role": "user", "content": "\n".join(texts), "reasoning": None, "tool_calls": []}
        )
    return out


def request_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        out.append(
            {"role": "system", "content": text_of(system), "reasoning": None, "tool_calls": []}
        )
    for message in as_list(body.get("messages")):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            out.append(_assistant(message.get("content")))
        else:
            out.extend(_user(message.get("content")))
    return out


def request_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    tools = len(body["tools"]) if isinstance(body.get("tools"), list) else 0
    choice = tool_choice_text(body.get("tool_choice"))
    thinking = as_dict(body.get("thinking"))
    return {
        **request_basics(body, tools, choice, as_int(body.get("max_tokens"))),
        "enable_thinking": thinking_switch(body),
        "reasoning_budget": as_int(thinking.get("budget_tokens")),
    }


def _usage(usage: Any) -> dict[str, Any]:
    usage = as_dict(usage)
    fields: dict[str, Any] = {}
    # Anthropic's input_tokens excludes cache reads and writes; OpenTelemetry's includes them.
    parts = [
        as_int(usage.get(k))
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    ]
    if parts[0] is not None:
        fields["input_tokens"] = sum(p or 0 for p in parts)
    if (out := as_int(usage.get("output_tokens"))) is not None:
        fields["output_tokens"] = out
    details = as_dict(usage.get("output_tokens_details"))
    thinking = as_int(details.get("thinking_tokens", details.get("reasoning_tokens")))
    if thinking is not None:
        fields["reasoning_tokens"] = thinking
    return fields


def is_response(body: Any) -> bool:
    return isinstance(body, dict) and body.get("type") == "message" and "content" in body


def response_turn(body: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(assistant message, turn columns) of a Message; an error body has no message."""
    fields: dict[str, Any] = {}
    if body.get("type") == "error" or "error" in body:
        fields["error"] = error_text(body.get("error"))
        return None, fields
    if model := as_str(body.get("model")):
        fields["model"] = model
    fields.update(_usage(body.get("usage")))
    fields["finish_reason_raw"] = as_str(body.get("stop_reason"))
    return _assistant(body.get("content")), fields


def stream_turn(events: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One Message from its stream: blocks rebuilt by index, usage and stop_reason from the
    message_delta (cumulative), an `error` event kept. There is no [DONE] in this protocol."""
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, list[str]] = {}
    fields: dict[str, Any] = {}
    errors: list[str] = []
    stop: str | None = None
    stopped = False
    for event in events:
        kind = event.get("type")
        index = as_int(event.get("index"))
        if kind == "message_start":
            message = as_dict(event.get("message"))
            if model := as_str(message.get("model")):
                fields["model"] = model
            fields.update(_usage(message.get("usage")))
        elif kind == "content_block_start" and index is not None:
            blocks[index] = dict(as_dict(event.get("content_block")))
        elif kind == "content_block_delta" and index is not None:
            block = blocks.setdefault(index, {})
            delta = as_dict(event.get("delta"))
            dtype = delta.get("type")
            if dtype == "text_delta":
                block.setdefault("type", "text")
                block["text"] = (block.get("text") or "") + (as_str(delta.get("text")) or "")
            elif dtype == "thinking_delta":
                block.setdefault("type", "thinking")
                block["thinking"] = (block.get("thinking") or "") + (
                    as_str(delta.get("thinking")) or ""
                )
            elif dtype == "input_json_delta":
                partial_json.setdefault(index, []).append(as_str(delta.get("partial_json")) or "")
        elif kind == "message_delta":
            delta = as_dict(event.get("delta"))
            if delta.get("stop_reason") is not None:
                stop = as_str(delta["stop_reason"])
            fields.update(_usage(event.get("usage")))
        elif kind == "message_stop":
            stopped = True
        elif kind == "error":
            errors.append(f"error inside the stream: {error_text(event.get('error'))}")
    for index, pieces in partial_json.items():
        joined = "".join(pieces)
        try:
            blocks[index]["input"] = jsonwalk.loads(joined) if joined else {}
        except json.JSONDecodeError:
            blocks[index]["input"] = joined  # kept as sent: invalid arguments are evidence
    fields["finish_reason_raw"] = stop
    fields["stream_completed"] = stopped or stop is not None
    if not fields["stream_completed"]:
        errors.append(CUT_OFF)
    if errors:
        fields["error"] = "; ".join(errors)
    return _assistant([blocks[i] for i in sorted(blocks)]), fields
