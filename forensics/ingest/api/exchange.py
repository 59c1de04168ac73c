"""One captured API call -> a `Call`: the conversation it sent and the turn it produced.

Containers (JSONL pairs, OpenAI Batch, HAR, LiteLLM logs) only know where the request and the
response are; this module knows what they say. The API is recognised from the URL path, else
from the shape of the bodies (never from a file name): OpenAI Chat Completions and everything
compatible, Anthropic Messages, OpenAI Responses, Gemini, Ollama's native API, Bedrock Converse
and the servers' native generate endpoints, each a `Dialect` in `DIALECTS`: a new API is one
more entry, not another branch here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import partial
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from forensics.ingest.api import (
    anthropic,
    bedrock,
    gemini,
    generate_api,
    ollama,
    openai_chat,
    openai_responses,
    requestinfo,
    sse,
)
from forensics.ingest.parse import jsonwalk
from forensics.ingest.parse.apicommon import (
    as_dict,
    as_list,
    as_str,
    endpoint_of,
    error_text,
    without_query,
)
from forensics.redact import clip


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
    # When the call was made, as the container dates it (ISO 8601 or an HTTP date).
    time: str | None = None


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


def _decode(body: Any) -> tuple[str, Any]:
    """(kind, value): kind is none, json, sse, chunks or text."""
    if body is None:
        return "none", None
    if isinstance(body, bytes):
        if bedrock.is_eventstream(body):  # ConverseStream's binary frames
            return "chunks", bedrock.eventstream_chunks(body)
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
            return _decode(jsonwalk.loads(text))
        except (json.JSONDecodeError, RecursionError):
            if (lines := _ndjson(text)) is not None:
                return "chunks", lines
            return "text", text
    return "text", text


def _ndjson(text: str) -> list[dict[str, Any]] | None:
    """The objects of a newline-delimited JSON stream (Ollama streams), or None if it is not
    one: at least two lines, every non-blank line a JSON object."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    out = []
    for line in lines:
        try:
            value = jsonwalk.loads(line)
        except (json.JSONDecodeError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        out.append(value)
    return out


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
            obj = jsonwalk.loads(event.data)
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
    chunks = payloads if res_kind == "sse" else response if res_kind == "chunks" else []
    path = urlsplit(ex.url).path.rstrip("/") if ex.url else ""
    body = response if res_kind == "json" else None
    # Asked once: it picks the dialect when the path does not, and a body no API claims to a
    # path no API claims is not a call.
    by_body = next((d for d in DIALECTS if d.claims_body(body)), None) if body is not None else None
    dialect = detect(path, by_body, request, chunks)
    if (
        dialect is None
        or (body is not None and _foreign_answer(ex, path, body, by_body))
        or path.endswith(_NOT_CALL_PATHS)
    ):
        where = " ".join(p for p in (ex.method, without_query(ex.url)) if p)
        raise NotACall(f"not an LLM API call{f' ({where})' if where else ''}")
    call = dialect.build(ex, line, request, res_kind, response, payloads, done, bad)
    if (seconds := epoch_seconds(ex.time)) is not None:
        call.fields["request_time"] = seconds
    return call


def epoch_seconds(text: str | None) -> float | None:
    """Seconds since the epoch of an ISO 8601 time (HAR) or an HTTP date (RFC 9110: Date
    headers, Ruby VCR's recorded_at); None when it is neither. A time without a zone is UTC."""
    if not isinstance(text, str) or not text.strip():
        return None
    text = text.strip()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


# Endpoints of the same APIs that produce no turn: embeddings, token counting.
_NOT_CALL_PATHS = (
    "/embeddings",
    ":embedContent",
    ":batchEmbedContents",
    "/count_tokens",
    "/count-tokens",
    ":countTokens",
)


def _foreign_answer(
    ex: Exchange, path: str, body: Mapping[str, Any], by_body: Dialect | None
) -> bool:
    """A successful JSON answer that no API's response shape claims (by_body is None), to a
    URL no API's path claims: the request only looked like one (an embeddings call's `input`,
    a search API's `contents`). Error bodies stay calls: a failed call is evidence."""
    if (ex.status is not None and not 200 <= ex.status < 300) or "error" in body:
        return False
    if path and any(d.claims_path(path) for d in DIALECTS):
        return False
    return by_body is None


def _messages_api(
    module: ModuleType,
    ex: Exchange,
    line: int,
    request: Any,
    res_kind: str,
    response: Any,
    payloads: list[dict[str, Any]],
    done: bool,
    bad: int,
) -> Call:
    """Chat Completions, Anthropic Messages and Responses: a module with request_messages,
    request_fields, response_turn and stream_turn reads the bodies."""
    chat = module is openai_chat
    normalise = None
    raw = request.get("messages") if chat and request is not None else None
    if isinstance(raw, list):
        messages = [m for m in raw if isinstance(m, dict)]
        normalise = openai_chat.request_message
    else:
        messages = module.request_messages(request) if request is not None else []
    fields: dict[str, Any] = {}
    params: bytes | None = None
    if request is not None:
        fields, params = _request_side(module, request)
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
        if chat:
            output, got = openai_chat.stream_turn(payloads, done)
        else:
            output, got = module.stream_turn(payloads)
        fields.update(got)
        if bad:
            errors.append(f"{bad} stream event(s) were not JSON objects")
        fields.setdefault("stream", True)
    elif res_kind == "chunks":
        output, got = (
            openai_chat.stream_turn(response, False) if chat else module.stream_turn(response)
        )
        fields.update(got)
        fields.setdefault("stream", True)
    elif res_kind == "json":
        output, got = module.response_turn(response)
        fields.update(got)
        if output is None:
            output = _placeholder()
            if not fields.get("error"):  # never an empty turn that says nothing
                keys = ", ".join(sorted(map(str, response))[:8])
                said = response.get("message") or response.get("detail")
                # A blank message says nothing: error_text gives "" for it.
                said_text = error_text(said) if isinstance(said, str) else None
                errors.append(said_text or f"response body holds no answer (keys: {keys})")
    elif res_kind == "text":
        output = _placeholder()
        errors.append(f"response body is not JSON: {' '.join(clip(response, 200).split())}")
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
    call.params_digest = params
    if module is openai_responses:
        call.previous_response_id = as_str(as_dict(request).get("previous_response_id"))
        if res_kind == "json":
            call.response_id = as_str(response.get("id"))
    return call


# Dialects whose request_fields read no conversation key (messages, input, contents).
_PARAMS_ONLY = (openai_chat, anthropic, openai_responses)


def _request_side(module: ModuleType, request: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """(request_fields, params_digest) of a request. Both depend only on the keys other than
    the conversation, which an agent loop sends unchanged with every request: they are worked
    out once per distinct set (requestinfo.params_key) within a file's read."""
    memo = requestinfo.params_memo() if module in _PARAMS_ONLY else None
    found = requestinfo.params_key(request) if memo is not None else None
    if memo is None or found is None:
        return module.request_fields(request), requestinfo.params_digest(request)
    key, held = found
    known = memo.get((module.__name__, key))
    if known is None:
        fields = module.request_fields(request)
        known = memo[(module.__name__, key)] = (
            held,
            fields,
            requestinfo.params_digest(request),
        )
    fields = dict(known[1])
    if type(tools := fields.get("offered_tools")) is list:  # each turn its own list
        fields["offered_tools"] = list(tools)
    return fields, known[2]


def _gemini_api(
    ex: Exchange,
    line: int,
    request: Any,
    res_kind: str,
    response: Any,
    _payloads: list[dict[str, Any]],
    _done: bool,
    _bad: int,
) -> Call:
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


def _ollama_api(ex: Exchange, line: int, request: Any, *rest: Any) -> Call:
    call = _messages_api(ollama, ex, line, request, *rest)
    ollama.adjust(call.fields, request)
    return call


def _bedrock_api(ex: Exchange, line: int, request: Any, *rest: Any) -> Call:
    call = _messages_api(bedrock, ex, line, request, *rest)
    for key, value in bedrock.call_fields(ex.url).items():
        if value is not None and (key != "model" or not call.fields.get("model")):
            call.fields[key] = value
    return call


def _failed(ex: Exchange, output: dict[str, Any] | None) -> bool:
    if ex.transport_error is not None or ex.status == 0:
        return True
    if ex.status is not None and ex.status >= 400:
        return True
    return output is not None and output.get("placeholder") is True


# --- the registry ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """One API's way of spelling a call. An API is recognised from the URL path first, then
    from a whole response body or from the first stream chunks, then from the request body;
    each hook answers only for its own API. Only request hooks overlap (Chat Completions takes
    any body with messages), so the narrower ones are listed first."""

    name: str
    claims_path: Callable[[str], bool]
    claims_body: Callable[[Mapping[str, Any]], bool]
    claims_chunk: Callable[[Mapping[str, Any]], bool]
    claims_request: Callable[[Mapping[str, Any]], bool]
    build: Callable[..., Call]


_ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}


def _anthropic_request(body: Mapping[str, Any]) -> bool:
    if "messages" not in body:
        return False
    if "anthropic_version" in body or "system" in body:
        return True
    return any(
        isinstance(block, dict) and block.get("type") in _ANTHROPIC_BLOCKS
        for message in as_list(body.get("messages"))
        for block in as_list(as_dict(message).get("content"))
    )


def _type_starts(chunk: Mapping[str, Any], *prefixes: str) -> bool:
    kind = chunk.get("type")
    return isinstance(kind, str) and kind.startswith(prefixes)


def _gemini_body(body: Mapping[str, Any]) -> bool:
    return "candidates" in body or "promptFeedback" in body or gemini.is_response(body)


DIALECTS: list[Dialect] = [
    # First: their request hooks are narrower than Chat Completions' "has messages".
    Dialect(
        "ollama",
        ollama.claims_path,
        ollama.is_response,
        ollama.is_response,
        ollama.is_request,
        _ollama_api,
    ),
    Dialect(
        "bedrock-converse",
        bedrock.claims_path,
        bedrock.is_response,
        bedrock.is_chunk,
        bedrock.is_request,
        _bedrock_api,
    ),
    Dialect(
        "native-generate",
        generate_api.claims_path,
        generate_api.is_response,
        generate_api.is_response,
        generate_api.is_request,
        partial(_messages_api, generate_api),
    ),
    Dialect(
        "openai-chat",
        lambda path: path.endswith(("/chat/completions", "/completions")),
        openai_chat.is_response,
        lambda chunk: "choices" in chunk,
        lambda body: "messages" in body and not _anthropic_request(body),
        partial(_messages_api, openai_chat),
    ),
    Dialect(
        "anthropic-messages",
        lambda path: path.endswith("/messages"),
        lambda body: anthropic.is_response(body) or body.get("type") == "error",
        lambda chunk: _type_starts(chunk, "message_", "content_block_"),
        _anthropic_request,
        partial(_messages_api, anthropic),
    ),
    Dialect(
        "openai-responses",
        lambda path: path.endswith("/responses"),
        openai_responses.is_response,
        lambda chunk: _type_starts(chunk, "response."),
        lambda body: "input" in body and "messages" not in body,
        partial(_messages_api, openai_responses),
    ),
    Dialect(
        "gemini",
        lambda path: ":generateContent" in path or ":streamGenerateContent" in path,
        _gemini_body,
        lambda chunk: "candidates" in chunk or "promptFeedback" in chunk,
        lambda body: isinstance(body.get("contents"), list),
        _gemini_api,
    ),
]


def detect(
    path: str,
    by_body: Dialect | None,
    request: Mapping[str, Any] | None,
    chunks: list[dict[str, Any]],
) -> Dialect | None:
    """The dialect of a call: from its URL path, its response (by_body: the first dialect
    whose claims_body takes it), its first stream chunks, its request, in that order."""
    if path and (found := next((d for d in DIALECTS if d.claims_path(path)), None)):
        return found
    if by_body is not None:
        return by_body
    for chunk in chunks[:3]:
        if found := next((d for d in DIALECTS if d.claims_chunk(chunk)), None):
            return found
    if request is not None:
        return next((d for d in DIALECTS if d.claims_request(request)), None)
    return None
