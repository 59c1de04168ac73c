"""AWS Bedrock Converse and ConverseStream bodies, and the binary event stream they travel in.

Converse content is a list of blocks keyed by kind, not typed: `{"text"}`, `{"toolUse"}`,
`{"toolResult"}`, `{"reasoningContent": {"reasoningText": {"text"}}}`; `system` is a list of
`{"text"}` blocks; the cap is `inferenceConfig.maxTokens`. `stopReason` is end_turn, tool_use,
max_tokens, stop_sequence, guardrail_intervened, content_filtered or
model_context_window_exceeded. ConverseStream answers in `application/vnd.amazon.eventstream`
frames (a binary envelope around one JSON payload each, named by an `:event-type` header);
`eventstream_chunks` turns them into the `{eventType: payload}` dicts boto3 hands out, which is
also how logged streams look (InvokeModelWithResponseStream's `chunk` frames are unwrapped into
the model's own events). A body that carries no answer becomes an error, never an empty
turn with nothing said.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

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
)
from forensics.redact import clip

CUT_OFF = "stream cut off: it ended without a messageStop event"
_STREAM_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"}
)
_CONTENT_TYPE = "application/vnd.amazon.eventstream"
# Fixed part of a frame: total length, headers length, prelude CRC ... message CRC.
_PRELUDE = 12
_FRAME_OVERHEAD = 16


# --- the binary event stream ----------------------------------------------------------------


def is_eventstream(data: bytes) -> bool:
    """The bytes start with a well-formed event-stream frame (prelude CRC checked)."""
    if len(data) < _FRAME_OVERHEAD:
        return False
    total, headers = struct.unpack_from(">II", data)
    if total < _FRAME_OVERHEAD + headers or total > len(data) + (1 << 24):
        return False
    return zlib.crc32(data[:8]) == struct.unpack_from(">I", data, 8)[0]


def _headers(raw: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pos = 0
    while pos < len(raw):
        size = raw[pos]
        name = raw[pos + 1 : pos + 1 + size].decode("utf-8", errors="replace")
        pos += 1 + size
        kind = raw[pos]
        pos += 1
        if kind in (0, 1):  # booleans carry no value bytes
            out[name] = kind == 0
        elif kind in (6, 7):  # bytes, string: 2-byte length
            (length,) = struct.unpack_from(">H", raw, pos)
            value = raw[pos + 2 : pos + 2 + length]
            out[name] = value.decode("utf-8", errors="replace") if kind == 7 else value
            pos += 2 + length
        else:
            width = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}.get(kind)
            if width is None:
                raise ValueError(f"unknown header type {kind}")
            pos += width
    return out


def eventstream_chunks(data: bytes) -> list[dict[str, Any]]:
    """The frames of an event stream as `{eventType: payload}` dicts; an exception frame
    becomes `{"exception": {...}}`, and a damaged frame ends the list with one saying where."""
    chunks: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):
        try:
            total, head_len = struct.unpack_from(">II", data, pos)
            frame = data[pos : pos + total]
            if total < _FRAME_OVERHEAD + head_len or len(frame) < total:
                raise ValueError("frame cut short")
            if zlib.crc32(frame[:-4]) != struct.unpack_from(">I", frame, total - 4)[0]:
                raise ValueError("checksum mismatch")
            headers = _headers(frame[_PRELUDE : _PRELUDE + head_len])
            payload = frame[_PRELUDE + head_len : -4]
            value = jsonwalk.loads(payload) if payload.strip() else {}
        except (struct.error, ValueError, IndexError, RecursionError) as exc:
            chunks.append({"exception": {"type": "damagedFrame", "message": f"byte {pos}: {exc}"}})
            break
        pos += total
        if headers.get(":message-type") in ("exception", "error"):
            kind = headers.get(":exception-type") or headers.get(":error-code") or "exception"
            message = value.get("message") if isinstance(value, dict) else None
            message = message or headers.get(":error-message") or clip(json.dumps(value), 300)
            chunks.append({"exception": {"type": kind, "message": message}})
        elif (inner := _invoke_chunk(headers, value)) is not None:
            chunks.append(inner)
        else:
            chunks.append({str(headers.get(":event-type") or "unknown"): value})
    return chunks


def _invoke_chunk(headers: Mapping[str, Any], value: Any) -> dict[str, Any] | None:
    """InvokeModelWithResponseStream wraps the model's own stream events (Anthropic's
    `message_start`, …) as base64 JSON in `chunk` frames: unwrapped, the model's dialect reads
    them."""
    if headers.get(":event-type") != "chunk" or not isinstance(value, dict):
        return None
    try:
        inner = jsonwalk.loads(base64.b64decode(str(value.get("bytes")), validate=False))
    except (ValueError, RecursionError):
        return None
    return inner if isinstance(inner, dict) else None


def has_content_type(content_type: str | None) -> bool:
    return bool(content_type and _CONTENT_TYPE in content_type.lower())


# --- recognising the dialect ----------------------------------------------------------------


def claims_path(path: str) -> bool:
    return "/model/" in path and path.endswith(("/converse", "/converse-stream"))


def is_response(body: Mapping[str, Any]) -> bool:
    return "stopReason" in body and isinstance(body.get("output"), dict)


def is_chunk(chunk: Mapping[str, Any]) -> bool:
    return bool(_STREAM_EVENTS & chunk.keys())


_BLOCK_KEYS = frozenset({"text", "toolUse", "toolResult", "reasoningContent", "image", "document"})


def is_request(body: Mapping[str, Any]) -> bool:
    if "messages" not in body:
        return False
    if "inferenceConfig" in body or "toolConfig" in body or "modelId" in body:
        return True
    # Untyped blocks: every content block is keyed by its kind, none has a `type`.
    blocks = [
        block
        for message in as_list(body.get("messages"))
        for block in as_list(as_dict(message).get("content"))
        if isinstance(block, dict)
    ]
    return bool(blocks) and all("type" not in b and b.keys() & _BLOCK_KEYS for b in blocks)


# --- requests --------------------------------------------------------------------------------


def _reasoning_text(block: Any) -> str | None:
    reasoning = as_dict(block)
    text = as_dict(reasoning.get("reasoningText")).get("text")
    if isinstance(text, str):
        return text
    return as_str(reasoning.get("text")) if isinstance(reasoning.get("text"), str) else None


def _assistant(blocks: Any) -> dict[str, Any]:
    """The message of a list of blocks; `unread` lists the block kinds of an answer that holds
    nothing else, so the turn says why it is empty."""
    unread: list[str] = []
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif "toolUse" in block:
            use = as_dict(block["toolUse"])
            calls.append(
                {
                    "id": as_str(use.get("toolUseId")),
                    "name": as_str(use.get("name")),
                    "arguments": json_text(use.get("input")),
                }
            )
        elif "reasoningContent" in block:
            if text := _reasoning_text(block["reasoningContent"]):
                thoughts.append(text)
        elif "citationsContent" in block:  # text with its sources (Nova, Claude citations)
            for part in as_list(as_dict(block["citationsContent"]).get("content")):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
        else:
            unread.extend(str(k) for k in block)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "reasoning": "\n".join(thoughts) if thoughts else None,
        "tool_calls": calls,
    }
    if unread and not (texts or thoughts or calls):
        message["unread"] = sorted(set(unread))
    return message


def _tool_result(result: Mapping[str, Any]) -> str | None:
    parts = []
    for item in as_list(result.get("content")):
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif isinstance(item, dict) and "json" in item:
            parts.append(json_text(item["json"]) or "")
    return "\n".join(parts) if parts else None


def _user(blocks: Any) -> list[dict[str, Any]]:
    if not isinstance(blocks, list):
        return [{"role": "user", "content": text_of(blocks), "reasoning": None, "tool_calls": []}]
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if "toolResult" in block:
            result = as_dict(block["toolResult"])
            out.append(
                {
                    "role": "tool",
                    "content": _tool_result(result),
                    "reasoning": None,
                    "tool_calls": [],
                    "tool_call_id": as_str(result.get("toolUseId")),
                }
            )
        elif isinstance(block.get("text"), str):
            texts.append(block["text"])
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
            said = _assistant(message.get("content"))
            said.pop("unread", None)
            out.append(said)
        else:
            out.extend(_user(message.get("content")))
    return out


def _tool_choice(choice: Any) -> str | None:
    if not isinstance(choice, dict) or not choice:
        return None
    kind = next(iter(choice))
    name = as_dict(choice.get("tool")).get("name")
    return f"tool:{name}" if kind == "tool" and name else str(kind)


def request_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    config = as_dict(body.get("toolConfig"))
    tools = [t for t in as_list(config.get("tools")) if isinstance(t, dict) and "toolSpec" in t]
    extra = as_dict(body.get("additionalModelRequestFields"))
    thinking = as_dict(extra.get("thinking") or extra.get("reasoning_config"))
    fields = request_basics(
        body,
        len(tools),
        _tool_choice(config.get("toolChoice")),
        as_int(as_dict(body.get("inferenceConfig")).get("maxTokens")),
    )
    fields["model"] = as_str(body.get("modelId"))
    kind = thinking.get("type")
    if kind in ("enabled", "adaptive"):
        fields["enable_thinking"] = True
    elif kind == "disabled":
        fields["enable_thinking"] = False
    fields["reasoning_budget"] = as_int(thinking.get("budget_tokens"))
    return fields


def call_fields(url: str | None) -> dict[str, Any]:
    """Model and endpoint from a Converse URL (`…/model/<model id>/converse`)."""
    if not url:
        return {}
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    out: dict[str, Any] = {}
    if parts.netloc:
        out["endpoint"] = f"{parts.scheme}://{parts.netloc}"
    if "/model/" in path:
        model = path.split("/model/", 1)[1].rsplit("/", 1)[0]
        out["model"] = unquote(model) or None
    out["stream"] = path.endswith("/converse-stream")
    return out


# --- responses -------------------------------------------------------------------------------


def _usage(usage: Any) -> dict[str, Any]:
    usage = as_dict(usage)
    fields: dict[str, Any] = {}
    parts = [
        as_int(usage.get(k))
        for k in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
    ]
    if parts[0] is not None:
        fields["input_tokens"] = sum(p or 0 for p in parts)
    if (out := as_int(usage.get("outputTokens"))) is not None:
        fields["output_tokens"] = out
    return fields


def response_turn(body: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(assistant message, turn columns); an error body (`{"message": …}`) has no message."""
    fields: dict[str, Any] = {}
    message = as_dict(as_dict(body.get("output")).get("message"))
    if not message:
        why = error_text(body.get("message") or body.get("Message") or body.get("error"))
        fields["error"] = why or "Bedrock response without output.message"
        fields["finish_reason_raw"] = as_str(body.get("stopReason"))
        return None, fields
    fields.update(_usage(body.get("usage")))
    fields["finish_reason_raw"] = as_str(body.get("stopReason"))
    return _said(_assistant(message.get("content")), fields), fields


