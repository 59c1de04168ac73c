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

Conventions 1.37+ may record a call's content as one `gen_ai.client.inference.operation.details`
event instead (its attributes: the call's, and the messages as structured values), a log record
or an event of the inference span: either is read as the call.

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
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forensics.ingest import jsonrecords
from forensics.ingest.formats._spans import (
    DETAILS_EVENT,
    EVENT_ROLES,
    Span,
    call_fields,
    is_llm_call,
    messages,
    with_details,
)
from forensics.ingest.formats._spans import json_value as _json
from forensics.ingest.parse import jsonhead
from forensics.ingest.parse.apicommon import as_list, count_of, json_text
from forensics.ingest.records import Collector, Episode, Run, excerpt, isolated
from forensics.ingest.registry import FormatSpec

FORMAT = "otlp_traces"

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
        attributes=with_details(_attributes(span.get("attributes")), events),
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
        attributes=with_details(_attributes(span.get("attributes")), events),
        events=events,
        status_error=_status_error(span.get("status")),
        line=rec.line,
        json_path=where,
        order=order[0],
    )


# --- GenAI events in OTLP logs ------------------------------------------------------------------


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
                if name not in EVENT_ROLES and name not in ("gen_ai.choice", DETAILS_EVENT):
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
        if e.name == DETAILS_EVENT:
            continue  # its attributes hold the messages
        if e.name == "gen_ai.choice":
            message = got if isinstance(got := e.body.get("message"), dict) else {}
            output = {"role": message.get("role") or "assistant", **message}
            if isinstance(e.body.get("finish_reason"), str):
                output["finish_reason"] = e.body["finish_reason"]
            outputs.append(output)
        else:
            inputs.append({"role": e.body.get("role") or EVENT_ROLES[e.name], **e.body})
    first = events[0]
    attributes = {k: v for e in events for k, v in e.attributes.items() if k != "event.name"}
    if inputs:
        attributes["gen_ai.input.messages"] = inputs
    if outputs:
        attributes["gen_ai.output.messages"] = outputs
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
        inputs, outputs = messages(span)
        new = inputs[seen:] if len(inputs) > seen else inputs
        for msg in new:
            role = msg.get("role")
            # A history's assistant turns were outputs of calls this trace may not hold.
            fields = {"model": None, "tools_attached": None} if role == "assistant" else {}
            ep.json_paths[len(ep.messages)] = span.json_path
            ep.add(span.line, msg, span_id=span.span_id or None, **fields)
        seen = len(inputs) + max(len(outputs), 1)
        for output in outputs or [{"role": "assistant", "content": None}]:
            output.setdefault("role", "assistant")
            ep.json_paths[len(ep.messages)] = span.json_path
            ep.add(span.line, output, span_id=span.span_id or None, **call_fields(span, output))
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
            | {"tools_attached", "model", "endpoint", "http_status", "error", "span_id"}
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
