"""Find JSON objects and Python-repr dicts embedded anywhere in a text log.

Logs print data in two dialects: `json.dumps` (messages a wrapper prints) and Python `repr`
(tau-bench's `print("✅", f"task_id={i}", info)`), and SDK objects as Python prints them
(`ChatCompletion(...)`, LangChain `AIMessage(...)`: sdk_repr), read on their line. An object
may sit after a prefix on its line, and a pretty-printed one may span lines. The scanner
streams: one line at a time, a candidate object is followed across lines only while its braces
are open, and a candidate that never closes is given up after MAX_SPAN_LINES so a stray brace
can not swallow the file.
"""

from __future__ import annotations

import ast
import json
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from forensics import linear
from forensics.ingest.parse import jsonwalk, pyrepr, sdk_repr
from forensics.redact import clip
from forensics.wording import json_error

MAX_SPAN_LINES = 5000
MAX_OBJECT_CHARS = 32 * 1024 * 1024

# A whole string (a backslash escapes the next character) or a brace. A string that does not
# close on its line has an empty group 1 or 2: it matches to the line's end, where a failed
# match would be tried again from every quote inside it.
_STEP = re.compile(r"""'[^'\\]*+(?:\\.[^'\\]*+)*+('?)|"[^"\\]*+(?:\\.[^"\\]*+)*+("?)|[{}]""", re.S)
# An object starts with `{` followed by a key quote, an empty body or the end of the line
# (pretty-printed). This keeps `{name}` placeholders in prose from being taken for data.
_START = re.compile(r"\{(?=\s*(?:[\"'}]|$))")
# How a line that prints a chat message starts (json.dumps or repr of the message dict): its
# role or its text content first.
# RE2: under `re`, a search from every start of a run of blanks is quadratic in the run.
_MESSAGE_START = linear.compile(
    r"""\s*\{\s*["'](?:role|content)["']\s*:\s*(?:["']|null\b|None\b)"""
)
_DECODER = json.JSONDecoder()


@dataclass
class Found:
    """An object that starts on a line: parsed value, or the reason it could not be parsed."""

    line: int
    start: int  # where on its line the object starts
    text: str
    value: Any = None
    error: str | None = None
    # The line it starts on: its text before the object is `prefix`, cut only when asked for (a
    # copy per object would be quadratic in a line of thousands of `{}`).
    line_text: str = field(default="", repr=False)

    @property
    def prefix(self) -> str:
        return self.line_text[: self.start]


@dataclass
class Line:
    """A physical line of the log and the objects that start on it."""

    number: int
    text: str | None  # None: the line was too long to read
    objects: list[Found] = field(default_factory=list)


class _Braces:
    """Brace depth of a candidate object, carried across lines (a string never is: neither
    JSON nor repr strings contain raw newlines)."""

    def __init__(self) -> None:
        self.depth = 0

    def advance(self, s: str, i: int) -> int:
        """Index just past the closing brace, -1 if s ends first, -2 if a string spans lines."""
        # One regex step per brace or whole string: a string's braces and escapes are skipped
        # in C, not a character at a time.
        for m in _STEP.finditer(s, i):
            c = m.group()
            if c == "{":
                self.depth += 1
            elif c == "}":
                self.depth -= 1
                if self.depth == 0:
                    return m.end()
            elif m.group(1) == "" or m.group(2) == "":
                return -2  # a quote that does not close on this line
        return -1