def _said(message: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    if unread := message.pop("unread", None):
        why = f"answer holds only blocks that are not read: {', '.join(unread)}"
        fields["error"] = "; ".join(e for e in (fields.get("error"), why) if e)
    return message


def stream_turn(events: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One message from ConverseStream events: blocks rebuilt by contentBlockIndex, the stop
    reason from messageStop, usage from metadata, exceptions kept as the error."""
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, list[str]] = {}
    fields: dict[str, Any] = {}
    errors: list[str] = []
    stop: str | None = None
    stopped = False
    for event in events:
        for kind, value in event.items():
            value = as_dict(value)
            index = as_int(value.get("contentBlockIndex"))
            if kind == "contentBlockStart" and index is not None:
                use = as_dict(as_dict(value.get("start")).get("toolUse"))
                if use:
                    blocks[index] = {"toolUse": {**use, "input": None}}
            elif kind == "contentBlockDelta" and index is not None:
                delta = as_dict(value.get("delta"))
                block = blocks.setdefault(index, {})
                if isinstance(delta.get("text"), str):
                    block["text"] = block.get("text", "") + delta["text"]
                elif "toolUse" in delta:
                    piece = as_str(as_dict(delta["toolUse"]).get("input")) or ""
                    inputs.setdefault(index, []).append(piece)
                    block.setdefault("toolUse", {})
                elif "reasoningContent" in delta:
                    text = as_dict(delta["reasoningContent"]).get("text")
                    if isinstance(text, str):
                        thought = as_dict(block.get("reasoningContent"))
                        prior = as_dict(thought.get("reasoningText")).get("text") or ""
                        block["reasoningContent"] = {"reasoningText": {"text": prior + text}}
            elif kind == "messageStop":
                stopped = True
                stop = as_str(value.get("stopReason")) or stop
            elif kind == "metadata":
                fields.update(_usage(value.get("usage")))
            elif kind == "exception" or kind.endswith("Exception"):
                message = value.get("message") or value.get("Message")
                label = value.get("type") or kind
                errors.append(f"error inside the stream: {label}: {message}")
    for index, pieces in inputs.items():
        joined = "".join(pieces)
        try:
            blocks[index]["toolUse"]["input"] = jsonwalk.loads(joined) if joined else {}
        except json.JSONDecodeError:
            blocks[index]["toolUse"]["input"] = joined  # invalid arguments are evidence
    fields["finish_reason_raw"] = stop
    fields["stream_completed"] = stopped
    if not stopped:
        errors.append(CUT_OFF)
    if errors:
        fields["error"] = "; ".join(errors)
    return _said(_assistant([blocks[i] for i in sorted(blocks)]), fields), fields
