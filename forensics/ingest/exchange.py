"""One captured API call -> a `Call`: the conversation it sent and the turn it produced.

Containers (JSONL pairs, OpenAI Batch, HAR, LiteLLM logs) only know where the request and the
response are; this module knows what they say. The API is recognised from the URL path, else
from the shape of the bodies (never from a file name): OpenAI Chat Completions and everything
compatible, Anthropic Messages, OpenAI Responses, and Gemini (through `ingest.gemini`, when that
module is installed).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from forensics.ingest import anthropic, openai_chat, openai_responses, requestinfo, sse
from forensics.ingest.apicommon import as_dict, as_str, endpoint_of, error_text, without_query


class NotACall(Exception):
    """The record is readable but holds no LLM API call; str(exc) is the one-line reason."""


@dataclass
class Exchange:
    """What a container holds about one call, before the bodies are understood."""

    request: Any = None  # request body: dict, or its JSON text
    response: Any = None  # response body: dict, list of stream chunks, JSON text or SSE text
    status: int | None = None  # HTTP status; 0 = no response (connection failed)
    url: str | None = None
    method: str | None = None
    transport_error: str | None = None  # why no HTTP response arrived (HAR _error, batch error)
    endpoint: str | None = None  # where the call went when there is no URL (LiteLLM api_base)
    has_response: bool = True  # False: the container has no response side at all


@dataclass
class Call:
    """An understood call: request messages, the assistant turn it produced and its columns."""

    line: int
    messages: list[dict[str, Any]]
    output: dict[str, Any] | None
    fields: dict[str, Any] = field(default_factory=dict)
    response_id: str | None = None
    previous_response_id: str | None = None
    # Line of the request when it sits apart from the response (OpenAI Batch input files):
    # the history messages come from there.
    request_line: int | None = None
    # The call returned no usable message (HTTP error, no response): the conversation did not
    # move on, and a retry re-sends the same messages.
    failed: bool = False
    # Set when `messages` are the request's raw messages: turns them into the collector's
    # shape. Linking then normalises only the messages it has not seen before.
    normalise: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    # Digest of the request body's keys other than the conversation (requestinfo); linking
    # completes it into request_hash with the conversation digest it computes anyway.
    params_digest: bytes | None = None


def _gemini() -> ModuleType | None:
    try:
        return importlib.import_module("forensics.ingest.gemini")
    except ImportError:
        return None


def _decode(body: Any) -> tuple[str, Any]:
    """(kind, value): kind is none, json, sse, chunks or text."""
    if body is None:
        return "none", None
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, dict):
        return "json", body
    if isinstance(body, list):
        return (
            ("chunks", body)
            if all(isinstance(c, dict) for c in body)
            else ("text", json.dumps(body))
        )
    if not isinstance(body, str):
        return "text", str(body)
    text = body.strip()
    if not text:
        return "none", None
    if sse.looks_like(text):
        return "sse", text
    if text[0] in "{[":
        try:
            return _decode(json.loads(text))
        except (json.JSONDecodeError, RecursionError):
            return "text", text
    return "text", text


def _sse_payloads(text: str) -> tuple[list[dict[str, Any]], bool, int]:
    """(JSON payloads, saw [DONE], payloads that were not JSON objects)."""
    payloads: list[dict[str, Any]] = []
    done = False
    bad = 0
    for event in sse.events(text):
        if event.data.strip() == sse.DONE:
            done = True
            continue
        try:
            obj = json.loads(event.data)
        except (json.JSONDecodeError, RecursionError):
            bad += 1
            continue
        if not isinstance(obj, dict):
            bad += 1
            continue
        if event.name and "type" not in obj:
            obj["type"] = event.name
        payloads.append(obj)
    return payloads, done, bad


def _api_from_url(url: str | None) -> str | None:
    if not url:
        return None
    path = urlsplit(url).path.rstrip("/")
    if path.endswith(("/chat/completions", "/completions")):
        return "chat"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "responses"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    return None


def _api_from_response(kind: str, body: Any) -> str | None:
    """The API a response body (kind json) or its stream chunks (chunks, sse) come from."""
    if kind == "json":
        if openai_chat.is_response(body):
            return "chat"
        if anthropic.is_response(body) or body.get("type") == "error":
            return "anthropic"
        if openai_responses.is_response(body):
            return "responses"
        if "candidates" in body or "promptFeedback" in body:
            return "gemini"
        gemini = _gemini()
        return "gemini" if gemini is not None and gemini.is_response(body) else None
    for chunk in body[:3]:
        kind_of = chunk.get("type")
        if isinstance(kind_of, str) and kind_of.startswith(("message_", "content_block_")):
            return "anthropic"
        if isinstance(kind_of, str) and kind_of.startswith("response."):
            return "responses"
        if "choices" in chunk:
            return "chat"
        if "candidates" in chunk or "promptFeedback" in chunk:
            return "gemini"
    return None


_ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}


def _api_from_request(body: Mapping[str, Any]) -> str | None:
    if "contents" in body:
        return "gemini"
    if "input" in body and "messages" not in body:
        return "responses"
    if "messages" not in body:
        return None
    if "anthropic_version" in body or "system" in body:
        return "anthropic"
    for message in body.get("messages") or []:
        for block in as_dict(message).get("content") or []:
            if isinstance(block, dict) and block.get("type") in _ANTHROPIC_BLOCKS:
                return "anthropic"
    return "chat"


_MODULES = {"chat": openai_chat, "anthropic": anthropic, "responses": openai_responses}


def _placeholder() -> dict[str, Any]:
    """The agent's turn of a call that returned no message: the failure is the turn."""
    return {
        "role": "assistant",
        "content": None,
        "reasoning": None,
        "tool_calls": [],
        "placeholder": True,
    }


