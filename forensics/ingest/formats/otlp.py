"""OpenTelemetry traces of LLM calls: OTLP JSON (the collector's file exporter writes one
ExportTraceServiceRequest per line; exports and fixtures hold one pretty-printed) and the
Python SDK's ConsoleSpanExporter objects.

A span is a model call when its attributes say so: `gen_ai.operation.name` chat /
text_completion / generate_content, `openinference.span.kind` LLM, or message attributes of any
of the three conventions instrumentations write:

- GenAI semantic conventions: `gen_ai.input.messages` / `gen_ai.output.messages` (JSON, messages
  of typed parts: text, reasoning, tool_call, tool_call_response; output messages carry their
  finish_reason), `gen_ai.system_instructions`, `gen_ai.response.finish_reasons`,
  `gen_ai.request.max_tokens`, `gen_ai.usage.*`; the older `gen_ai.prompt` / `gen_ai.completion`
  JSON in span events; and the flattened `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`
  (OpenLLMetry);
- Vercel AI SDK: the inner doGenerate/doStream span's `ai.prompt.messages`, `ai.response.text`,
  `ai.response.toolCalls`, `ai.response.finishReason`, `ai.usage.*`, `ai.settings.maxTokens`;
- Pydantic AI / Logfire: the same events kept in one `events` span attribute;
- OpenInference: `llm.input_messages.N.message.*`, `llm.output_messages.N.message.*` (tool calls
  under `.tool_calls.M.tool_call.function.*`), `llm.token_count.*`, `llm.invocation_parameters`,
  the raw response in `output.value` (where the finish reason is).

OTLP log exports (resourceLogs) carry the event form of conventions 1.28-1.36: one log event per
message (gen_ai.system/user/assistant/tool.message, gen_ai.choice with the finish reason),
linked to its call by trace and span id; each call's events are read as that call.

Calls are grouped into conversations by `gen_ai.conversation.id` (or OpenInference `session.id`),
else by trace, and ordered by start time. Each call adds the input messages not seen before (a
call's input repeats the history) and then its output; the finish reason, usage, cap and model
are the output turn's. A call without captured content still becomes its output turn, so the
finish reason and usage are checked. Other spans (tools, agents, HTTP) are context, counted in
the file's note.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forensics.ingest import jsonrecords
from forensics.ingest.parse import jsonhead, jsonwalk
from forensics.ingest.parse.apicommon import as_int, as_list, count_of, json_text, text_of
from forensics.ingest.records import Collector, Episode, Run, excerpt, isolated
from forensics.ingest.registry import FormatSpec

FORMAT = "otlp_traces"

_LLM_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
_INDEXED = re.compile(
    r"^(llm\.(?:input|output)_messages|gen_ai\.(?:prompt|completion))\.(\d+)\.(.+)$"
)
_ERROR_STATUS = {2, "2", "STATUS_CODE_ERROR", "ERROR", "StatusCode.ERROR"}


def sniff(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    if "resourceSpans" in keys or "resource_spans" in keys:
        return "OTLP JSON trace export (resourceSpans)"
    if ("resourceLogs" in keys or "resource_logs" in keys) and '"gen_ai.' in head:
        return "OTLP JSON log export with GenAI events (resourceLogs)"
    if "context" in keys and "attributes" in keys and '"span_id"' in head and '"trace_id"' in head:
        return "OpenTelemetry ConsoleSpanExporter span objects (context.trace_id/span_id)"
    return None


@dataclass
class Span:
    trace_id: str
    span_id: str
    name: str
    start: int | None
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_error: str | None  # the status message when the span failed
    line: int
    json_path: str
    order: int  # position in the file, for spans without a usable start time


# --- OTLP values ---------------------------------------------------------------------------------


def _any_value(value: Any) -> Any:
    """An OTLP AnyValue ({"stringValue": …}, arrays, key-value lists) as a plain value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("intValue", "int_value"):
        if key in value:
            number = value[key]
            if isinstance(number, str) and re.fullmatch(r"-?\d{1,19}", number):
                return int(number)  # proto3 JSON writes 64-bit integers as strings
            return number
    for key in ("doubleValue", "double_value", "boolValue", "bool_value"):
        if key in value:
            return value[key]
    for key in ("arrayValue", "array_value"):
        if key in value:
            inner = value[key].get("values") if isinstance(value[key], dict) else None
            return [_any_value(v) for v in inner] if isinstance(inner, list) else []
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            inner = value[key].get("values") if isinstance(value[key], dict) else None
            return _attributes(inner)
    for key in ("bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    return None


def _attributes(items: Any) -> dict[str, Any]:
    """OTLP attributes ([{key, value}]) or the console exporter's flat object, as a dict."""
    if isinstance(items, dict):
        return dict(items)
    out: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = _any_value(item.get("value"))
    return out


def _hex_id(value: Any) -> str:
    """Trace and span ids as hex: OTLP/JSON writes hex, protobuf-JSON exporters base64."""
    if not isinstance(value, str):
        return str(value)
    if re.fullmatch(r"[0-9a-fA-F]+", value) or not value:
        return value.lower()
    if value.startswith("0x"):
        return value[2:].lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (ValueError, TypeError):
        return value


def _nanos(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return count_of(value, digits=19)  # nanoseconds since 1970: 19 digits until 2286
    return None


def _status_error(status: Any) -> str | None:
    if not isinstance(status, dict):
        return None
    code = status.get("code", status.get("status_code"))
    if not isinstance(code, int | str) or code not in _ERROR_STATUS:  # a list hashes not
        return None
    message = status.get("message", status.get("description"))
    return str(message) if message else "span status ERROR"


# --- spans of a record ---------------------------------------------------------------------------


def _spans(
    rec: jsonrecords.Record, locate: Callable[[str], int], order: list[int]
) -> Iterator[Span]:
    value = rec.value
    base = rec.json_path or "$"
    if isinstance(value, dict) and ("resourceSpans" in value or "resource_spans" in value):
        resources = value.get("resourceSpans", value.get("resource_spans"))
        for i, rs in enumerate(resources if isinstance(resources, list) else []):
            scopes = rs.get("scopeSpans", rs.get("scope_spans")) if isinstance(rs, dict) else None
            if scopes is None and isinstance(rs, dict):
                scopes = rs.get("instrumentationLibrarySpans")  # OTLP before 0.15
            for j, ss in enumerate(scopes if isinstance(scopes, list) else []):
                spans = ss.get("spans") if isinstance(ss, dict) else None
                for k, span in enumerate(spans if isinstance(spans, list) else []):
                    where = f"{base}.resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                    if isinstance(span, dict):
                        yield _otlp_span(span, rec, where, locate, order)
        return
    if isinstance(value, dict) and isinstance(value.get("context"), dict):
        yield _console_span(value, rec, base, locate, order)


def _otlp_span(
    span: dict[str, Any],
    rec: jsonrecords.Record,
    where: str,
    locate: Callable[[str], int],
    order: list[int],
) -> Span:
    span_id = _hex_id(span.get("spanId", span.get("span_id", "")))
    events = []
    for event in as_list(span.get("events")):
        if isinstance(event, dict):
            events.append((str(event.get("name", "")), _attributes(event.get("attributes"))))
    order[0] += 1
    raw_id = span.get("spanId", span.get("span_id"))
    return Span(
        trace_id=_hex_id(span.get("traceId", span.get("trace_id", ""))),
        span_id=span_id,
        name=str(span.get("name", "")),
        start=_nanos(span.get("startTimeUnixNano", span.get("start_time_unix_nano"))),
        attributes=_attributes(span.get("attributes")),
        events=events,
        status_error=_status_error(span.get("status")),
        line=locate(f'"{raw_id}"') if isinstance(raw_id, str) else rec.line,
        json_path=where,
        order=order[0],
    )


def _console_span(
    span: dict[str, Any],
    rec: jsonrecords.Record,
    where: str,
    locate: Callable[[str], int],
    order: list[int],
) -> Span:
    context = span["context"]
    events = []
    for event in as_list(span.get("events")):
        if isinstance(event, dict):
            events.append((str(event.get("name", "")), _attributes(event.get("attributes"))))
    order[0] += 1
    start = span.get("start_time")
    return Span(
        trace_id=_hex_id(context.get("trace_id", "")),
        span_id=_hex_id(context.get("span_id", "")),
        name=str(span.get("name", "")),
        # ISO timestamps sort as text; only their order matters here.
        start=None if not isinstance(start, str) else int(re.sub(r"\D", "", start)[:20] or 0),
        attributes=_attributes(span.get("attributes")),
        events=events,
        status_error=_status_error(span.get("status")),
        line=rec.line,
        json_path=where,
        order=order[0],
    )


# --- messages of a call --------------------------------------------------------------------------


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return jsonwalk.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return None
    return value


def _semconv_message(msg: Any) -> dict[str, Any] | None:
    """A GenAI semconv message (role + parts), or an OpenAI-shaped one, as a chat message."""
    if not isinstance(msg, dict):
        return None
    role = msg.get("role")
    parts = msg.get("parts")
    if not isinstance(parts, list):
        out = {"role": role, "content": text_of(msg.get("content"))}
        if isinstance(msg.get("tool_calls"), list):
            out["tool_calls"] = msg["tool_calls"]
        if isinstance(msg.get("finish_reason"), str):
            out["finish_reason"] = msg["finish_reason"]
        return out
    texts, thoughts, calls, results = [], [], [], []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "reasoning" and isinstance(part.get("content"), str):
            thoughts.append(part["content"])
        elif kind == "tool_call":
            calls.append(
                {"id": part.get("id"), "name": part.get("name"), "arguments": part.get("arguments")}
            )
        elif kind == "tool_call_response":
            response = part.get("response", part.get("result"))
            results.append(response if isinstance(response, str) else json_text(response) or "")
    out = {"role": role, "content": "\n".join(texts + results)}
    if thoughts:
        out["reasoning_content"] = "\n".join(thoughts)
    if calls:
        out["tool_calls"] = calls
    if isinstance(msg.get("finish_reason"), str):
        out["finish_reason"] = msg["finish_reason"]
    return out


def _indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened messages (`prefix.N.rest` keys) as a list of {rest: value} by N."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        m = _INDEXED.match(key)
        # An index of thousands of digits is no message's: count_of leaves it out.
        if m and m.group(1) == prefix and (index := count_of(m.group(2))) is not None:
            found.setdefault(index, {})[m.group(3)] = value
    return [found[i] for i in sorted(found)]


def _flat_message(fields: dict[str, Any]) -> dict[str, Any]:
    """An OpenInference (`message.role`, …) or OpenLLMetry (`role`, …) flattened message."""
    f = {k.removeprefix("message."): v for k, v in fields.items()}
    content = f.get("content")
    if content is None:
        parts = sorted(
            (k, v)
            for k, v in f.items()
            if k.startswith("contents.") and k.endswith("message_content.text")
        )
        content = "\n".join(str(v) for _, v in parts) if parts else None
    calls: dict[int, dict[str, Any]] = {}
    for key, value in f.items():
        m = re.match(r"tool_calls\.(\d+)\.(?:tool_call\.)?(.+)$", key)
        if m:
            slot = m.group(2).removeprefix("function.")
            if (index := count_of(m.group(1))) is not None:
                calls.setdefault(index, {})[slot] = value
    out: dict[str, Any] = {
        "role": f.get("role"),
        "content": content if content is None else str(content),
    }
    if calls:
        out["tool_calls"] = [
            {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
            for _, c in sorted(calls.items())
        ]
    if isinstance(f.get("finish_reason"), str):
        out["finish_reason"] = f["finish_reason"]
    return out


def _messages(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(input messages, output messages) of a call, from whichever convention it uses."""
    a = span.attributes
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    system = _json(a.get("gen_ai.system_instructions"))
    if isinstance(system, list) and system:
        texts = [
            p["content"]
            for p in system
            if isinstance(p, dict) and isinstance(p.get("content"), str)
        ]
        inputs.append({"role": "system", "content": "\n".join(texts)})
    for value in _listed(a.get("gen_ai.input.messages")):
        if (msg := _semconv_message(value)) is not None:
            inputs.append(msg)
    for value in _listed(a.get("gen_ai.output.messages")):
        if (msg := _semconv_message(value)) is not None:
            outputs.append(msg)
    if not inputs and not outputs:
        for name, attrs in span.events:  # the older content events
            if name == "gen_ai.content.prompt":
                inputs += _event_messages(attrs.get("gen_ai.prompt"), "user")
            elif name == "gen_ai.content.completion":
                outputs += _event_messages(attrs.get("gen_ai.completion"), "assistant")
    if not inputs and not outputs and "ai.prompt.messages" in a:
        inputs, outputs = _vercel_messages(span)
    if not inputs and not outputs and "events" in a:
        inputs, outputs = _attribute_events(a.get("events"))
    if not inputs and not outputs:
        for prefix_in, prefix_out in (
            ("llm.input_messages", "llm.output_messages"),
            ("gen_ai.prompt", "gen_ai.completion"),
        ):
            inputs = [_flat_message(m) for m in _indexed(a, prefix_in)]
            outputs = [_flat_message(m) for m in _indexed(a, prefix_out)]
            if inputs or outputs:
                break
    return inputs, outputs


def _attribute_events(value: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Log events kept as one span attribute (Pydantic AI / Logfire `events`: a JSON list)."""
    inputs, outputs = [], []
    for event in _listed(value):
        if not isinstance(event, dict):
            continue
        name = event.get("event.name")
        name = name if isinstance(name, str) else None
        body = {k: v for k, v in event.items() if k != "event.name"}
        if name == "gen_ai.choice":
            message = got if isinstance(got := body.get("message"), dict) else {}
            output = {"role": message.get("role") or "assistant", **message}
            if isinstance(body.get("finish_reason"), str):
                output["finish_reason"] = body["finish_reason"]
            outputs.append(output)
        elif name in _EVENT_ROLES:
            inputs.append({**body, "role": body.get("role") or _EVENT_ROLES[name]})
    return inputs, outputs


def _event_messages(value: Any, role: str) -> list[dict[str, Any]]:
    """Messages of an old content event: JSON messages, or (OpenLIT) the plain text itself."""
    listed = [m for v in _listed(value) if (m := _semconv_message(v))]
    if not listed and isinstance(value, str) and value.strip() and _json(value) is None:
        return [{"role": role, "content": value}]
    return listed


def _listed(value: Any) -> list[Any]:
    value = _json(value)
    if isinstance(value, dict):
        return [value]
    # Some SDKs write a string array attribute, one JSON message per element.
    return [_json(v) if isinstance(v, str) else v for v in value] if isinstance(value, list) else []


def _vercel_messages(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Vercel AI SDK's doGenerate/doStream span: ai.prompt.messages and ai.response.*."""
    a = span.attributes
    inputs = []
    for msg in _listed(a.get("ai.prompt.messages")):
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        out: dict[str, Any] = {"role": msg.get("role"), "content": text_of(content)}
        parts = content if isinstance(content, list) else []
        calls = [
            {
                "id": p.get("toolCallId"),
                "name": p.get("toolName"),
                "arguments": p.get("args", p.get("input")),
            }
            for p in parts
            if isinstance(p, dict) and p.get("type") == "tool-call"
        ]
        results = [
            json_text(p.get("result", p.get("output"))) or ""
            for p in parts
            if isinstance(p, dict) and p.get("type") == "tool-result"
        ]
        if calls:
            out["tool_calls"] = calls
        if results:
            out["content"] = "\n".join(results)
        inputs.append(out)
    calls = [
        {
            "id": c.get("toolCallId"),
            "name": c.get("toolName"),
            "arguments": c.get("args", c.get("input")),
        }
        for c in _listed(a.get("ai.response.toolCalls"))
        if isinstance(c, dict)
    ]
    text = a.get("ai.response.text")
    output: dict[str, Any] = {
        "role": "assistant",
        "content": text if isinstance(text, str) else None,
    }
    if calls:
        output["tool_calls"] = calls
    reason = a.get("ai.response.finishReason")
    if isinstance(reason, str):
        # The SDK spells OpenAI's values with hyphens (tool-calls, content-filter).
        output["finish_reason"] = reason.replace("-", "_")
    return inputs, [output]


def is_llm_call(span: Span) -> bool:
    a = span.attributes
    operation = a.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation in _LLM_OPERATIONS:
        return True
    if a.get("openinference.span.kind") == "LLM":
        return True
    if "gen_ai.input.messages" in a or "gen_ai.output.messages" in a:
        return True
    if "ai.prompt.messages" in a:  # Vercel AI SDK: only the inner doGenerate/doStream call
        return True
    if any(
        name in ("gen_ai.content.prompt", "gen_ai.content.completion") for name, _ in span.events
    ):
        return True
    return any(_INDEXED.match(k) for k in a)


# --- the output turn's columns -------------------------------------------------------------------


def _first_int(a: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = as_int(a.get(key))
        if value is not None:
            return value
    return None


def _response_finish(a: dict[str, Any]) -> str | None:
    """The finish reason of the raw response OpenInference keeps in output.value."""
    body = _json(a.get("output.value"))
    if not isinstance(body, dict):
        return None
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        reason = choices[0].get("finish_reason")
        return reason if isinstance(reason, str) else None
    reason = body.get("stop_reason")
    return reason if isinstance(reason, str) else None


def _call_fields(span: Span, output: dict[str, Any] | None) -> dict[str, Any]:
    a = span.attributes
    reasons = a.get("gen_ai.response.finish_reasons")
    reason = (output or {}).get("finish_reason")
    if reason is None and isinstance(reasons, list) and reasons and isinstance(reasons[0], str):
        reason = reasons[0]
    if reason is None and isinstance(reasons, str):
        reason = reasons
    if reason is None:
        reason = _response_finish(a)
    params = _json(a.get("llm.invocation_parameters"))
    params = params if isinstance(params, dict) else {}
    cap = _first_int(
        a,
        "gen_ai.request.max_tokens",
        "llm.request.max_tokens",
        "ai.settings.maxOutputTokens",
        "ai.settings.maxTokens",
    )
    if cap is None:
        cap = as_int(params.get("max_completion_tokens", params.get("max_tokens")))
    model = (
        a.get("gen_ai.response.model")
        or a.get("gen_ai.request.model")
        or a.get("llm.model_name")
        or a.get("ai.model.id")
    )
    tools = (
        a.get("gen_ai.tool.definitions")
        or a.get("ai.prompt.tools")
        or any(k.startswith(("llm.tools.", "llm.request.functions.")) for k in a)
    )
    error = span.status_error
    if error is None and isinstance(a.get("error.type"), str):
        error = a["error.type"]
    fields: dict[str, Any] = {
        "finish_reason_raw": reason,
        "input_tokens": _first_int(
            a,
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
            "ai.usage.inputTokens",
            "ai.usage.promptTokens",
        ),
        "output_tokens": _first_int(
            a,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
            "ai.usage.outputTokens",
            "ai.usage.completionTokens",
        ),
        "reasoning_tokens": _first_int(
            a, "gen_ai.usage.reasoning_tokens", "llm.token_count.completion_details.reasoning"
        ),
        "max_output_tokens": cap,
        "model": model if isinstance(model, str) else None,
        "endpoint": a.get("server.address") if isinstance(a.get("server.address"), str) else None,
        "tools_attached": True if tools else None,
        "http_status": as_int(a.get("http.response.status_code")),
        "error": error,
    }
    return fields


# --- GenAI events in OTLP logs ------------------------------------------------------------------

# Semantic conventions 1.28-1.36 put message content in log events, one per message, linked to
# the call's span by trace and span id; gen_ai.choice carries the output and its finish reason.
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


@dataclass
class _Event:
    name: str
    body: dict[str, Any]
    time: int | None
    order: int
    line: int
    json_path: str
    attributes: dict[str, Any]


def _log_events(
    rec: jsonrecords.Record, locate: Callable[[str], int], order: list[int]
) -> Iterator[tuple[str, str, _Event | None]]:
    """(trace id, span id, event) of each log record; event None for records of other kinds."""
    value = rec.value
    base = rec.json_path or "$"
    resources = value.get("resourceLogs", value.get("resource_logs"))
    for i, rl in enumerate(resources if isinstance(resources, list) else []):
        scopes = rl.get("scopeLogs", rl.get("scope_logs")) if isinstance(rl, dict) else None
        for j, sl in enumerate(scopes if isinstance(scopes, list) else []):
            records = sl.get("logRecords", sl.get("log_records")) if isinstance(sl, dict) else None
            for k, lr in enumerate(records if isinstance(records, list) else []):
                if not isinstance(lr, dict):
                    continue
                attrs = _attributes(lr.get("attributes"))
                name = lr.get("eventName", lr.get("event_name")) or attrs.get("event.name")
                name = name if isinstance(name, str) else None  # a list is no event name
                trace = _hex_id(lr.get("traceId", lr.get("trace_id", "")))
                span = _hex_id(lr.get("spanId", lr.get("span_id", "")))
                if name not in _EVENT_ROLES and name != "gen_ai.choice":
                    yield trace, span, None
                    continue
                body = _any_value(lr.get("body"))
                body = _json(body) if isinstance(body, str) else body
                order[0] += 1
                raw_span = lr.get("spanId", lr.get("span_id"))
                yield (
                    trace,
                    span,
                    _Event(
                        name=str(name),
                        body=body if isinstance(body, dict) else {"content": body},
                        time=_nanos(lr.get("timeUnixNano", lr.get("observedTimeUnixNano"))),
                        order=order[0],
                        line=locate(f'"{raw_span}"') if isinstance(raw_span, str) else rec.line,
                        json_path=f"{base}.resourceLogs[{i}].scopeLogs[{j}].logRecords[{k}]",
                        attributes=attrs,
                    ),
                )


def _call_of_events(trace: str, span_id: str, events: list[_Event]) -> Span:
    """The call the events of one span describe, as a span with the newer message attributes."""
    events = sorted(events, key=lambda e: (e.time is None, e.time or 0, e.order))
    inputs, outputs = [], []
    for e in events:
        if e.name == "gen_ai.choice":
            message = got if isinstance(got := e.body.get("message"), dict) else {}
            output = {"role": message.get("role") or "assistant", **message}
            if isinstance(e.body.get("finish_reason"), str):
                output["finish_reason"] = e.body["finish_reason"]
            outputs.append(output)
        else:
            inputs.append({"role": e.body.get("role") or _EVENT_ROLES[e.name], **e.body})
    first = events[0]
    attributes = {k: v for e in events for k, v in e.attributes.items() if k != "event.name"}
    attributes |= {"gen_ai.input.messages": inputs, "gen_ai.output.messages": outputs}
    return Span(
        trace_id=trace,
        span_id=span_id,
        name="gen_ai events",
        start=first.time,
        attributes=attributes,
        events=[],
        status_error=None,
        line=first.line,
        json_path=first.json_path,
        order=first.order,
    )


# --- conversations -------------------------------------------------------------------------------


@dataclass
class _Conversation:
    key: str
    calls: list[Span] = field(default_factory=list)


def _conversation_key(span: Span) -> str:
    a = span.attributes
    for key in ("gen_ai.conversation.id", "session.id"):
        if isinstance(a.get(key), str | int) and a.get(key) != "":
            return str(a[key])
    return span.trace_id or "unknown-trace"


def _episode(run: Run, path: Path, conv: _Conversation) -> Episode:
    calls = sorted(conv.calls, key=lambda s: (s.start is None, s.start or 0, s.order))
    first = calls[0]
    ep = Episode(
        run=run,
        source_path=str(path),
        source_line=first.line,
        source_format=FORMAT,
        task_id=conv.key,
        json_path=first.json_path,
    )
    seen = 0
    for span in calls:
        inputs, outputs = _messages(span)
        new = inputs[seen:] if len(inputs) > seen else inputs
        for msg in new:
            role = msg.get("role")
            # A history's assistant turns were outputs of calls this trace may not hold.
            fields = {"model": None, "tools_attached": None} if role == "assistant" else {}
            ep.json_paths[len(ep.messages)] = span.json_path
            ep.add(span.line, msg, **fields)
        seen = len(inputs) + max(len(outputs), 1)
        for output in outputs or [{"role": "assistant", "content": None}]:
            output.setdefault("role", "assistant")
            ep.json_paths[len(ep.messages)] = span.json_path
            ep.add(span.line, output, **_call_fields(span, output))
    return ep


def _on_line(line: int) -> Callable[[str], int]:
    """The locate of a record that is one line (JSONL): every text is on it."""
    return lambda _needle: line


def ingest(path: Path, collector: Collector) -> int:
    name = str(path)
    run = Run(run_id=path.stem)
    conversations: dict[str, _Conversation] = {}
    other = 0
    order = [0]
    events: dict[tuple[str, str], list[_Event]] = {}
    for rec in jsonrecords.read(path, collector, FORMAT):
        with isolated(collector, name, rec.line, FORMAT, rec.json_path):
            locate = rec.locate or _on_line(rec.line)
            if isinstance(rec.value, dict) and (
                "resourceLogs" in rec.value or "resource_logs" in rec.value
            ):
                for trace, span_id, event in _log_events(rec, locate, order):
                    if event is None:
                        other += 1
                    else:
                        events.setdefault((trace, span_id), []).append(event)
                continue
            spans = list(_spans(rec, locate, order))
            if not spans:
                reason = "record is neither an OTLP export (resourceSpans) nor a span object"
                collector.reject(
                    name,
                    rec.line,
                    reason,
                    excerpt(json_text(rec.value) or "null"),
                    FORMAT,
                    rec.json_path,
                )
                continue
            for span in spans:
                if not is_llm_call(span):
                    other += 1
                    continue
                key = _conversation_key(span)
                conversations.setdefault(key, _Conversation(key)).calls.append(span)
    for (trace, span_id), group in events.items():
        call = _call_of_events(trace, span_id, group)
        key = _conversation_key(call)
        conversations.setdefault(key, _Conversation(key)).calls.append(call)
    for conv in conversations.values():
        with isolated(collector, name, conv.calls[0].line, FORMAT, conv.calls[0].json_path):
            collector.add_episode(_episode(run, path, conv))
    if other:
        collector.note(
            name,
            f"{other} span(s) or log record(s) that are not model calls (tools, agents, HTTP) "
            "read as context",
        )
    return len(conversations)


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="OpenTelemetry traces of LLM calls (GenAI semconv, OpenInference, OpenLLMetry)",
        detection="OTLP JSON with resourceSpans (one export per line or one document), or "
        "ConsoleSpanExporter objects with context.trace_id/span_id",
        sniff=sniff,
        ingest=ingest,
        priority=820,
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "finish_reason", "finish_reason_raw"}
            | {"input_tokens", "output_tokens", "reasoning_tokens", "max_output_tokens"}
            | {"tools_attached", "model", "endpoint", "http_status", "error"}
        ),
        benchmark=False,
        artifact="traces",
        rerun=None,
        seeds={
            "otlp_jsonl": "tests/data/traces/otlp/file_exporter_genai.jsonl",
            "otlp_document": "tests/data/traces/otlp/mixed_conventions.json",
            "otlp_logs": "tests/data/traces/otlp/file_exporter_genai_events.jsonl",
        },
    ),
)
