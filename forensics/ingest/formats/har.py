"""HAR 1.2 files (browser devtools, mitmproxy `hardump`, Charles, Fiddler) -> trajectories.

Each entry is one HTTP exchange: `request.postData.text` is the request body,
`response.content.text` the response (base64 when `content.encoding` says so, SSE text for a
streamed answer the recorder buffered). A failed flow has status 0 and an `_error`: it becomes
an agent turn that carries the error. Entries that are not LLM API calls are rejected one by
one, so every entry is accounted for. The entries are walked one at a time: a HAR cut off
mid-write keeps every complete entry.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forensics.ingest.api import exchange
from forensics.ingest.api.exchange import Exchange, NotACall
from forensics.ingest.formats import capture
from forensics.ingest.parse import files, jsonhead, jsonwalk
from forensics.ingest.parse.apicommon import as_dict, as_int, as_str, without_query
from forensics.ingest.records import Collector, excerpt, isolated, reject_trailing
from forensics.ingest.registry import FormatSpec

FORMAT = "har"


def sniff(head: str) -> str | None:
    # `log` opens with version and creator; entries may start past the head after long pages.
    if "log" in jsonhead.top_level(head) and ('"entries"' in head or '"creator"' in head):
        return "HAR 1.2 capture (log.entries)"
    return None


def _content_text(content: Mapping[str, Any]) -> str | bytes | None:
    text = content.get("text")
    if not isinstance(text, str):
        return None
    if content.get("encoding") == "base64":
        try:
            return base64.b64decode(text, validate=False)
        except (binascii.Error, ValueError):
            return None
    return text


def entry_exchange(entry: Mapping[str, Any]) -> Exchange:
    request = as_dict(entry.get("request"))
    response = as_dict(entry.get("response"))
    status = as_int(response.get("status"))
    error = as_str(response.get("_error") or entry.get("_error"))
    body = _content_text(as_dict(response.get("content")))
    failed = status == 0 or (error is not None and not body)
    return Exchange(
        request=as_dict(request.get("postData")).get("text"),
        response=None if failed else body,
        status=status,
        url=as_str(request.get("url")),
        method=as_str(request.get("method")),
        transport_error=(error or "no response (HTTP status 0)") if failed else None,
        has_response=bool(response),
        time=as_str(entry.get("startedDateTime")),
    )


def _where(entry: Any) -> str:
    request = as_dict(as_dict(entry).get("request"))
    return " ".join(str(p) for p in (request.get("method"), without_query(request.get("url"))) if p)


def ingest(path: Path, collector: Collector) -> int:
    text = files.read_text(path)
    line_of = jsonwalk.LineCounter(text)
    reader = capture.Reader(path, collector, FORMAT)
    last_end = 0

    def handle(start: int, entry: Any) -> None:
        line = line_of(start)
        if isinstance(entry, jsonwalk.Unreadable):
            reader.reject(line, f"HAR entry not read: {entry.reason}")
            return
        if not isinstance(entry, dict):
            reader.reject(line, "HAR entry is not an object", capture.excerpt(entry))
            return
        with isolated(collector, str(path), line, FORMAT):
            try:
                reader.link(exchange.build(entry_exchange(entry), line), entry)
            except NotACall as exc:
                reader.reject(line, f"HAR entry: {exc}", _where(entry))

    def entries(text: str, pos: int) -> tuple[None, int]:
        nonlocal last_end
        end = jsonwalk.skip_ws(text, pos + 1)  # where `]` sits when the array is empty
        for start, entry, end in jsonwalk.elements(text, pos):
            handle(start, entry)
            last_end = end
        return None, jsonwalk.skip_ws(text, end) + 1

    log_walker = {"log": lambda t, p: jsonwalk.obj(t, p, {"entries": entries})}
    try:
        _, end = jsonwalk.obj(text, jsonwalk.skip_ws(text, 0), log_walker)
        reject_trailing(collector, str(path), text, end, line_of, FORMAT)
    except jsonwalk.WalkError as exc:
        where = jsonwalk.skip_ws(text, last_end)
        if text.startswith(",", where):
            where = jsonwalk.skip_ws(text, where + 1)
        cut = exc.pos >= len(text.rstrip())
        where = min(where, exc.pos)
        reason = (
            f"truncated HAR: the file ends inside an entry (line {line_of(len(text))}); "
            "the complete entries before it were read"
            if cut
            else f"invalid JSON at line {line_of(exc.pos)}: {exc.msg}; "
            "the rest of the HAR was not read"
        )
        reader.reject(line_of(where), reason, excerpt(text, where))
    return reader.finish()


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="HAR 1.2 capture of LLM API calls",
        detection="a JSON object with log.entries / log.creator",
        sniff=sniff,
        ingest=ingest,
        priority=710,
        # HAR dates every entry (startedDateTime).
        columns=capture.EXCHANGE_COLUMNS | {"request_time"},
        benchmark=False,
        artifact="capture",
        rerun=None,
        seeds={"har": "tests/data/capture/agent.har"},
    ),
)
