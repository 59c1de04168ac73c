"""Ollama answers saved as they came (`curl localhost:11434/api/chat > out.jsonl`): NDJSON
stream lines, or whole answers, one after another -> one turn per answer.

A stream is the lines up to and including its `done: true` line; the next line starts the next
answer. A last stream without its done line is kept and read as cut off. Without the request
there is no conversation to link, so each answer is its own trajectory; the dialect
(`ollama.py`) reads the lines exactly as it reads a captured response body.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forensics.ingest.api import exchange
from forensics.ingest.api.exchange import Exchange, NotACall
from forensics.ingest.formats import capture
from forensics.ingest.parse import jsonhead
from forensics.ingest.records import Collector, isolated
from forensics.ingest.registry import FormatSpec

FORMAT = "ollama_ndjson"


def sniff(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    if "done" in keys and "model" in keys and ("message" in keys or "response" in keys):
        return "Ollama API answers (NDJSON stream lines or whole answers)"
    return None


def ingest(path: Path, collector: Collector) -> int:
    reader = capture.Reader(path, collector, FORMAT)
    group: list[dict[str, Any]] = []
    start = 0

    def flush() -> None:
        with isolated(collector, str(path), start, FORMAT):
            try:
                body = group[0] if len(group) == 1 else list(group)
                call = exchange.build(Exchange(response=body), start)
                reader.link(call, group[0])
            except NotACall as exc:
                reader.reject(start, str(exc), capture.excerpt(group[0]))

    for line, value, error, raw in capture.records(path):
        if error is not None:
            reader.reject(line, error, raw)
            continue
        if not isinstance(value, dict):
            reader.reject(line, f"a JSON {type(value).__name__}, not an answer line")
            continue
        if not group:
            start = line
        group.append(value)
        if value.get("done") is True:
            flush()
            group = []
    if group:
        flush()
    return reader.finish()


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="Ollama answers saved as NDJSON (streams, whole answers)",
        detection="a first object with model, done and message or response (Ollama answers)",
        sniff=sniff,
        ingest=ingest,
        # Before the request/response captures: a generate answer's `response` key is not a
        # request/response pair.
        priority=730,
        columns=capture.EXCHANGE_COLUMNS,
        benchmark=False,
        artifact="capture",
        rerun=None,
        seeds={"ollama_ndjson": "tests/data/cassettes/synthetic/ollama_saved_streams.jsonl"},
    ),
)
