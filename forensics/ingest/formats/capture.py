"""Files of captured LLM API calls (JSONL, or one JSON document / array) -> trajectories.

A record is one line of a JSONL file, or one element of a JSON array, or one JSON value of a
file of concatenated (pretty-printed) values. Each record becomes a call (`envelopes`,
`litellm`, `exchange`) and calls are linked into trajectories (`linking`). Every record is
accounted for: it is the source of at least one turn, or it is rejected with its line and a
one-line reason. OpenAI Batch input and output lines in the same file are joined on custom_id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from forensics.ingest.api import envelopes, exchange, litellm, requestinfo
from forensics.ingest.api.exchange import Call, NotACall
from forensics.ingest.api.linking import Linker
from forensics.ingest.api.prefix import PrefixParser
from forensics.ingest.formats import _capture_fast
from forensics.ingest.parse import files, jsonhead, jsonwalk
from forensics.ingest.parse.apicommon import without_query
from forensics.ingest.records import NESTED_TOO_DEEPLY, Collector, Run, isolated
from forensics.ingest.records import excerpt as text_excerpt
from forensics.ingest.registry import FormatSpec
from forensics.wording import json_error

FORMAT = "api_capture"
LITELLM_FORMAT = "litellm_log"

# What a captured call fills (schema.RAW_TURNS), for the declarations of the capture formats:
# the response as every dialect of api/exchange.py reads it, then the request side around it.
RESPONSE_COLUMNS = frozenset(
    {"content", "reasoning", "tool_calls", "tool_call_id", "finish_reason", "finish_reason_raw"}
    | {"input_tokens", "output_tokens", "reasoning_tokens", "model", "error", "http_status"}
    | {"stream", "stream_completed", "tool_calls_without_type", "refusal"}
)
EXCHANGE_COLUMNS = RESPONSE_COLUMNS | {
    "max_output_tokens", "tools_attached", "tool_choice", "tool_count", "endpoint",
    "enable_thinking", "reasoning_budget", "reasoning_effort", "request_hash", "request_keys",
    "offered_tools", "replayed", "tool_name",
}  # fmt: skip


def sniff(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    if not keys or "call_type" in keys or "log" in keys:
        return None
    if "custom_id" in keys:
        return "records with custom_id: OpenAI Batch input/output lines"
    if "request" in keys or "response" in keys:
        return "records with request/response: captured API calls"
    if (
        keys.get("object") in ("chat.completion", "text_completion", "response")
        or "choices" in keys
    ):
        return "OpenAI-compatible response bodies (Chat Completions / Responses)"
    if keys.get("type") == "message" and "role" in keys:
        return "Anthropic Messages response bodies"
    return None


def sniff_litellm(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    if "standard_logging_object" in keys:
        return "LiteLLM callback records with a standard_logging_object"
    if "call_type" in keys and ("spend" in keys or "request_id" in keys):
        return "LiteLLM spend-log rows (call_type, request_id, spend)"
    if "call_type" in keys:
        return "LiteLLM StandardLoggingPayload (call_type, messages, response)"
    return None


def _scrubbed(value: Any, depth: int = 0) -> Any:
    """The record for reject excerpts: without headers and URL queries, which carry API keys."""
    if isinstance(value, dict) and depth < 3:
        return {
            k: without_query(v) if k in ("url", "uri") else _scrubbed(v, depth + 1)
            for k, v in value.items()
            if str(k).lower() != "headers"
        }
    return value


def excerpt(record: Any) -> str:
    return text_excerpt(json.dumps(_scrubbed(record), ensure_ascii=False, default=str))


Record = tuple[int, Any, str | None, str]  # line, value, why it could not be read, raw excerpt


def _jsonl(path: Path) -> Iterator[Record]:
    return _jsonl_lines(files.iter_lines(path))


def _jsonl_lines(lines: Iterator[tuple[int, str | None]]) -> Iterator[Record]:
    parser = PrefixParser()
    for number, text in lines:
        if text is None:
            yield number, None, files.long_line(), ""
            continue
        if not text or text.isspace():  # strip() would copy every line
            continue
        try:
            yield number, parser.loads(text), None, ""
        except json.JSONDecodeError as exc:
            reason = f"invalid JSON ({json_error(exc.msg, exc.colno)})"
            yield number, None, reason, text_excerpt(text)
        except RecursionError:
            yield number, None, NESTED_TOO_DEEPLY, text_excerpt(text)


def _walked(line: int, value: Any, excerpt: str) -> Record:
    if isinstance(value, jsonwalk.Unreadable):
        return line, None, f"record not read: {value.reason}", excerpt
    return line, value, None, ""


def _document(path: Path) -> Iterator[Record]:
    """A JSON array of records, or one or more JSON values one after another."""
    text = files.read_text(path)
    line_of = jsonwalk.LineCounter(text)
    pos = jsonwalk.skip_ws(text, 0)
    read = 0
    try:
        if text.startswith("[", pos):
            for start, value, end in jsonwalk.arrays(text, pos):
                read = end
                yield _walked(line_of(start), value, text[start : start + 200])
            return
        while pos < len(text):
            value, end = jsonwalk.walked(text, pos)
            yield _walked(line_of(pos), value, text[pos : pos + 200])
            read = end
            pos = jsonwalk.skip_ws(text, end)
    except jsonwalk.WalkError as exc:
        where = jsonwalk.skip_ws(text, read)
        if text.startswith(",", where):
            where = jsonwalk.skip_ws(text, where + 1)
        yield (
            line_of(where),
            None,
            f"invalid JSON at line {line_of(exc.pos)}: {json_error(exc.msg)}; "
            f"the rest of the file ({len(text) - where} chars) was not read",
            text_excerpt(text, where),
        )


def records(path: Path) -> Iterator[Record]:
    """The records of a capture file, JSONL or JSON document, decided by its content."""
    head = files.head(path).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not head.startswith("[") and jsonwalk.is_jsonl(files.iter_lines(path)):
        return _jsonl(path)
    return _document(path)


class Reader:
    """Turns the records of one file into linked calls, keeping the per-line accounts."""

    def __init__(self, path: Path, collector: Collector, fmt: str) -> None:
        self.path = str(path)
        self.collector = collector
        self.fmt = fmt
        self.run = Run(run_id=path.stem)
        self.linker = Linker(self.run, self.path, fmt)
        self.sources = 0
        self.models: set[str] = set()
        # custom_id -> (line, record) of Batch lines still waiting for their other half
        self.inputs: dict[str, tuple[int, Mapping[str, Any]]] = {}
        self.outputs: dict[str, tuple[int, Mapping[str, Any]]] = {}

    def reject(self, line: int | None, reason: str, text: str = "") -> None:
        self.collector.reject(self.path, line, reason, text, self.fmt)

    def link(self, call: Call, record: Any) -> None:
        history, output = self.linker.add(call)
        if model := call.fields.get("model"):
            self.models.add(model)
        if call.request_line is not None:
            self.sources += int(output > 0)
            if history:
                self.sources += 1
            else:
                self.reject(
                    call.request_line,
                    "batch request repeats a conversation already read; "
                    f"its answer is on line {call.line}",
                )
        elif history or output:
            self.sources += 1
        else:
            self.reject(
                call.line,
                "request without a response repeats messages already read: nothing new",
                excerpt(record),
            )

    def record(self, line: int, record: Any) -> None:
        if not isinstance(record, dict):
            self.reject(
                line, f"a JSON {type(record).__name__}, not a record object", excerpt(record)
            )
            return
        try:
            if litellm.is_record(record):
                self.link(litellm.call_of(record, line), record)
                return
            kind = envelopes.kind(record)
            if kind is None:
                keys = ", ".join(sorted(map(str, record))[:8])
                raise NotACall(f"not a record of an API call (keys: {keys})")
            if kind in ("batch_input", "batch_output"):
                self.batch(kind, line, record)
                return
            self.link(exchange.build(envelopes.exchange(record, kind), line), record)
        except NotACall as exc:
            self.reject(line, str(exc), excerpt(record))

    def batch(self, kind: str, line: int, record: Mapping[str, Any]) -> None:
        key = str(record.get("custom_id"))
        mine, other = (
            (self.inputs, self.outputs) if kind == "batch_input" else (self.outputs, self.inputs)
        )
        if key in other:
            other_line, other_record = other.pop(key)
            if kind == "batch_input":
                self.join(line, record, other_line, other_record)
            else:
                self.join(other_line, other_record, line, record)
            return
        if key in mine:  # a repeated custom_id: the earlier line stands alone
            self.alone(kind, *mine.pop(key))
        mine[key] = (line, record)

    def join(
        self, in_line: int, request: Mapping[str, Any], out_line: int, response: Mapping[str, Any]
    ) -> None:
        asked = envelopes.exchange(request, "batch_input")
        answered = envelopes.exchange(response, "batch_output")
        answered.request, answered.url, answered.method = asked.request, asked.url, asked.method
        try:
            call = exchange.build(answered, out_line)
        except NotACall as exc:
            self.reject(in_line, str(exc), excerpt(request))
            self.reject(out_line, str(exc), excerpt(response))
            return
        call.request_line = in_line
        self.link(call, response)

    def alone(self, kind: str, line: int, record: Mapping[str, Any]) -> None:
        try:
            self.link(exchange.build(envelopes.exchange(record, kind), line), record)
        except NotACall as exc:
            self.reject(line, str(exc), excerpt(record))

    def finish(self) -> int:
        waiting = [("batch_input", *v) for v in self.inputs.values()]
        waiting += [("batch_output", *v) for v in self.outputs.values()]
        for kind, line, record in sorted(waiting, key=lambda w: w[1]):
            self.alone(kind, line, record)
        if len(self.models) == 1:
            self.run.agent_model = next(iter(self.models))
        self.linker.flush(self.collector)
        return self.sources


def read(path: Path, collector: Collector, fmt: str, *, fast: bool = True) -> int:
    """Ingest a capture file; returns the number of records that became turns. fast: let
    _capture_fast read what it reads exactly (the commonest captures), the rest as always."""
    if fast and fmt == FORMAT:
        reader = Reader(path, collector, fmt)
        with requestinfo.shared_items():
            outcome = _capture_fast.read(path, collector, reader.linker)
            if outcome is not None and outcome.rest is not None:
                reader.sources, reader.models = outcome.sources, outcome.models
                _read_records(reader, path, _jsonl_lines(outcome.rest))
        if outcome is not None:
            return outcome.sources if outcome.rest is None else reader.finish()
    reader = Reader(path, collector, fmt)
    with requestinfo.shared_items():
        _read_records(reader, path, records(path))
    return reader.finish()


def _read_records(reader: Reader, path: Path, found: Iterator[Record]) -> None:
    for line, value, error, raw in found:
        if error is not None:
            reader.reject(line, error, raw)
        else:
            with isolated(reader.collector, str(path), line, reader.fmt):
                reader.record(line, value)


def ingest(path: Path, collector: Collector) -> int:
    return read(path, collector, FORMAT)


def ingest_litellm(path: Path, collector: Collector) -> int:
    return read(path, collector, LITELLM_FORMAT)


SPECS = (
    FormatSpec(
        name=LITELLM_FORMAT,
        description="LiteLLM standard logging payloads / spend-log rows",
        detection="records with call_type (StandardLoggingPayload, spend-log rows)",
        sniff=sniff_litellm,
        ingest=ingest_litellm,
        priority=720,
        columns=EXCHANGE_COLUMNS,
        benchmark=False,
        artifact="capture",
        rerun=None,
        seeds={"litellm": "tests/data/capture/litellm_logs.jsonl"},
    ),
    FormatSpec(
        name=FORMAT,
        description="captured LLM API calls (request/response pairs, Batch lines, bodies)",
        detection="records with request/response, custom_id (Batch), or bare response bodies",
        sniff=sniff,
        ingest=ingest,
        # After Ollama's answers (ollama_capture), whose `response` key is no request/response
        # pair.
        priority=740,
        columns=EXCHANGE_COLUMNS,
        benchmark=False,
        artifact="capture",
        rerun=None,
        seeds={
            "capture_jsonl": "tests/data/capture/vllm_agent_loop.jsonl",
            "capture_batch": "tests/data/capture/batch.jsonl",
            "capture_bodies": "tests/data/capture/bodies.json",
        },
    ),
)
