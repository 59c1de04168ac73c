"""The records of a JSON file that is either JSONL, a top-level array, or one document.

Trace exporters and dataset dumps write all three: the OpenTelemetry file exporter and
process-mode rollouts one JSON value per line, Hugging Face datasets a whole array, a pasted
export one pretty-printed object. Each record comes with its line and JSON path; what can not be
parsed becomes a reject with its line, and the walk goes on where it can.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forensics.ingest.parse import files, jsonwalk
from forensics.ingest.records import (
    NESTED_TOO_DEEPLY,
    Collector,
    excerpt,
    reject_trailing,
    unreadable,
)
from forensics.wording import json_error


@dataclass
class Record:
    line: int
    # "$[3]" for an array element, "$" for a whole document, "$<2>" for the third of values
    # printed one after another, None in JSONL.
    json_path: str | None
    value: Any
    # Line of the first occurrence of a text at or after the record's start, for readers that
    # locate parts of a multi-line record (None in JSONL, where a record is its line).
    locate: Callable[[str], int] | None = None


def read(path: Path, collector: Collector, fmt: str) -> Iterator[Record]:
    """Every parseable record of the file; the others are rejected as they are met."""
    name = str(path)
    if jsonwalk.is_jsonl(files.iter_lines(path), (dict, list)):
        for number, text in files.iter_lines(path):
            if text is None:
                reason = files.long_line()
                collector.reject(name, number, reason, "", fmt)
                continue
            if not text or text.isspace():  # strip() would copy every line
                continue
            try:
                value = jsonwalk.loads(text)
            except json.JSONDecodeError as exc:
                reason = f"invalid JSON ({json_error(exc.msg, exc.colno)})"
                collector.reject(name, number, reason, text, fmt)
                continue
            except RecursionError:
                collector.reject(name, number, NESTED_TOO_DEEPLY, "", fmt)
                continue
            yield Record(number, None, value)
        return
    text = files.read_text(path)
    line_of = jsonwalk.LineCounter(text)
    pos = jsonwalk.skip_ws(text, 1 if text.startswith("\ufeff") else 0)
    if text.startswith("[", pos):
        index, last = -1, pos + 1
        try:
            for index, (start, item, stop) in enumerate(jsonwalk.elements(text, pos)):
                last = stop
                if unreadable(
                    collector, name, line_of(start), item, fmt, f"$[{index}]", text, start
                ):
                    continue
                yield Record(line_of(start), f"$[{index}]", item, _locator(text, start, line_of))
        except jsonwalk.WalkError as exc:
            reason = (
                f"array element {index + 1} not read: {json_error(exc.msg)}; the elements before "
                "it are kept"
            )
            collector.reject(name, line_of(exc.pos), reason, excerpt(text, exc.pos), fmt)
            return
        # `elements` returned only after seeing the closing bracket after the last element.
        reject_trailing(collector, name, text, jsonwalk.skip_ws(text, last) + 1, line_of, fmt)
        return
    # One document, or objects printed one after another (ConsoleSpanExporter, pretty-printed
    # dumps): each whole value is a record; what follows a value that is not one is rejected.
    index = 0
    while True:
        try:
            value, end = jsonwalk.walked(text, pos)
        except jsonwalk.WalkError as exc:
            where = "" if index == 0 else f"value {index + 1}: "
            reason = f"{where}invalid JSON ({json_error(exc.msg)})"
            collector.reject(name, line_of(exc.pos), reason, excerpt(text, pos), fmt)
            return
        json_path = "$" if index == 0 and jsonwalk.trailing(text, end) is None else f"$<{index}>"
        if not unreadable(collector, name, line_of(pos), value, fmt, json_path, text, pos):
            yield Record(line_of(pos), json_path, value, _locator(text, pos, line_of))
        following = jsonwalk.skip_ws(text, end)
        if following >= len(text) or text[following] != "{":
            break
        pos, index = following, index + 1
    reject_trailing(collector, name, text, end, line_of, fmt)


@dataclass(frozen=True)
class Document:
    """A JSON document read whole: its value, where it starts and its lines."""

    value: Any
    start: int
    line_of: jsonwalk.LineCounter


def document(
    collector: Collector,
    name: str,
    text: str,
    fmt: str,
    not_whole: str | Callable[[jsonwalk.WalkError, int], str],
    walk: Callable[[str, int], tuple[Any, int]] = jsonwalk.obj,
    *,
    json_path: str | None = None,
    skip_bom: bool = False,
    excerpt_from_start: bool = False,
) -> Document | None:
    """The one JSON document text must be, or None once it is rejected.

    walk reads the value from where it starts (default: an object, every key read whole).
    A document that does not parse is rejected at the line where the parse stopped, the reason
    being `<not_whole>: <parser message>` (or not_whole(error, line) when it is a function),
    with the text from there (from the document's start: excerpt_from_start) as excerpt. Data
    after a whole document is rejected too, from where it starts. skip_bom: a leading byte-order
    mark is skipped rather than a parse error.
    """
    line_of = jsonwalk.LineCounter(text)
    start = jsonwalk.skip_ws(text, 1 if skip_bom and text.startswith("\ufeff") else 0)
    try:
        value, end = walk(text, start)
    except jsonwalk.WalkError as exc:
        line = line_of(exc.pos)
        reason = f"{not_whole}: {exc.msg}" if isinstance(not_whole, str) else not_whole(exc, line)
        at = start if excerpt_from_start else exc.pos
        collector.reject(name, line, reason, excerpt(text, at), fmt, json_path)
        return None
    reject_trailing(collector, name, text, end, line_of, fmt)
    return Document(value, start, line_of)


def _locator(text: str, start: int, line_of: jsonwalk.LineCounter) -> Callable[[str], int]:
    # Readers locate the parts of a record in document order: each search starts after the
    # previous match, so locating every part of a large document stays linear.
    cursor = start

    def locate(needle: str) -> int:
        nonlocal cursor
        found = text.find(needle, cursor)
        if found < 0:
            found = text.find(needle, start)
        if found < 0:
            return line_of(start)
        cursor = found + 1  # the same needle again finds its next occurrence
        return line_of(found)

    return locate
