"""Gemini generateContent responses: REST bodies (camelCase) and google-genai SDK dumps.

Public functions, for any ingester that finds Gemini bodies (capture containers call these):

    is_response(obj: Any) -> bool
        A dict that is a GenerateContentResponse (or one streamed chunk of it), either casing.
    parse_sse(text: str) -> list[dict]
        The chunks of an `alt=sse` body (`data: {...}` events); bad events are skipped — use
        `iter_sse_events` to see them.
    merge_chunks(chunks: Sequence[Mapping]) -> dict
        One response from streamed chunks (text deltas joined, last finish reason and usage).
    turn_from_response(
        body: Mapping | Sequence[Mapping],  # one response, or the chunks of a streamed one
        request: Mapping | None = None,     # the generateContent request body, when captured
        url: str | None = None,             # request URL: model name and endpoint
        streamed: bool | None = None,       # True: a stream (a missing finishReason = cut off)
    ) -> tuple[dict, dict]
        (message, fields) ready for `Episode.add(line, message, **fields)`: message is an
        assistant message dict (content, reasoning, tool_calls); fields are turn columns
        (finish_reason_raw, input/output/reasoning tokens, model, request caps, error, ...).
    request_messages(request: Mapping) -> list[dict]
        The conversation a request sends (systemInstruction and contents) as role/content
        message dicts (model -> assistant, functionResponse parts -> tool messages), e.g. for
        linking calls into trajectories.
    request_fields(request: Mapping | None, url: str | None = None) -> dict
        Turn columns the request decides: max_output_tokens, tools_attached, tool_choice,
        reasoning_budget, reasoning_effort, model, endpoint.

Mapping decisions (documented in the README):
- parts with `thought: true` go to reasoning, other text parts to content (joined without a
  separator, as the SDK's `.text` does); `functionCall` parts become tool calls with their
  `args` as JSON text; only the first candidate becomes the turn.
- finish reason: `finishReason` exactly as sent in finish_reason_raw, normalised by
  `records.normalise_finish_reason`; a prompt blocked before any candidate
  (`promptFeedback.blockReason`, no candidates) has the block reason as its raw finish reason and
  the block in `error`; `finishMessage` goes to `error`.
- usage: input_tokens = promptTokenCount; output_tokens = candidatesTokenCount +
  thoughtsTokenCount (Gemini bills thoughts as output and counts them against maxOutputTokens,
  while candidatesTokenCount excludes them); reasoning_tokens = thoughtsTokenCount. A missing
  count is 0 when the other is present, NULL when both are missing.
- a stream whose last chunk carries no finishReason was cut off: finish reason NULL (never
  guessed), and `error` says so.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from forensics.ingest.parse import files, jsonwalk
from forensics.ingest.parse.apicommon import as_list
from forensics.ingest.records import (
    NESTED_TOO_DEEPLY,
    Collector,
    Episode,
    Run,
    excerpt,
    isolated,
    unreadable,
)
from forensics.wording import json_error

FORMAT = "gemini"

# Keys only a GenerateContentResponse has at its top level, in both casings.
_BODY_KEYS = frozenset({"candidates", "promptFeedback", "prompt_feedback"})
_META_KEYS = frozenset(
    {
        "usageMetadata",
        "usage_metadata",
        "modelVersion",
        "model_version",
        "responseId",
        "response_id",
        "createTime",
        "create_time",
    }
)
_MODEL_IN_URL = re.compile(r"/models/([^/:?]+)")


@functools.cache
def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()


def _get(obj: Any, camel: str, default: Any = None) -> Any:
    """obj[camel] or its snake_case twin: the REST API and the SDK dumps differ only in casing."""
    if not isinstance(obj, Mapping):
        return default
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel), default)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# Other top-level keys of a response (REST, SDK dumps): with only these, a body without usage or
# metadata (a blocked prompt's lone promptFeedback, older candidates-only answers) is still one.
_OTHER_KEYS = frozenset(
    {
        "automaticFunctionCallingHistory",
        "automatic_function_calling_history",
        "sdkHttpResponse",
        "sdk_http_response",
        "parsed",
    }
)


def _looks_like_keys(keys: Iterable[str]) -> bool:
    found = set(keys)
    if not found & _BODY_KEYS:
        return False
    return bool(found & _META_KEYS) or found <= _BODY_KEYS | _OTHER_KEYS


def is_response(obj: Any) -> bool:
    return isinstance(obj, Mapping) and _looks_like_keys(obj.keys())


def sniff(head: str) -> str | None:
    """Why the head is a Gemini response file (single, JSONL, JSON-array stream, SSE), or None."""
    text = head.lstrip("\ufeff \t\r\n")
    if text.startswith("data:"):
        if _looks_like_keys(jsonwalk.top_level_keys(text)):
            return "SSE stream (alt=sse) of Gemini GenerateContentResponse chunks"
        return None
    if text.startswith("["):
        if _looks_like_keys(jsonwalk.top_level_keys(text, 1)):
            return "JSON array of Gemini GenerateContentResponse chunks (streamGenerateContent)"
        return None
    keys = jsonwalk.top_level_keys(text) if text.startswith("{") else []
    if _looks_like_keys(keys):
        snake = "usage_metadata" in keys or "model_version" in keys
        kind = "google-genai SDK dump (snake_case)" if snake else "REST body (camelCase)"
        return f"Gemini GenerateContentResponse, {kind}"
    return None


# --- responses -> turns ---------------------------------------------------------------------


def iter_sse_events(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line of the event, its data payload) for each `data:` event of an SSE text."""
    return _sse_events(enumerate(text.splitlines(), 1))


