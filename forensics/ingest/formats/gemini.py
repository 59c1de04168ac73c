"""Gemini generateContent responses saved as files: REST bodies, SDK dumps, JSONL, JSON-array
streams and `alt=sse` events. The reading is the API dialect's (`ingest/api/gemini.py`), which
capture containers share; this module declares the file format."""

from __future__ import annotations

from forensics.ingest.api import gemini
from forensics.ingest.formats import capture
from forensics.ingest.registry import FormatSpec

SPECS = (
    FormatSpec(
        name=gemini.FORMAT,
        description="Gemini generateContent responses / SDK dumps",
        detection="Gemini response keys (candidates, promptFeedback, usageMetadata) in one "
        "body, JSONL, a JSON-array stream or alt=sse events",
        sniff=gemini.sniff,
        ingest=gemini.ingest,
        priority=600,
        # A response and, where a dump keeps it, its request; never the HTTP envelope's
        # hashes and raw keys.
        columns=capture.EXCHANGE_COLUMNS
        - {"tool_calls_without_type", "enable_thinking", "request_keys", "request_hash"}
        - {"tool_count"},
        benchmark=False,
        artifact="capture",
        rerun=None,
        seeds={
            "gemini_rest": "tests/data/gemini/rest_max_tokens.json",
            "gemini_jsonl": "tests/data/gemini/synthetic_mixed.jsonl",
            "gemini_array_stream": "tests/data/gemini/stream_json_array.json",
            "gemini_sse": "tests/data/gemini/stream_alt_sse.txt",
        },
    ),
)
