"""The messages and call columns of one traced LLM call, whatever container holds its span.

A span's attributes say what a call sent and returned in one of the conventions
instrumentations write (GenAI semantic conventions, the older GenAI content events, OpenLLMetry,
Vercel AI SDK, Pydantic AI / Logfire, OpenInference). OTLP exports (`otlp.py`) and the span trees
other tools export (TRAIL's Patronus/Phoenix span trees, `trail.py`) hold the same attributes in
another envelope: each reader builds `Span`s from its envelope and maps them here, so a
convention is read the same way in every container.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from forensics import linear
from forensics.ingest.parse import jsonwalk
from forensics.ingest.parse.apicommon import as_int, count_of, json_text, text_of

_LLM_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
# RE2: attribute keys come from the input file (a crafted one may be a megabyte long).
_INDEXED = linear.compile(
    r"^(llm\.(?:input|output)_messages|gen_ai\.(?:prompt|completion))\.(\d+)\.(.+)$"
)
_TOOL_CALL_KEY = linear.compile(r"tool_calls\.(\d+)\.(?:tool_call\.)?(.+)$")


# Semantic conventions 1.37+: one event per call holds its content (input, output, system
# instructions as structured values) and the call's attributes, as a log record or a span event.
DETAILS_EVENT = "gen_ai.client.inference.operation.details"


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


# --- messages of a call --------------------------------------------------------------------------


def json_value(value: Any) -> Any:
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
        m = _TOOL_CALL_KEY.match(key)
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


def messages(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(input messages, output messages) of a call, from whichever convention it uses."""
    a = span.attributes
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    system = json_value(a.get("gen_ai.system_instructions"))
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
        elif name in EVENT_ROLES:
            inputs.append({**body, "role": body.get("role") or EVENT_ROLES[name]})
    return inputs, outputs


def _event_messages(value: Any, role: str) -> list[dict[str, Any]]:
    """Messages of an old content event: JSON messages, or (OpenLIT) the plain text itself."""
    listed = [m for v in _listed(value) if (m := _semconv_message(v))]
    if not listed and isinstance(value, str) and value.strip() and json_value(value) is None:
        return [{"role": role, "content": value}]
    return listed


def _listed(value: Any) -> list[Any]:
    value = json_value(value)
    if isinstance(value, dict):
        return [value]
    # Some SDKs write a string array attribute, one JSON message per element.
    return (
        [json_value(v) if isinstance(v, str) else v for v in value]
        if isinstance(value, list)
        else []
    )


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
    body = json_value(a.get("output.value"))
    if not isinstance(body, dict):
        return None
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        reason = choices[0].get("finish_reason")
        return reason if isinstance(reason, str) else None
    reason = body.get("stop_reason")
    return reason if isinstance(reason, str) else None


def call_fields(span: Span, output: dict[str, Any] | None) -> dict[str, Any]:
    a = span.attributes
    reasons = a.get("gen_ai.response.finish_reasons")
    reason = (output or {}).get("finish_reason")
    if reason is None and isinstance(reasons, list) and reasons and isinstance(reasons[0], str):
        reason = reasons[0]
    if reason is None and isinstance(reasons, str):
        reason = reasons
    if reason is None:
        reason = _response_finish(a)
    params = json_value(a.get("llm.invocation_parameters"))
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
            a,
            "gen_ai.usage.reasoning_tokens",
            "gen_ai.usage.reasoning.output_tokens",
            "llm.token_count.completion_details.reasoning",
        ),
        "max_output_tokens": cap,
        "model": model if isinstance(model, str) else None,
        "endpoint": a.get("server.address") if isinstance(a.get("server.address"), str) else None,
        "tools_attached": True if tools else None,
        "http_status": as_int(a.get("http.response.status_code")),
        "error": error,
    }
    return fields


# Semantic conventions 1.28-1.36 put message content in log events, one per message, linked to
# the call's span by trace and span id; gen_ai.choice carries the output and its finish reason.
EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def with_details(
    attributes: dict[str, Any], events: list[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    """A span's attributes completed by its operation-details event (content recorded as an
    event, not as attributes): what the span itself says wins."""
    for name, attrs in events:
        if name == DETAILS_EVENT:
            return {**attrs, **attributes}
    return attributes
