"""A position-aware walk over a JSON document, built on the C decoder.

Benchmarks rewrite their checkpoint files in place, so a file killed mid-write is a valid prefix
followed by nothing. `json.load` rejects it whole; walking the top-level array element by element
with `raw_decode` keeps every complete record and says where the cut is. The walk also reports
the offset of each element, which becomes the source line of each message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

_DECODER = json.JSONDecoder()
TRAILING = "data after the end of the JSON document"
_WS = " \t\n\r"


class WalkError(Exception):
    def __init__(self, pos: int, msg: str) -> None:
        super().__init__(msg)
        self.pos = pos
        self.msg = msg


def skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    return pos


def value(text: str, pos: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise WalkError(exc.pos, exc.msg) from None
    except RecursionError:
        raise WalkError(pos, "nested too deeply") from None


def _expect(text: str, pos: int, char: str) -> int:
    pos = skip_ws(text, pos)
    if pos >= len(text):
        raise WalkError(pos, f"file ends where {char!r} was expected")
    if text[pos] != char:
        raise WalkError(pos, f"expected {char!r}")
    return pos + 1


Walker = Callable[[str, int], tuple[Any, int]]


def obj(
    text: str, pos: int, walkers: dict[str, Walker] | None = None
) -> tuple[dict[str, Any], int]:
    """An object; values of keys in walkers are read by their walker, the rest by raw_decode."""
    walkers = walkers or {}
    pos = _expect(text, pos, "{")
    out: dict[str, Any] = {}
    pos = skip_ws(text, pos)
    if pos < len(text) and text[pos] == "}":
        return out, pos + 1
    while True:
        pos = skip_ws(text, pos)
        key, pos = value(text, pos)
        if not isinstance(key, str):
            raise WalkError(pos, "object key is not a string")
        pos = skip_ws(text, _expect(text, pos, ":"))
        walker = walkers.get(key)
        out[key], pos = walker(text, pos) if walker else value(text, pos)
        pos = skip_ws(text, pos)
        if pos >= len(text):
            raise WalkError(pos, "file ends inside an object")
        if text[pos] == "}":
            return out, pos + 1
        pos = _expect(text, pos, ",")


def elements(text: str, pos: int, walker: Walker = value) -> Iterator[tuple[int, Any, int]]:
    """(start offset, value, end offset) of each element of the array at pos."""
    pos = _expect(text, pos, "[")
    pos = skip_ws(text, pos)
    if pos < len(text) and text[pos] == "]":
        return
    while True:
        pos = skip_ws(text, pos)
        start = pos
        item, pos = walker(text, pos)
        yield start, item, pos
        pos = skip_ws(text, pos)
        if pos >= len(text):
            raise WalkError(pos, "file ends inside an array")
        if text[pos] == "]":
            return
        pos = _expect(text, pos, ",")


def arrays(text: str, pos: int, walker: Walker = value) -> Iterator[tuple[int, Any, int]]:
    """Elements of the array at pos and of arrays that follow it back to back (a file written
    twice): the whole file is read. Anything else after the last array raises WalkError at
    its start, so the caller rejects it instead of ignoring it."""
    while True:
        close = skip_ws(text, _expect(text, pos, "["))
        for item in elements(text, pos, walker):
            close = skip_ws(text, item[2])
            yield item
        pos = skip_ws(text, close + 1)
        if pos >= len(text):
            return
        if text[pos] != "[":
            raise WalkError(pos, TRAILING)


def trailing(text: str, end: int) -> int | None:
    """Where non-blank data starts after a document that ended at end (None: nothing)."""
    pos = skip_ws(text, end)
    return pos if pos < len(text) else None


def positioned_array(text: str, pos: int) -> tuple[list[tuple[int, Any]], int]:
    """An array as [(start offset, element)], for walkers that need element positions."""
    out: list[tuple[int, Any]] = []
    end = skip_ws(text, _expect(text, pos, "["))  # an empty array closes right here
    for start, item, stop in elements(text, pos):
        out.append((start, item))
        end = stop
    # `elements` returned only after seeing the closing bracket after `end`.
    return out, skip_ws(text, end) + 1


def is_jsonl(lines: Iterator[tuple[int, str | None]], kinds: tuple[type, ...] = (dict,)) -> bool:
    """One JSON value per line: the first line is more than a lone bracket, and one of the
    first lines is a whole value of these kinds starting at column 0.

    A pretty-printed document opens with a lone `{` or `[`, and its complete inner values are
    indented. Probing several lines keeps a JSONL file whose first lines are broken (cut by a
    crashed writer) a JSONL file, so the bad lines do not hide the rest.
    """
    seen = 0
    for _number, text in lines:
        if text is None:
            return True  # a line too long to read: JSONL, and that line is rejected
        stripped = text.strip()
        if not stripped:
            continue
        seen += 1
        if seen == 1 and stripped in ("{", "["):
            return False
        if text[:1] in "{[":
            try:
                if isinstance(json.loads(text), kinds):
                    return True
            except (json.JSONDecodeError, RecursionError):
                pass
        if seen >= PROBE_LINES:
            return False
    return False


PROBE_LINES = 20


def skip_broken_lead(head: str) -> str:
    """The head from its first whole JSON-object line when broken lines come before it in a
    file that is otherwise one JSON object per line, so sniffers see a record, not debris."""
    lines = head.split("\n")[:PROBE_LINES]
    if not lines or lines[0].lstrip("\ufeff \t\r")[:1] in "{[":
        return head
    whole = []
    for i, line in enumerate(lines[:-1]):  # the last line may be cut by the head's end
        if line.startswith("{"):
            try:
                if isinstance(json.loads(line), dict):
                    whole.append(i)
            except (json.JSONDecodeError, RecursionError):
                pass
    if len(whole) < 2 or whole[0] >= len(whole):
        return head  # not mostly JSON lines: a text log that quotes an object now and then
    return "\n".join(head.split("\n")[whole[0] :])


class LineCounter:
    """Offset -> 1-based line, linear over a walk that visits offsets in increasing order."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.line = 1

    def __call__(self, offset: int) -> int:
        if offset < self.offset:
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+("?)|[{}\[\]:,]')
_PUNCTUATION = re.compile(r"[{}\[\]:,]")


def _tokens(text: str, pos: int) -> Iterator[tuple[str, int]]:
    """(token, start) of the strings and punctuation from pos. A string that does not close
    (group 1 empty) is matched to where it stops and its inside read as if its quote were no
    token: every quote in there opens a string that stops at the same place. Failing to match
    it instead would rescan the rest of the head from each of those quotes (quadratic)."""
    while (m := _TOKEN.search(text, pos)) is not None:
        if m.group(1) == "":
            for inner in _PUNCTUATION.finditer(text, m.start() + 1, m.end()):
                yield inner.group(), inner.start()
            pos = m.end()
            continue
        yield m.group(), m.start()
        pos = m.end()


# (text, start, keys) of the last call: format detection asks several sniffers (tau2 results,
# tau2 simulation, Gemini) about the same head.
_last_keys: tuple[str, int, list[str]] = ("", -1, [])


def top_level_keys(text: str, start: int = 0) -> list[str]:
    """Keys of the JSON object that starts at or after start, read from a possibly cut head.

    Format detection sees only the first bytes of a file, where a large record does not end;
    the keys are read token by token instead of parsing the whole value. Callers only read
    the list.
    """
    global _last_keys
    if _last_keys[1] == start and (text is _last_keys[0] or text == _last_keys[0]):
        return _last_keys[2]
    keys = _top_level_keys(text, start)
    _last_keys = (text, start, keys)
    return keys


def _top_level_keys(text: str, start: int) -> list[str]:
    brace = text.find("{", start)
    if brace < 0:
        return []
    keys: list[str] = []
    depth = 0
    pending: str | None = None
    tokens = _tokens(text, brace)
    while (token := next(tokens, None)) is not None:
        tok, start = token
        if tok in "{[":
            if depth == 1:  # a value: when it parses, step over it in C (it holds no key)
                try:
                    end = _DECODER.raw_decode(text, start)[1]
                except (ValueError, RecursionError):
                    pass
                else:
                    tokens = _tokens(text, end)
                    pending = None
                    continue
            depth += 1
        elif tok in "}]":
            depth -= 1
            if depth == 0:
                break
        elif tok == ":":
            if depth == 1 and pending is not None:
                keys.append(pending)
        elif tok != ",":
            pending = tok[1:-1] if depth == 1 else None
            continue
        pending = None
    return keys