def build(ex: Exchange, line: int) -> Call:
    """The call an exchange records; raises NotACall when it is not an LLM API call."""
    req_kind, request = _decode(ex.request)
    if req_kind != "json":
        request = None
    res_kind, response = _decode(ex.response)
    payloads: list[dict[str, Any]] = []
    done, bad = False, 0
    if res_kind == "sse":
        payloads, done, bad = _sse_payloads(response)
    api = _api_from_url(ex.url)
    if api is None and res_kind in ("json", "chunks", "sse"):
        api = _api_from_response(res_kind, payloads if res_kind == "sse" else response)
    if api is None and request is not None:
        api = _api_from_request(request)
    if api is None:
        where = " ".join(p for p in (ex.method, without_query(ex.url)) if p)
        raise NotACall(f"not an LLM API call{f' ({where})' if where else ''}")
    if api == "gemini":
        return _build_gemini(ex, line, request, res_kind, response)
    module = _MODULES[api]
    normalise = None
    raw = request.get("messages") if api == "chat" and request is not None else None
    if isinstance(raw, list):
        messages = [m for m in raw if isinstance(m, dict)]
        normalise = openai_chat.request_message
    else:
        messages = module.request_messages(request) if request is not None else []
    fields: dict[str, Any] = module.request_fields(request) if request is not None else {}
    if endpoint := endpoint_of(ex.url) or ex.endpoint:
        fields["endpoint"] = endpoint
    if request is not None:
        fields["request_keys"] = requestinfo.request_keys(request)
    output: dict[str, Any] | None = None
    errors: list[str] = []
    if ex.transport_error is not None or ex.status == 0:
        output = _placeholder()
        errors.append(ex.transport_error or "no response (HTTP status 0)")
    elif res_kind == "sse":
        if api == "chat":
            output, got = openai_chat.stream_turn(payloads, done)
        else:
            output, got = module.stream_turn(payloads)
        fields.update(got)
        if bad:
            errors.append(f"{bad} stream event(s) were not JSON objects")
        fields.setdefault("stream", True)
    elif res_kind == "chunks":
        output, got = (
            openai_chat.stream_turn(response, False)
            if api == "chat"
            else module.stream_turn(response)
        )
        fields.update(got)
        fields.setdefault("stream", True)
    elif res_kind == "json":
        output, got = module.response_turn(response)
        fields.update(got)
        if output is None:
            output = _placeholder()
    elif res_kind == "text":
        output = _placeholder()
        errors.append(f"response body is not JSON: {' '.join(response[:200].split())}")
    elif ex.has_response:
        output = _placeholder()
        errors.append("response body not captured")
    if ex.status is not None:
        fields["http_status"] = ex.status
        if output is not None and ex.status >= 400 and not fields.get("error") and not errors:
            errors.append(f"HTTP {ex.status}")
    if errors:
        fields["error"] = "; ".join([*([fields["error"]] if fields.get("error") else []), *errors])
    call = Call(line, messages, output, fields, failed=_failed(ex, output), normalise=normalise)
    if request is not None:
        call.params_digest = requestinfo.params_digest(request)
    if api == "responses":
        call.previous_response_id = as_str(as_dict(request).get("previous_response_id"))
        if res_kind == "json":
            call.response_id = as_str(response.get("id"))
    return call


def _build_gemini(ex: Exchange, line: int, request: Any, res_kind: str, response: Any) -> Call:
    gemini = _gemini()
    if gemini is None:
        raise NotACall("gemini body: not supported")
    messages = gemini.request_messages(request) if request is not None else []
    output: dict[str, Any] | None = None
    if ex.transport_error is not None or ex.status == 0:
        output = _placeholder()
        fields = gemini.request_fields(request, ex.url)
        fields["error"] = ex.transport_error or "no response (HTTP status 0)"
    elif res_kind in ("json", "chunks", "sse"):
        body = gemini.parse_sse(response) if res_kind == "sse" else response
        streamed = res_kind != "json" or (ex.url is not None and ":streamGenerateContent" in ex.url)
        if res_kind == "json" and "error" in response and "candidates" not in response:
            output = _placeholder()
            fields = gemini.request_fields(request, ex.url)
            fields["error"] = error_text(response.get("error"))
        else:
            output, fields = gemini.turn_from_response(body, request, ex.url, streamed)
            fields["stream"] = streamed
            if streamed:
                fields["stream_completed"] = fields.get("finish_reason_raw") is not None
    else:
        fields = gemini.request_fields(request, ex.url)
        if ex.has_response:
            output = _placeholder()
            fields["error"] = (
                "response body not captured" if res_kind == "none" else "response body is not JSON"
            )
    if request is not None:
        fields["request_keys"] = requestinfo.request_keys(request)
    if ex.status is not None:
        fields["http_status"] = ex.status
    if not fields.get("endpoint") and (endpoint := endpoint_of(ex.url) or ex.endpoint):
        fields["endpoint"] = endpoint
    call = Call(line, messages, output, fields, failed=_failed(ex, output))
    if request is not None:
        call.params_digest = requestinfo.params_digest(request)
    return call


def _failed(ex: Exchange, output: dict[str, Any] | None) -> bool:
    if ex.transport_error is not None or ex.status == 0:
        return True
    if ex.status is not None and ex.status >= 400:
        return True
    return output is not None and output.get("placeholder") is True
