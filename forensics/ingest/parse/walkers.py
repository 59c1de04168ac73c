"""Array walkers for the agent-log readers: elements with their offsets (for source lines),
and any other value read as it is, so a field of the wrong type is the record's reject, not
a walk error that costs the whole file."""

from __future__ import annotations

from typing import Any

from forensics.ingest.parse import jsonwalk


def positioned(walker: jsonwalk.Walker = jsonwalk.value) -> jsonwalk.Walker:
    """A walker returning [(start offset, element)] for an array, each element read by walker
    (a jsonwalk.Unreadable for one holding an integer too long to read); a value that is not
    an array comes back as it is."""

    def walk(text: str, pos: int) -> tuple[Any, int]:
        if text[pos : pos + 1] != "[":
            return jsonwalk.value(text, pos)
        out: list[tuple[int, Any]] = []
        last = None
        for start, item, stop in jsonwalk.elements(text, pos, walker):
            out.append((start, item))  # a jsonwalk.Unreadable too: its reader rejects it
            last = stop
        if last is None:  # an empty array: "[", blanks, "]"
            last = pos + 1
        # elements() returned only after seeing the closing bracket.
        return out, jsonwalk.skip_ws(text, last) + 1

    return walk


def items(doc: dict[str, Any], key: str) -> list[tuple[int, Any]] | None:
    """The walked array under key ([] when absent), or None when the key holds another value."""
    value = doc.get(key)
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, tuple) for v in value):
        return value
    return None
