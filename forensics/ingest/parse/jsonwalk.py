"""A position-aware walk over a JSON document, built on the C decoder.

Benchmarks rewrite their checkpoint files in place, so a file killed mid-write is a valid prefix
followed by nothing. `json.load` rejects it whole; walking the top-level array element by element
with `raw_decode` keeps every complete record and says where the cut is. The walk also reports
the offset of each element, which becomes the source line of each message.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()
# Reads a value only to find its end: integers are not converted (int() of a long digit string
# is what Python limits), every other token is checked as usual.
_SKIPPER = json.JSONDecoder(parse_int=len)
_DIGITS = re.compile(r"\d+")
TRAILING = "data after the end of the JSON document"
_WS = " \t\n\r"


class WalkError(Exception):
    def __init__(self, pos: int, msg: str) -> None:
        super().__init__(msg)
        self.pos = pos
        self.msg = msg


class TooLong(WalkError):
    """A value that is JSON but holds an integer longer than Python converts
    (sys.int_max_str_digits): that value is unreadable, the walk can go on after it."""


@dataclass(frozen=True)
class Unreadable:
    """An array element walked over because a value inside it can not be read (TooLong):
    what `elements` yields in its place, for the reader to reject that record alone."""

    reason: str
    pos: int  # where the unreadable value starts


def _too_long(text: str, pos: int) -> tuple[int, str]:
    """(offset, reason) of the first integer past Python's digit limit at or after pos."""
    limit = sys.get_int_max_str_digits()
    # Each run of digits is looked at once (a counted repeat would rescan shorter runs).
    for m in _DIGITS.finditer(text, pos):
        if m.end() - m.start() > limit:
            return m.start(), (
                f"an integer of {m.end() - m.start():,} digits, more than Python reads ({limit:,})"
            )
    return pos, f"a number Python can not read (more than {limit:,} digits)"