def _sse_events(lines: Iterable[tuple[int, str | None]]) -> Iterator[tuple[int, str]]:
    data: list[str] = []
    first = 0
    for lineno, line in lines:
        if line is None or not line.strip():  # a blank line ends the event
            if data:
                yield first, "\n".join(data)
                data = []
            continue
        if line.startswith("data:"):
            if not data:
                first = lineno
            data.append(line[5:].removeprefix(" "))
    if data:
        yield first, "\n".join(data)


def parse_sse(text: str) -> list[dict[str, Any]]:
    chunks = []
    for _line, payload in iter_sse_events(text):
        try:
            obj = jsonwalk.loads(payload)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            chunks.append(obj)
    return chunks


def merge_chunks(chunks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One REST-shaped response from streamed chunks.

    Text parts are deltas (concatenated, thought and answer text apart), function calls arrive
    whole, the finish reason only on the last chunk, usage is cumulative (the last one wins),
    promptFeedback only on the first.
    """
    text: list[str] = []
    thought: list[str] = []
    calls: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    candidate: dict[str, Any] = {}
    for chunk in chunks:
        for camel in ("modelVersion", "responseId", "usageMetadata", "promptFeedback", "error"):
            value = _get(chunk, camel)
            if value is not None and not (camel == "promptFeedback" and "promptFeedback" in merged):
                merged[camel] = value
        cands = _get(chunk, "candidates")
        if not isinstance(cands, list) or not cands or not isinstance(cands[0], Mapping):
            continue
        first = cands[0]
        for camel in ("finishReason", "finishMessage", "safetyRatings"):
            value = _get(first, camel)
            if value is not None:
                candidate[camel] = value
        for part in as_list(_get(_get(first, "content"), "parts")):
            if not isinstance(part, Mapping):
                continue
            call = _get(part, "functionCall")
            if isinstance(call, Mapping):
                calls.append({"functionCall": dict(call)})
            elif isinstance(part.get("text"), str):
                (thought if part.get("thought") else text).append(part["text"])
    parts: list[dict[str, Any]] = []
    if thought:
        parts.append({"text": "".join(thought), "thought": True})
    if text:
        parts.append({"text": "".join(text)})
    parts.extend(calls)
    if parts or candidate:
        merged["candidates"] = [{"content": {"role": "model", "parts": parts}, **candidate}]
    return merged


def _model_name(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value.removeprefix("models/")


def request_fields(request: Mapping[str, Any] | None, url: str | None = None) -> dict[str, Any]:
    """Turn columns decided by the request: caps, tools, thinking, model and endpoint."""
    out: dict[str, Any] = {}
    if url:
        parts = urlsplit(url)
        if parts.scheme and parts.netloc:
            out["endpoint"] = f"{parts.scheme}://{parts.netloc}"
        if m := _MODEL_IN_URL.search(parts.path):
            out["model"] = m.group(1)
    if not isinstance(request, Mapping):
        return out
    config = _get(request, "generationConfig") or {}
    out["max_output_tokens"] = _int(_get(config, "maxOutputTokens"))
    thinking = _get(config, "thinkingConfig")
    if isinstance(thinking, Mapping):
        out["reasoning_budget"] = _int(_get(thinking, "thinkingBudget"))
        level = _get(thinking, "thinkingLevel")
        out["reasoning_effort"] = str(level) if level is not None else None
    declared = 0
    names = set()
    for tool in as_list(_get(request, "tools")):
        declarations = _get(tool, "functionDeclarations")
        if isinstance(declarations, list):
            declared += len(declarations)
            names |= {n for d in declarations if isinstance(n := _get(d, "name"), str) and n}
    out["offered_tools"] = sorted(names)
    mode = _get(_get(_get(request, "toolConfig"), "functionCallingConfig"), "mode")
    out["tool_choice"] = str(mode) if mode is not None else None
    out["tools_attached"] = declared > 0 and str(mode or "").upper() != "NONE"
    return out


def _usage(usage: Any) -> dict[str, Any]:
    prompt = _int(_get(usage, "promptTokenCount"))
    candidates = _int(_get(usage, "candidatesTokenCount"))
    thoughts = _int(_get(usage, "thoughtsTokenCount"))
    output = (
        None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    )
    return {"input_tokens": prompt, "output_tokens": output, "reasoning_tokens": thoughts}


def _arguments(args: Any) -> str | None:
    if args is None:
        return None
    return json.dumps(args, ensure_ascii=False, sort_keys=True)


def _content_message(content: Any) -> dict[str, Any]:
    """A Gemini Content (role + parts) as a role/content/reasoning/tool_calls message dict."""
    text: list[str] = []
    thought: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in as_list(_get(content, "parts")):
        if not isinstance(part, Mapping):
            continue
        call = _get(part, "functionCall")
        if isinstance(call, Mapping):
            calls.append(
                {
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "arguments": _arguments(call.get("args")),
                }
            )
        elif isinstance(part.get("text"), str):
            (thought if part.get("thought") else text).append(part["text"])
    return {
        "role": "assistant",
        "content": "".join(text) if text else None,
        "reasoning": "".join(thought) if thought else None,
        "tool_calls": calls or None,
    }


def turn_from_response(
    body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    request: Mapping[str, Any] | None = None,
    url: str | None = None,
    streamed: bool | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(message, turn fields) of one response; a list of chunks is merged first."""
    if not isinstance(body, Mapping):
        chunks = list(body)
        streamed = True if streamed is None else streamed
        response = merge_chunks(chunks)
    else:
        response = dict(body)
    fields = request_fields(request, url)
    candidates = _get(response, "candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates else None
    message = _content_message(_get(first, "content"))
    fields.update(_usage(_get(response, "usageMetadata")))
    if model := _model_name(_get(response, "modelVersion")):
        fields["model"] = model
    errors: list[str] = []
    raw = _get(first, "finishReason")
    if first is None:
        feedback = _get(response, "promptFeedback")
        block = _get(feedback, "blockReason")
        if block is not None:
            raw = block
            why = _get(feedback, "blockReasonMessage")
            errors.append(
                f"prompt blocked (promptFeedback.blockReason {block})" + (f": {why}" if why else "")
            )
        elif not isinstance(_get(response, "error"), Mapping):
            errors.append("response without candidates: no answer and no block reason")
    if isinstance(_get(first, "finishMessage"), str):
        errors.append(_get(first, "finishMessage"))
    error = _get(response, "error")
    if isinstance(error, Mapping):
        code = _int(error.get("code"))
        if code is not None:
            fields["http_status"] = code
        errors.append(" ".join(str(error[k]) for k in ("status", "message") if error.get(k)))
    elif raw is None and streamed:
        errors.append("stream ended without a finishReason: the response was cut off")
    fields["finish_reason_raw"] = str(raw) if raw is not None else None
    fields["error"] = "; ".join(e for e in errors if e) or None
    if streamed:
        # Gemini streams have no end marker: the finish reason on the last chunk is the end.
        fields["stream"] = True
        fields["stream_completed"] = raw is not None
    return message, fields


def request_messages(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The conversation a request carries, as role/content message dicts."""
    out: list[dict[str, Any]] = []
    system = _get(request, "systemInstruction")
    if system is not None:
        texts: list[str] = [
            p["text"]
            for p in as_list(_get(system, "parts"))
            if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        ]
        out.append({"role": "system", "content": "\n".join(texts)})
    for content in as_list(_get(request, "contents")):
        if not isinstance(content, Mapping):
            continue
        if content.get("role") == "model":
            out.append(_content_message(content))
            continue
        texts = []
        for part in as_list(_get(content, "parts")):
            if not isinstance(part, Mapping):
                continue
            response = _get(part, "functionResponse")
            if isinstance(response, Mapping):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": response.get("id"),
                        "name": response.get("name"),
                        "content": _arguments(response.get("response")),
                    }
                )
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
        if texts:
            out.append({"role": "user", "content": "".join(texts)})
    return out


# --- files ----------------------------------------------------------------------------------


def _response_id(obj: Mapping[str, Any]) -> str | None:
    value = _get(obj, "responseId")
    return value if isinstance(value, str) and value else None


def _values(path: Path, collector: Collector) -> Iterator[tuple[int, Any, bool]]:
    """(line, JSON value, from a stream) for each value of the file; bad ones are rejected."""
    first = next(((n, t) for n, t in files.iter_lines(path) if t is None or t.strip()), (0, ""))
    first_text = (first[1] or "").lstrip("\ufeff \t")
    if first_text.startswith("data:"):
        for line, payload in _sse_events(files.iter_lines(path)):
            try:
                yield line, jsonwalk.loads(payload), True
            except json.JSONDecodeError as exc:
                reason = f"SSE event is not JSON: {json_error(exc.msg)}"
                collector.reject(str(path), line, reason, payload, FORMAT)
        return
    if not jsonwalk.is_jsonl(files.iter_lines(path), (dict, list)):
        if first_text.startswith("["):
            yield from _array_values(path, collector)
        else:  # pretty-printed documents one after another
            yield from _document_values(path, collector)
        return
    for line, text in files.iter_lines(path):
        if text is None:
            collector.reject(str(path), line, files.long_line(), "", FORMAT)
        elif text.strip():
            try:
                yield line, jsonwalk.loads(text), False
            except json.JSONDecodeError as exc:
                collector.reject(
                    str(path), line, f"invalid JSON: {json_error(exc.msg)}", text, FORMAT
                )
            except RecursionError:
                collector.reject(str(path), line, NESTED_TOO_DEEPLY, text, FORMAT)


def _array_values(path: Path, collector: Collector) -> Iterator[tuple[int, Any, bool]]:
    text = files.read_text(path)
    line_of = jsonwalk.LineCounter(text)
    start = jsonwalk.skip_ws(text.lstrip("\ufeff"), 0) + (1 if text.startswith("\ufeff") else 0)
    kept = 0
    try:
        for offset, value, end in jsonwalk.arrays(text, start):
            if not unreadable(
                collector, str(path), line_of(offset), value, FORMAT, None, text, offset
            ):
                yield line_of(offset), value, True
            kept += 1
            start = end
    except jsonwalk.WalkError as exc:
        where = jsonwalk.skip_ws(text, start)
        if where < len(text) and text[where] == ",":
            where = jsonwalk.skip_ws(text, where + 1)
        where = min(where, exc.pos)
        reason = (
            f"truncated stream: the array ends inside element {kept + 1}; {kept} chunks kept"
            if exc.msg != jsonwalk.TRAILING and not text.rstrip().endswith("]")
            else f"invalid JSON at line {line_of(exc.pos)}: {json_error(exc.msg)}; the rest was "
            "not read"
        )
        collector.reject(str(path), line_of(where), reason, excerpt(text, where), FORMAT)


def _document_values(path: Path, collector: Collector) -> Iterator[tuple[int, Any, bool]]:
    """Pretty-printed values one after another; after a broken one, resume at the next line
    that starts a top-level object."""
    text = files.read_text(path)
    line_of = jsonwalk.LineCounter(text)
    pos = jsonwalk.skip_ws(text, 1 if text.startswith("\ufeff") else 0)
    while pos < len(text):
        try:
            value, end = jsonwalk.walked(text, pos)
        except jsonwalk.WalkError as exc:
            collector.reject(
                str(path),
                line_of(pos),
                f"invalid JSON at line {line_of(exc.pos)}: {json_error(exc.msg)}",
                excerpt(text, pos),
                FORMAT,
            )
            nxt = text.find("\n{", pos)
            if nxt < 0:
                return
            pos = nxt + 1
            continue
        if not unreadable(collector, str(path), line_of(pos), value, FORMAT, None, text, pos):
            yield line_of(pos), value, False
        pos = jsonwalk.skip_ws(text, end)


def _responses(
    path: Path, collector: Collector
) -> Iterator[tuple[int, list[Mapping[str, Any]], bool]]:
    """(line, chunks, streamed) per response: consecutive chunks sharing a responseId are one
    streamed response; within an SSE or array stream, chunks without an id join the current."""
    group: list[Mapping[str, Any]] = []
    group_line = 0
    group_stream = False
    for line, value, stream in _values(path, collector):
        if isinstance(value, list):  # an SDK dump of a streamed response: its chunk list
            chunks = [c for c in value if is_response(c) or isinstance(_get(c, "error"), Mapping)]
            if not chunks:
                collector.reject(
                    str(path),
                    line,
                    "array without Gemini response chunks",
                    excerpt(json.dumps(value)),
                    FORMAT,
                )
                continue
            if group:
                yield group_line, group, group_stream
                group = []
            yield line, chunks, True
            continue
        if not (is_response(value) or (stream and isinstance(_get(value, "error"), Mapping))):
            collector.reject(
                str(path),
                line,
                "not a Gemini GenerateContentResponse (no candidates/promptFeedback with usage "
                "or model metadata)",
                excerpt(json.dumps(value, ensure_ascii=False)),
                FORMAT,
            )
            continue
        rid = _response_id(value)
        same = bool(group) and (
            (rid is not None and rid == _response_id(group[-1]))
            or (stream and (rid is None or _response_id(group[-1]) is None))
        )
        if same:
            group.append(value)
            group_stream = True
            continue
        if group:
            yield group_line, group, group_stream
        group, group_line, group_stream = [value], line, stream
    if group:
        yield group_line, group, group_stream


def ingest(path: Path, collector: Collector) -> int:
    """Each response (a body, an SDK dump, or the merged chunks of a stream) is one trajectory
    of one assistant turn: without the request, calls can not be linked into conversations."""
    run = Run(run_id=path.stem)
    records = 0
    for line, chunks, streamed in _responses(path, collector):
        with isolated(collector, str(path), line, FORMAT):
            body: Any = chunks if streamed else chunks[0]
            message, fields = turn_from_response(body, streamed=streamed)
            episode = Episode(
                run=run, source_path=str(path), source_line=line, source_format=FORMAT
            )
            episode.add(line, message, **fields)
            collector.add_episode(episode)
            records += 1
    return records