class _Starts:
    """What `_Braces().advance(text, start)` gives for each start on one line: (end, depth).

    A line can hold thousands of `{'` starts that do not close (`{'{'{'…"`), and following
    each of them to the line's end is quadratic. One pass from a start reads every brace after
    it the same way a pass from any of those braces would (their strings pair up alike), so it
    answers for all of them: a start gets its own pass only when an earlier pass read it inside
    a string.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.known: dict[int, tuple[int, int]] = {}

    def advance(self, start: int) -> tuple[int, int]:
        if start not in self.known:
            self._read(start)
        return self.known[start]

    def _read(self, start: int) -> None:
        open_at: list[int] = []  # the braces not closed yet, innermost last
        for m in _STEP.finditer(self.text, start):
            c = m.group()
            if c == "{":
                open_at.append(m.start())
            elif c == "}":
                if open_at:
                    self.known.setdefault(open_at.pop(), (m.end(), 0))
            elif m.group(1) == "" or m.group(2) == "":
                for at in open_at:
                    self.known.setdefault(at, (-2, 0))
                return
        for depth, at in enumerate(reversed(open_at), start=1):
            self.known.setdefault(at, (-1, depth))


def parse_object(text: str) -> tuple[Any, str | None]:
    """Parse JSON, else a Python literal; (value, None) or (None, reason)."""
    try:
        return jsonwalk.loads(text), None
    except json.JSONDecodeError as exc:
        not_json = f"invalid JSON ({json_error(exc.msg, exc.colno)})"
    except RecursionError:
        return None, "object nested too deeply"
    if len(text) > MAX_OBJECT_CHARS:
        return None, not_json
    read, value = pyrepr.loads(text)
    if read:
        return value, None
    try:
        return ast.literal_eval(text), None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, not_json


def scan(lines: Iterator[tuple[int, str | None]]) -> Iterator[Line]:
    """Lines of the log, each with the objects that start on it.

    Lines swallowed by a multi-line object are not yielded on their own.
    """
    pending: deque[tuple[int, str | None]] = deque()
    source = iter(lines)

    def next_line() -> tuple[int, str | None] | None:
        if pending:
            return pending.popleft()
        return next(source, None)

    while (item := next_line()) is not None:
        number, text = item
        # Printed SDK objects (sdk_repr) come first: the dicts inside them are theirs.
        sdk = sdk_repr.find(text) if text is not None and ("(" in text or "=" in text) else []
        if text is None or ("{" not in text and not sdk):
            yield Line(number, text)
            continue
        if sdk and (sdk[-1][3] or "").endswith(sdk_repr.UNCLOSED):
            sdk[-1] = _sdk_across_lines(text, sdk[-1], next_line, pending)
        line = Line(number, text)
        starts = _Starts(text)
        pos = 0
        first = True
        while (m := _START.search(text, pos)) is not None:
            start = m.start()
            # The first candidate tries the readers on the rest of the line before matching
            # braces (most lines hold one object). Later ones match braces first, and read only
            # what they enclose: each failed read of the rest of the line costs its length (a
            # JSON error counts the lines before it), so a line of failing candidates would be
            # quadratic. A JSON object or repr dict ends at its closing brace, so this finds
            # what reading the rest would.
            braces = _Braces()
            end, braces.depth = (-3, 0) if first else starts.advance(start)
            rest = text[start:] if first else text[start:end] if end >= 0 else ""
            first = False
            # Fast path: a complete JSON value from here on this line.
            try:
                value, read_to = _DECODER.raw_decode(rest) if rest else (None, -1)
            except (ValueError, RecursionError):  # ValueError: also an over-long integer
                value, read_to = None, -1
            if read_to != -1:
                end = start + read_to
                line.objects.append(Found(number, start, text[start:end], value, None, text))
                pos = end
                continue
            if text[-1] == "}" and len(text) - start <= MAX_OBJECT_CHARS and end in (-3, len(text)):
                # A repr dict that ends the line (tau-bench's `✅ task_id=N {info}`): when the
                # rest of the line reads as one value, its brace closes there, and matching
                # braces first would only find that out again.
                read, value = pyrepr.loads(text[start:])
                if read:
                    line.objects.append(Found(number, start, text[start:], value, None, text))
                    break
            if end == -3:
                end, braces.depth = starts.advance(start)
            if end >= 0:
                chunk = text[start:end]
                value, error = parse_object(chunk)
                line.objects.append(Found(number, start, chunk, value, error, text))
                pos = end
                continue
            if end == -2:
                if not text[:start].strip() and _MESSAGE_START.match(text):
                    # A message line cut short (a string in it does not close on its line):
                    # a record lost, said so, not a stray brace in prose.
                    reason = "message cut short: a string in it does not close on its line"
                    shown = clip(text, 2000, start)  # a window: not the rest of its line
                    line.objects.append(Found(number, start, shown, None, reason, text))
                    break
                pos = start + 1
                continue
            # The object continues on the following lines.
            parts = [text[start:]]
            consumed: list[tuple[int, str | None]] = []
            size = len(parts[0])
            outcome = "limit"
            while len(consumed) < MAX_SPAN_LINES and size < MAX_OBJECT_CHARS:
                nxt = next_line()
                if nxt is None:
                    outcome = "eof"
                    break
                consumed.append(nxt)
                if nxt[1] is None:
                    break
                end = braces.advance(nxt[1], 0)
                if end == -2:
                    outcome = "not-an-object"
                    break
                if end >= 0:
                    parts.append(nxt[1][:end])
                    outcome = "closed"
                    break
                parts.append(nxt[1])
                size += len(nxt[1])
            if outcome == "closed":
                chunk = "\n".join(parts)
                value, error = parse_object(chunk)
                line.objects.append(Found(number, start, chunk, value, error, text))
                # The rest of the closing line is ordinary text, read again on its own.
                last_number, last_text = consumed[-1]
                rest = (last_text or "")[end:]
                if rest.strip():
                    pending.appendleft((last_number, rest))
                break
            if outcome != "not-an-object":
                reason = (
                    "object never closes: the file ends inside it"
                    if outcome == "eof"
                    else f"object does not close within {MAX_SPAN_LINES} lines; skipped"
                )
                line.objects.append(
                    Found(number, start, clip("\n".join(parts), 2000), None, reason, text)
                )
            # Everything after the start line is read again as ordinary lines.
            pending.extendleft(reversed(consumed))
            break
        if sdk:
            _merge_sdk(line, text, sdk)
        yield line


def _merge_sdk(line: Line, text: str, sdk: list[tuple[int, int, Any, str | None]]) -> None:
    """Printed SDK objects and the dicts of the same line, each record read once.

    A dict that parsed is the record and the SDK text inside it (a message quoted in a string)
    is not; a dict that failed because SDK objects sit inside it (LangGraph's
    `{'messages': [HumanMessage(...), AIMessage(...)]}`) is read through those objects; the
    dicts inside an SDK object (its response_metadata) are that object's.
    """
    spans = [(f.start, f.start + len(f.text), f) for f in line.objects]
    kept = [
        (s, e, v, r)
        for s, e, v, r in sdk
        if not any(fs <= s and e <= fe and f.error is None for fs, fe, f in spans)
    ]
    objects = [
        f
        for fs, fe, f in spans
        if not any(s <= fs and fe <= e for s, e, _v, _r in kept)
        and not (f.error is not None and any(fs <= s and e <= fe for s, e, _v, _r in kept))
    ]
    objects += [Found(line.number, s, text[s:e], v, r, text) for s, e, v, r in kept]
    line.objects = sorted(objects, key=lambda f: f.start)


def _sdk_across_lines(
    text: str,
    found: tuple[int, int, Any, str | None],
    next_line: Callable[[], tuple[int, str | None] | None],
    pending: deque[tuple[int, str | None]],
) -> tuple[int, int, Any, str | None]:
    """An SDK object a pretty-printer broke over lines, read whole from its first line.

    The lines it spans are consumed; the rest of its closing line is read again on its own.
    When it never closes, the lines are put back and the object stays a reject.
    """
    start = found[0]
    joined = text[start:]
    consumed: list[tuple[int, str | None]] = []
    while len(consumed) < sdk_repr.MAX_LINES and len(joined) < sdk_repr.MAX_CHARS:
        nxt = next_line()
        if nxt is None:
            break
        consumed.append(nxt)
        last_number, last_text = nxt
        if last_text is None:
            break
        joined += "\n" + last_text
        end = sdk_repr.end_of(joined)
        if end >= 0:
            value, error = sdk_repr.parse(joined[:end])
            rest = last_text[end - (len(joined) - len(last_text)) :]
            if rest.strip():
                pending.appendleft((last_number, rest))
            return start, len(text), value, error
    pending.extendleft(reversed(consumed))
    return found