def loads(text: str | bytes) -> Any:
    """json.loads whose every failure on a text is a JSONDecodeError: an integer longer than
    Python converts is one more way for a record not to parse, with its position."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # the integer digit limit, or bytes that are not text
        if isinstance(text, bytes):
            raise json.JSONDecodeError(f"not text ({exc})", "", 0) from None
        at, reason = _too_long(text, 0)
        raise json.JSONDecodeError(reason, text, at) from None


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
    except ValueError:  # an integer past the digit limit: TooLong when the rest is JSON
        skip(text, pos)
        raise TooLong(*_too_long(text, pos)) from None


Walker = Callable[[str, int], tuple[Any, int]]


def walked(text: str, pos: int, walker: Walker = value) -> tuple[Any, int]:
    """walker's (value, end), or an Unreadable and the value's end when the value is JSON but
    holds an integer too long to read, wherever it sits inside: a value lost, not the walk."""
    try:
        return walker(text, pos)
    except TooLong as exc:
        return Unreadable(exc.msg, exc.pos), skip(text, pos)


def skip(text: str, pos: int) -> int:
    """Where the JSON value at pos ends, its integers not converted (so none is too long);
    raises WalkError where it is not JSON."""
    try:
        return _SKIPPER.raw_decode(text, pos)[1]
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
        item, pos = walked(text, pos, walker)
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
        if isinstance(item, Unreadable):  # inside a record: the record is what is unreadable
            raise TooLong(item.pos, item.reason)
        out.append((start, item))
        end = stop
    # `elements` returned only after seeing the closing bracket after `end`.
    return out, skip_ws(text, end) + 1


# What a line of a file is, for telling JSON lines from documents and text.
_BROKEN, _WHOLE, _UNREADABLE = 0, 1, 2


def _line_kind(line: str, kinds: tuple[type, ...]) -> int:
    """_WHOLE: the line is one JSON value of these kinds starting at column 0; _UNREADABLE: it
    is one all the same, with an integer in it too long for Python to convert; else _BROKEN."""
    if line[:1] not in ("{", "["):
        return _BROKEN
    try:
        return _WHOLE if isinstance(json.loads(line), kinds) else _BROKEN
    except (json.JSONDecodeError, RecursionError):
        return _BROKEN
    except ValueError:  # the integer digit limit
        try:
            whole = skip(line, 0) == len(line.rstrip())
        except WalkError:
            return _BROKEN
        return _UNREADABLE if whole and (dict if line[0] == "{" else list) in kinds else _BROKEN


def _whole(line: str, kinds: tuple[type, ...]) -> bool:
    return _line_kind(line, kinds) != _BROKEN


def _opens_document(first: str, second: str) -> bool:
    """A first line that opens a value (a lone bracket, or a value left open) and a next line
    indented into it or closing it: the start of a pretty-printed document, not a JSONL record
    cut short."""
    return first[:1] in ("{", "[") and (second[:1] in (" ", "\t") or second.strip() in ("}", "]"))


def is_jsonl(lines: Iterator[tuple[int, str | None]], kinds: tuple[type, ...] = (dict,)) -> bool:
    """One JSON value per line: some line is a whole value of these kinds starting at column 0,
    and the file does not open as a pretty-printed document.

    A document opens an array on its first line (a lone `[`, or `[` and its first element), or
    opens an object there with indented lines after it (pretty-printed: its complete inner
    values are indented). Any number of broken lines may come before the first whole one
    (records cut by a crashed writer, a traceback printed into the file): they are the
    reader's rejects, and they do not hide the records after them.
    """
    first: str | None = None
    for _number, text in lines:
        if text is None:
            return True  # a line too long to read: JSONL, and that line is rejected
        if not text or text.isspace():
            continue
        if first is None:
            first = text.lstrip("\ufeff")
            if _whole(first, kinds):
                return True
            if first[:1] == "[":
                return False  # an array opened: a document (one element per line, maybe)
            continue
        if _whole(text, kinds):
            return True
        if _opens_document(first, text):
            return False
        first = ""  # only the line right after the first can show a document's indentation
    return False


def skip_broken_lead(head: str) -> str:
    """The head from its first whole JSON-object line when broken lines (any number of them)
    come before it in a file that is otherwise one JSON object per line, so sniffers see a
    record, not debris."""
    lines = head.split("\n")
    complete = lines[:-1]  # the last line may be cut by the head's end
    kinds = [_line_kind(line, (dict,)) for line in complete]
    whole = [i for i, kind in enumerate(kinds) if kind != _BROKEN]
    if not whole or whole[0] == 0:
        return head
    first = whole[0]
    lead = [line for line in complete[:first] if line.strip()]
    if not lead:
        return head
    opening = lead[0].lstrip("\ufeff \t\r")
    if opening[:1] == "[" or (len(lead) > 1 and _opens_document(opening, lead[1])):
        return head  # a document's body, whatever whole lines it holds further down
    # JSON lines, not a text log that quotes an object now and then (a tau-bench console log
    # prints every message as one, with its log lines between them): either whole lines
    # outnumber the broken lead among the first lines, or, however long the lead, nearly every
    # line from the first whole one on is whole.
    probe = [i for i in whole if i < PROBE_LINES]
    rest = sum(1 for line in complete[first:] if line.strip())
    # One whole line is enough when nothing around it is prose: every broken line opens an
    # object (records damaged, as in a two-record file whose first is cut) and every line
    # after the first whole one is whole too.
    records_only = rest == len(whole) and all(line.lstrip()[:1] == "{" for line in lead)
    if (len(whole) < 2 and not records_only) or (
        first >= len(probe) and (rest - len(whole)) * MOSTLY > rest
    ):
        return head
    # The sniffers read the first record they are shown: one they can read, when there is one.
    start = next((i for i in whole if kinds[i] == _WHOLE), first)
    return "\n".join(lines[start:])


def past_broken_lead(head: str, lines: Iterator[tuple[int, str | None]], size: int) -> str | None:
    """When every line of a head is a JSON line cut short (a lead of broken records longer
    than the head), the text from the first whole JSON-object line further on (about size
    characters of it), for the sniffers; None when the head is anything else or no whole line
    follows."""
    complete = [line for line in head.split("\n")[:-1] if line.strip()]
    if len(complete) < 2 or _opens_document(complete[0].lstrip("\ufeff"), complete[1]):
        return None
    if any(line[:1] != "{" or _whole(line, (dict,)) for line in complete):
        return None
    found: list[str] = []
    held = 0
    for _number, text in lines:
        if found or (text is not None and _line_kind(text, (dict,)) == _WHOLE):
            found.append(text or "")
            held += len(found[-1]) + 1
            if held >= size:
                break
    return "\n".join(found) if found else None


PROBE_LINES = 20
# After a lead longer than the probe, at most one line in MOSTLY may be other than whole JSON.
MOSTLY = 4


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
