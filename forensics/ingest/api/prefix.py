"""json.loads for the lines of an agent-loop capture, without parsing the history again.

Each request of an agent loop re-sends the conversation so far: request k+1's `messages` array
starts with the exact text of request k's, then adds the assistant message and the tool results.
Parsing every line whole parses the history once per later request (quadratic in the length of
a conversation), and every later step (linking, request keys) then meets a fresh copy of each
old message. `PrefixParser` remembers, for recent lines, the text of their `messages` array and
the parsed messages; a line whose array starts with one of those texts is parsed without it, and
the remembered message objects are put back in front of the new ones. The value is equal to
`json.loads(line)`; the old messages are shared objects, which lets later steps cache per
message by identity (they never mutate them).

Byte equality of the text makes the reuse exact: JSON parsing is context free, so the same
complete values at the start of an array parse to the same messages wherever they appear. The
array is found where the line first spells `"messages":` (a quote not preceded by a backslash
is a string delimiter, and a string followed by a colon is a key); the rest of the line is
parsed with a sentinel in its place, and the value is used only if the sentinel ends up as the
messages of the request body. A line where anything does not go as planned is parsed whole with
json.loads, which also gives the exact error for invalid lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

from forensics.ingest.parse import jsonwalk

_KEY = '"messages":'
_TOOLS = '"tools":'
_MESSAGES = "messages"
_TOOLS_KEY = "tools"
_MAX_TOOL_LISTS = 8
_WS = " \t\n\r"
# Shortest array text worth remembering: also the length of the lookup probe.
_PROBE = 64
# Text kept for lines not continued yet; the oldest goes first past it (a long run of
# parallel conversations only parses more, it never reads differently).
_MAX_KEPT_CHARS = 8 * 1024 * 1024

_decoder = json.JSONDecoder()
# The decoder's C scanner, which JSONDecoder.__init__ sets and typeshed does not declare: the
# value at an offset and where it ends, StopIteration where none starts.
_scan: Callable[[str, int], tuple[Any, int]] = vars(_decoder)["scan_once"]


class _Entry:
    __slots__ = ("messages", "text")

    def __init__(self, text: str, messages: list[Any]) -> None:
        self.text = text
        self.messages = messages


class PrefixParser:
    """Parses the lines of one file in order; `loads(line)` == `json.loads(line)`."""

    def __init__(self) -> None:
        # probe (first _PROBE chars of the array text) -> entries, oldest first
        self._index: dict[str, list[_Entry]] = {}
        self._order: dict[int, _Entry] = {}  # id -> entry, in insertion order, for eviction
        self._kept = 0
        # Unforgeable stand-in for the messages while the rest of the line is parsed.
        self._sentinel = "forensics-prefix-" + os.urandom(12).hex()
        self.reused_chars = 0
        self._tool_lists: list[tuple[str, Any]] = []

    def loads(self, line: str) -> Any:
        try:
            return self._loads(line)
        except (ValueError, RecursionError, IndexError, StopIteration):
            pass
        return jsonwalk.loads(line)

    def _loads(self, line: str) -> Any:
        start = _value_at(line, _KEY)
        if start < 0 or line[start] != "[" or self._sentinel in line:
            return json.loads(line)
        entry = self._match(line, start)
        if entry is not None:
            messages = list(entry.messages)  # all dicts: only those are remembered
            pos = start + len(entry.text)
            self.reused_chars += len(entry.text)
        else:
            messages = []
            pos = start + 1
        known = len(messages)
        last, end = _elements(line, pos, messages, first=entry is None)
        marker = f'"{self._sentinel}"'
        tools, tools_at, tools_end = self._tools(line, end)
        if tools_at < 0:
            rest = f"{line[:start]}[{marker}]{line[end:]}"
        else:
            rest = f"{line[:start]}[{marker}]{line[end:tools_at]}{marker}{line[tools_end:]}"
        value = json.loads(rest)
        holder = self._find(value, 0)
        if holder is None:
            return json.loads(line)
        holder[_MESSAGES][:] = messages
        if tools_at >= 0:
            if holder.get(_TOOLS_KEY) != self._sentinel:  # tools of another object
                return json.loads(line)
            holder[_TOOLS_KEY] = tools
        if last - start >= _PROBE and all(type(m) is dict for m in messages[known:]):
            self._remember(_Entry(line[start:last], messages))
        return value

    def _tools(self, line: str, after: int) -> tuple[Any, int, int]:
        """(value, start, end) of the tool list when it follows the messages; start -1 when
        it does not. The same tool schemas go with every request of a run: each text is
        parsed once."""
        at = _value_at(line, _TOOLS, after)
        if at < 0 or line[at] != "[":
            return None, -1, -1
        for text, tools in self._tool_lists:
            if line.startswith(text, at):
                self.reused_chars += len(text)
                return tools, at, at + len(text)
        tools, end = _scan(line, at)
        if len(self._tool_lists) >= _MAX_TOOL_LISTS:
            self._tool_lists.pop(0)
        self._tool_lists.append((line[at:end], tools))
        return tools, at, end

    def _match(self, line: str, start: int) -> _Entry | None:
        bucket = self._index.get(line[start : start + _PROBE])
        best: _Entry | None = None
        for entry in bucket or ():
            if (best is None or len(entry.text) > len(best.text)) and line.startswith(
                entry.text, start
            ):
                best = entry
        if best is not None:
            self._forget(best)  # its line is continued: the new line's entry replaces it
        return best

    def _find(self, value: Any, depth: int) -> dict[str, Any] | None:
        """The request body: the dict whose messages hold the sentinel. It sits a few levels
        down at most."""
        if type(value) is dict and depth < 6:
            inner = value.get(_MESSAGES)
            if type(inner) is list and len(inner) == 1 and inner[0] == self._sentinel:
                return value
            for inner in value.values():
                if type(inner) is dict and (found := self._find(inner, depth + 1)) is not None:
                    return found
        return None

    def _remember(self, entry: _Entry) -> None:
        self._index.setdefault(entry.text[:_PROBE], []).append(entry)
        self._order[id(entry)] = entry
        self._kept += len(entry.text)
        while self._kept > _MAX_KEPT_CHARS and self._order:
            self._forget(next(iter(self._order.values())))

    def _forget(self, entry: _Entry) -> None:
        self._order.pop(id(entry), None)
        bucket = self._index[entry.text[:_PROBE]]
        bucket.remove(entry)
        if not bucket:
            del self._index[entry.text[:_PROBE]]
        self._kept -= len(entry.text)


def _value_at(line: str, key: str, after: int = 0) -> int:
    """Where the value of the first `key` at or after `after` starts, or -1. Another spelling
    or a second copy of the key can not mislead: the parse puts the sentinel where JSON says,
    and a line whose request body does not end up holding it is read whole."""
    at = line.find(key, after)
    if at <= 0 or line[at - 1] == "\\":
        return -1
    return _skip(line, at + len(key))


def _skip(line: str, pos: int) -> int:
    while line[pos] in _WS:
        pos += 1
    return pos


def _elements(line: str, pos: int, out: list[Any], *, first: bool) -> tuple[int, int]:
    """Parse array elements from pos (after `[` when first, else after a complete element)
    into out; returns (end of the last element, end of the array after its `]`)."""
    last = pos
    pos = _skip(line, pos)
    if first:
        if line[pos] == "]":
            return last, pos + 1
    else:
        if line[pos] == "]":
            return last, pos + 1
        if line[pos] != ",":
            raise ValueError("not an array continuation")
        pos = _skip(line, pos + 1)
    while True:
        try:
            value, last = _scan(line, pos)
        except StopIteration:
            raise ValueError("no value") from None
        out.append(value)
        pos = _skip(line, last)
        if line[pos] == "]":
            return last, pos + 1
        if line[pos] != ",":
            raise ValueError("expected , or ]")
        pos = _skip(line, pos + 1)


def iter_loads(lines: Iterator[str]) -> Iterator[Any]:
    """json.loads of each line, through one PrefixParser (for benchmarks and tests)."""
    parser = PrefixParser()
    for line in lines:
        yield parser.loads(line)
