"""A streamed response body saved as is (`data:` lines) -> one turn per stream.

People save what `curl -N` printed, or a proxy dumps stream bodies one after another. A stream
ends at `data: [DONE]` (OpenAI and compatible), `message_stop` (Anthropic) or a terminal
`response.*` event (Responses API); whatever follows starts the next stream. The last stream of
a file that ends without such an event is kept and, when it has no finish reason either,
recorded as cut off. Chunks of another completion id also start the next stream: not every
server sends `[DONE]`. A chunk without an id (`"id": ""`) is not another completion: Azure OpenAI
sends its content-filter annotations that way, the prompt's before the first chunk and the
asynchronous filter's results after the finish reason, in the same stream.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forensics.ingest.api import exchange, sse
from forensics.ingest.api.exchange import Exchange, NotACall
from forensics.ingest.formats import capture
from forensics.ingest.parse import files, jsonhead, jsonwalk
from forensics.ingest.records import Collector, excerpt, isolated
from forensics.ingest.registry import FormatSpec

FORMAT = "sse_capture"
_ENDS = ("message_stop", "response.completed", "response.incomplete", "response.failed")
_GEMINI_KEYS = {
    "candidates",
    "promptFeedback",
    "usageMetadata",
    "prompt_feedback",
    "usage_metadata",
}


def sniff(head: str) -> str | None:
    if not sse.looks_like(head):
        return None
    first = next(sse.events(head), None)
    if first is not None and jsonhead.top_level(first.data).keys() & _GEMINI_KEYS:
        return None  # Gemini's alt=sse chunks belong to the gemini reader
    return "server-sent events (data: lines): streamed response bodies"


def _payload(event: sse.Event) -> dict[str, Any]:
    try:
        value = jsonwalk.loads(event.data)
    except (json.JSONDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _ends_stream(event: sse.Event, payload: dict[str, Any]) -> bool:
    if event.data.strip() == sse.DONE:
        return True
    return (event.name or payload.get("type")) in _ENDS


def _render(events: list[sse.Event]) -> str:
    parts = []
    for event in events:
        head = f"event: {event.name}\n" if event.name else ""
        data = "\n".join(f"data: {line}" for line in event.data.split("\n"))
        parts.append(f"{head}{data}\n\n")
    return "".join(parts)


def ingest(path: Path, collector: Collector) -> int:
    text = files.read_text(path)
    reader = capture.Reader(path, collector, FORMAT)
    streams: list[list[sse.Event]] = [[]]
    current_id = None
    for event in sse.events(text):
        payload = _payload(event)
        # Servers that send no [DONE] still give every chunk of one completion the same id.
        # Azure's content-filter chunks (prompt_filter_results first, asynchronous filter
        # annotations after the finish chunk) carry an empty id: they belong to the response
        # around them, not to a stream of their own.
        chunk_id = (payload.get("id") or None) if "choices" in payload else None
        if chunk_id is not None and current_id is not None and chunk_id != current_id:
            streams.append([])
        if chunk_id is not None:
            current_id = chunk_id
        streams[-1].append(event)
        if _ends_stream(event, payload):
            streams.append([])
            current_id = None
    for stream in streams:
        if not stream:
            continue
        line = stream[0].line
        with isolated(collector, str(path), line, FORMAT):
            try:
                call = exchange.build(Exchange(response=_render(stream)), line)
                reader.link(call, stream[0].data)
            except NotACall as exc:
                reader.reject(line, f"stream: {exc}", excerpt(stream[0].data))
    return reader.finish()


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="streamed response bodies (SSE)",
        detection="server-sent events (data: lines) that are not Gemini chunks",
        sniff=sniff,
        ingest=ingest,
        priority=750,
        # The response bodies alone: no request side.
        columns=capture.RESPONSE_COLUMNS | {"replayed"},
        benchmark=False,
        artifact="capture",
        rerun=None,
        seeds={"capture_sse": "tests/data/capture/streams.sse"},
    ),
)
