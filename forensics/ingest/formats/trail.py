"""Span trees of agent runs as Patronus / Phoenix export them: the traces of the TRAIL benchmark
(patronus-ai/trail-benchmark, smolagents runs on GAIA and SWE-bench instrumented with
OpenInference).

A file holds one trace, `{"trace_id", "spans": [...]}`, each span nested in its parent's
`child_spans`, with `span_id`, `span_name`, `timestamp`, `status_code` (Ok, Unset, Error) and
`status_message`, `events` (exceptions: `Name`, `Attributes` with `exception.type` /
`exception.message`) and `span_attributes` of flattened OpenInference keys:
`openinference.span.kind` (AGENT, CHAIN, LLM, TOOL), `llm.input_messages.N.message.*`,
`llm.output_messages.N.message.*` (tool calls under `.tool_calls.M.tool_call.function.*`),
`llm.invocation_parameters`, `llm.model_name`, `llm.token_count.*` (written as strings by the
export), `tool.name`, `input.value`, `output.value`. The attributes are mapped by the same code
as OTLP spans (`_spans.py`).

One trace is one trajectory (task id: the trace id), its turns in span order, each at the line
of its span's `span_id`, with that `span_id` and the `span_path` of ids from the root down to
it, so a label that names a span (the call, or the step or agent span around it) finds its
turns:

- an LLM span gives the messages of its input not read before in the trace (a smolagents call
  replays the agent's memory: system prompt, task, plans, observations) and then its output,
  with the call's model, token counts, `max_completion_tokens` cap and, when the span failed,
  its status message as the turn's error (a call that failed without output is still its
  turn); smolagents' `tool-response` messages are observations, user messages as smolagents
  sends them to the model (actor env), its `tool-call`
  messages re-render an earlier output's action and are not repeated;
- a TOOL span is a tool result (actor env): `output.value`, `tool.name`, and when the tool
  raised, the status message (or its exception event) as the error;
- agent, chain and step spans are context: the turns under an AGENT span name that agent
  (`CodeAgent`, `ToolCallingAgent`: the span name without `.run`) in `agent_name`; a failed root
  span is the trajectory's error, with termination `error`.

User messages before the agent's first output are the task (actor user_sim); those after it
are the harness's own prompts (planning, final-answer requests: actor env).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forensics.ingest import jsonrecords
from forensics.ingest.formats._spans import Span, call_fields, is_llm_call, messages
from forensics.ingest.parse import jsonhead
from forensics.ingest.parse.apicommon import as_list, count_of, json_text, text_of
from forensics.ingest.records import Collector, Episode, Run, excerpt, isolated
from forensics.ingest.registry import FormatSpec

FORMAT = "trail_spans"

_SPAN_KEYS = ('"child_spans"', '"span_attributes"')
# smolagents' MessageRole values as OpenInference records them, and the role the model saw each
# as: smolagents sends a tool-response as a user message (tool_role_conversions), so an
# observation of code the agent wrote is no tool's own result.
_ROLES = {
    "system": "system",
    "user": "user",
    "assistant": "assistant",
    "tool-response": "user",
    "tool": "tool",
}
_REPLAYED_ROLES = frozenset({"tool-call"})


def sniff(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    if "spans" in keys and any(k in head for k in _SPAN_KEYS):
        return "JSON object with spans holding child_spans and span_attributes (TRAIL span tree)"
    return None


@dataclass
class _Node:
    span: Span
    kind: str | None  # openinference.span.kind
    agent: str | None  # the agent whose run span holds this span
    path: tuple[str, ...]  # span ids from the root down to this span


def _attributes(raw: Any) -> dict[str, Any]:
    """The span's attributes; the export writes OpenInference's integer counts as strings."""
    out = dict(raw) if isinstance(raw, dict) else {}
    for key, value in out.items():
        if key.startswith("llm.token_count.") and isinstance(value, str):
            out[key] = count_of(value.strip())
    return out


def _error(span: dict[str, Any]) -> str | None:
    """The failure of a span: its status message, else its exception event."""
    if span.get("status_code") != "Error":
        return None
    message = span.get("status_message")
    if isinstance(message, str) and message.strip():
        return message
    for name, attrs in _events(span):
        if name == "exception" and attrs.get("exception.message") is not None:
            kind = attrs.get("exception.type")
            text = str(attrs["exception.message"])
            return f"{kind}: {text}" if isinstance(kind, str) and kind else text
    return "span status Error"


def _events(span: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for event in as_list(span.get("events")):
        if isinstance(event, dict):
            attrs = event.get("Attributes", event.get("attributes"))
            name = event.get("Name", event.get("name"))
            out.append((str(name or ""), dict(attrs) if isinstance(attrs, dict) else {}))
    return out


def _start(item: Any) -> str:
    value = item.get("timestamp") if isinstance(item, dict) else None
    return value if isinstance(value, str) else ""


class _Walk:
    """The spans of one trace, depth first: a parent before its children, siblings by start
    time (ISO timestamps sort as text); what is not a span is rejected at its place."""

    def __init__(self, collector: Collector, name: str, rec: jsonrecords.Record) -> None:
        self.collector, self.name, self.rec = collector, name, rec
        self.locate = rec.locate or (lambda _needle: rec.line)
        trace_id = rec.value.get("trace_id")
        self.trace = str(trace_id) if isinstance(trace_id, str | int) else ""
        self.order = 0

    def spans(
        self, items: list[Any], where: str, agent: str | None, above: tuple[str, ...] = ()
    ) -> Iterator[_Node]:
        for i, raw in sorted(enumerate(items), key=lambda item: _start(item[1])):
            path = f"{where}[{i}]"
            if not isinstance(raw, dict):
                shown = excerpt(json_text(raw) or "null")
                reason = "span is not a JSON object"
                self.collector.reject(self.name, self.rec.line, reason, shown, FORMAT, path)
                continue
            yield from self._span(raw, path, agent, above)

    def _span(
        self, raw: dict[str, Any], path: str, agent: str | None, above: tuple[str, ...]
    ) -> Iterator[_Node]:
        span_id = raw.get("span_id")
        sid = str(span_id) if isinstance(span_id, str | int) and span_id != "" else ""
        attributes = _attributes(raw.get("span_attributes"))
        kind = attributes.get("openinference.span.kind")
        span_name = str(raw.get("span_name") or "")
        self.order += 1
        span = Span(
            trace_id=self.trace,
            span_id=sid,
            name=span_name,
            start=None,
            attributes=attributes,
            events=_events(raw),
            status_error=_error(raw),
            line=self.locate(f'"{sid}"') if sid else self.rec.line,
            json_path=path,
            order=self.order,
        )
        if kind == "AGENT":
            agent = span_name.removesuffix(".run") or agent
        ids = (*above, sid)
        yield _Node(span, kind if isinstance(kind, str) else None, agent, ids)
        children = raw.get("child_spans")
        if isinstance(children, list):
            yield from self.spans(children, f"{path}.child_spans", agent, ids)
        elif children is not None:
            shown = excerpt(json_text(children) or "")
            reason = "child_spans is not a list: the span's children were not read"
            self.collector.reject(
                self.name, span.line, reason, shown, FORMAT, f"{path}.child_spans"
            )


def _said(msg: dict[str, Any]) -> str | None:
    """A message's text as the agent's memory replays it: smolagents' CodeAgent appends the
    `<end_code>` its stop sequence cut from the output it stores."""
    text = text_of(msg.get("content"))
    if not isinstance(text, str):
        return text
    text = text.rstrip()
    return text.removesuffix("<end_code>").rstrip()


class _Trace:
    """The turns of one trace, as its spans are met."""

    def __init__(self, ep: Episode) -> None:
        self.ep = ep
        self.seen: set[tuple[str, str | None]] = set()
        self.acted = False  # the agent has spoken: later user messages are the harness's
        self.replayed = 0  # tool-call messages left out
        self.context = 0  # spans that are neither calls nor tools

    def _add(self, node: _Node, msg: dict[str, Any], **fields: Any) -> None:
        role = msg.get("role")
        if role == "user":
            fields.setdefault("actor", "env" if self.acted else "user_sim")
        if role == "assistant":
            self.acted = True
        fields.setdefault("agent_name", node.agent)
        self.ep.json_paths[len(self.ep.messages)] = node.span.json_path
        path = list(node.path) if all(node.path) else None  # a span without id breaks it
        self.ep.add(
            node.span.line, msg, span_id=node.span.span_id or None, span_path=path, **fields
        )

    def llm(self, node: _Node) -> None:
        inputs, outputs = messages(node.span)
        for msg in inputs:
            raw_role = msg.get("role")
            if raw_role in _REPLAYED_ROLES:
                self.replayed += 1
                continue
            role = _ROLES.get(raw_role, raw_role) if isinstance(raw_role, str) else raw_role
            key = (str(role), _said(msg))
            if key in self.seen:
                continue
            self.seen.add(key)
            # A replayed assistant message was an output of a call the trace may not hold.
            fields: dict[str, Any] = (
                {"model": None, "tools_attached": None} if role == "assistant" else {}
            )
            if raw_role == "tool-response":
                fields["actor"] = "env"
            self._add(node, {**msg, "role": role}, **fields)
        for output in outputs or [{"role": "assistant", "content": None}]:
            output["role"] = "assistant"
            self.seen.add(("assistant", _said(output)))
            self._add(node, output, **call_fields(node.span, output))

    def tool(self, node: _Node) -> None:
        a = node.span.attributes
        result = a.get("output.value")
        name = a.get("tool.name")
        msg = {
            "role": "tool",
            "content": result if isinstance(result, str) or result is None else json_text(result),
            "name": name if isinstance(name, str) else None,
        }
        self._add(node, msg, error=node.span.status_error)


def _episode(run: Run, path: Path, rec: jsonrecords.Record, trace: str) -> Episode:
    return Episode(
        run=run,
        source_path=str(path),
        source_line=rec.line,
        source_format=FORMAT,
        task_id=trace or None,
        json_path=rec.json_path,
    )


def ingest(path: Path, collector: Collector) -> int:
    name = str(path)
    run = Run(run_id=path.stem)
    read = context = replayed = 0
    for rec in jsonrecords.read(path, collector, FORMAT):
        with isolated(collector, name, rec.line, FORMAT, rec.json_path):
            value = rec.value
            if not isinstance(value, dict) or not isinstance(value.get("spans"), list):
                reason = "record is not a span tree (no spans list)"
                shown = excerpt(json_text(value) or "null")
                collector.reject(name, rec.line, reason, shown, FORMAT, rec.json_path)
                continue
            walk = _Walk(collector, name, rec)
            trace = _Trace(_episode(run, path, rec, walk.trace))
            for node in walk.spans(value["spans"], f"{rec.json_path or '$'}.spans", None):
                if node.kind == "LLM" or is_llm_call(node.span):
                    trace.llm(node)
                elif node.kind == "TOOL":
                    trace.tool(node)
                else:
                    trace.context += 1
                    # The run itself failed (a rate limit smolagents gave up on): its error.
                    if len(node.path) == 1 and node.span.status_error and trace.ep.error is None:
                        trace.ep.error = node.span.status_error
                        trace.ep.termination_reason = "error"
            context += trace.context
            replayed += trace.replayed
            collector.add_episode(trace.ep)
            read += 1
    if context:
        collector.note(name, f"{context} agent, chain or step span(s) read as context")
    if replayed:
        collector.note(
            name,
            f"{replayed} smolagents tool-call message(s) not repeated: each re-renders the "
            "action of an output already read",
        )
    return read


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="Agent span trees with OpenInference attributes (TRAIL, Patronus/Phoenix)",
        detection="a JSON object with spans whose spans hold child_spans and span_attributes",
        sniff=sniff,
        ingest=ingest,
        priority=825,
        columns=frozenset(
            {"content", "tool_calls", "finish_reason", "finish_reason_raw", "error"}
            | {"input_tokens", "output_tokens", "max_output_tokens", "model", "tools_attached"}
            | {"tool_name", "agent_name", "span_id", "span_path"}
        ),
        benchmark=False,
        artifact="traces",
        rerun=None,
        seeds={"trail_spans": "tests/data/traces/trail/gaia_0ebe673d.json"},
    ),
)
