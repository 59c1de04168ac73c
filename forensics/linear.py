"""Regexes that run in linear time on text read from input files: RE2 (google-re2).

Python's `re` backtracks: a pattern whose start can match at every position of a long line and
fail only near its end (`<think>` repeated with no closer, `content=` with a lookahead to the
end of the line) costs time quadratic in the line, minutes for a megabyte. RE2 answers one
search in time linear in the text, whatever the pattern. The cost is the dialect: no
lookaround, no back-references, no possessive quantifiers, `\\z` for Python's `\\Z`, and
`\\w`, `\\d`, `\\s`, `\\b` that know ASCII only (spell out a class where Unicode matters).
google-re2 raises on any of these rather than falling back to `re`, so a pattern compiled here
is RE2 or an import error.

Two costs remain with the caller. The binding encodes the whole text to UTF-8 on every call, so
a loop of `search(text, pos)` over one long text is quadratic: iterate with `finditer` or `sub`,
which encode once. And a sequence of matches (`finditer`, `sub`) is linear only when no failed
start outlives the next match (an unclosed quote before each token): tokenizers whose
alternatives can all start at one place are written to match the unclosed case too.
tests/robustness/test_regex_bounds.py feeds every module-level pattern crafted megabyte inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any, Literal, Protocol, cast, overload

import re2


class Match(Protocol):
    # as typeshed types re.Match: the whole match is a str, a group may be None
    @overload
    def group(self, group: Literal[0] = 0, /) -> str: ...
    @overload
    def group(self, group: int | str, /) -> str | Any: ...
    def groups(self, default: str | None = None) -> tuple[str | None, ...]: ...
    def start(self, group: int = 0) -> int: ...
    def end(self, group: int = 0) -> int: ...
    def span(self, group: int = 0) -> tuple[int, int]: ...
    @property
    def lastindex(self) -> int | None: ...


class Pattern(Protocol):
    @property
    def pattern(self) -> str: ...
    def search(
        self, text: str, pos: int | None = None, endpos: int | None = None
    ) -> Match | None: ...
    def match(
        self, text: str, pos: int | None = None, endpos: int | None = None
    ) -> Match | None: ...
    def fullmatch(
        self, text: str, pos: int | None = None, endpos: int | None = None
    ) -> Match | None: ...
    def finditer(
        self, text: str, pos: int | None = None, endpos: int | None = None
    ) -> Iterator[Match]: ...
    def findall(
        self, text: str, pos: int | None = None, endpos: int | None = None
    ) -> list[Any]: ...  # str, or a tuple of groups, as re's
    def sub(self, repl: str | Callable[[Match], str], text: str, count: int = 0) -> str: ...
    def split(self, text: str, maxsplit: int = 0) -> list[str]: ...


# Python's `\s` and `\w` for text, as RE2 classes (RE2's own are ASCII), to keep a pattern that
# moves from `re` matching what it matched.
SPACE_CHARS = (
    r"\t\n\x0b\f\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
    r"\x{205f}\x{3000}"
)
SPACE = f"[{SPACE_CHARS}]"
WORD_CHARS = r"\pL\pN_"
WORD = f"[{WORD_CHARS}]"

_SURROGATE = re.compile("[\ud800-\udfff]")


class error(ValueError):  # named as re.error, which it stands for
    """A pattern RE2 does not take (look-around, a back-reference, a possessive quantifier)."""


def _options() -> re2.Options:
    options = re2.Options()
    # RE2's DFA cache (8 MiB by default) fills up on Unicode classes under a counted repeat
    # (`[\pL\pN_ ]{1,64}`), and the search falls back to a slower automaton: still linear, but
    # a second for a megabyte. The cache is filled only as states are met.
    options.max_mem = 64 << 20
    # A pattern RE2 refuses raises re2.error; without this RE2 also prints the error to stderr.
    options.log_errors = False
    return options


class _Linear:
    """An RE2 pattern with `re`'s interface for str. RE2 reads UTF-8, which has no lone
    surrogates (JSON's `"\\ud800"` decodes to one): such a text is matched with each surrogate
    read as U+FFFD, one character for one, and the matches are reported on the text itself."""

    __slots__ = ("_re",)

    def __init__(self, pattern: str) -> None:
        try:
            self._re = re2.compile(pattern, _options())
        except re2.error as exc:
            reason = exc.args[0] if exc.args else ""
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise error(f"RE2 does not take this pattern: {reason}") from None

    @property
    def pattern(self) -> str:
        return cast(str, self._re.pattern)

    @property
    def groups(self) -> int:
        return cast(int, self._re.groups)

    def _on(self, text: str, m: Any) -> Any:
        if m is None:
            return None
        spans = [m.span(g) for g in range(self._re.groups + 1)]
        return re2._Match(self._re, text, m.pos, m.endpos, spans)

    def search(self, text: str, pos: int | None = None, endpos: int | None = None) -> Any:
        try:
            return self._re.search(text, pos, endpos)
        except UnicodeEncodeError:
            return self._on(text, self._re.search(_readable(text), pos, endpos))

    def match(self, text: str, pos: int | None = None, endpos: int | None = None) -> Any:
        try:
            return self._re.match(text, pos, endpos)
        except UnicodeEncodeError:
            return self._on(text, self._re.match(_readable(text), pos, endpos))

    def fullmatch(self, text: str, pos: int | None = None, endpos: int | None = None) -> Any:
        try:
            return self._re.fullmatch(text, pos, endpos)
        except UnicodeEncodeError:
            return self._on(text, self._re.fullmatch(_readable(text), pos, endpos))

    def finditer(self, text: str, pos: int | None = None, endpos: int | None = None) -> Any:
        found = self._re.finditer(text, pos, endpos)
        try:
            first = next(found, None)  # the text is encoded here
        except UnicodeEncodeError:
            readable = _readable(text)
            return (self._on(text, m) for m in self._re.finditer(readable, pos, endpos))
        return found if first is None else chain((first,), found)

    def findall(self, text: str, pos: int | None = None, endpos: int | None = None) -> Any:
        try:
            return self._re.findall(text, pos, endpos)
        except UnicodeEncodeError:
            out = []
            for m in self.finditer(text, pos, endpos):
                groups = m.groups(default="")
                out.append(m.group() if not groups else groups[0] if len(groups) == 1 else groups)
            return out

    def sub(self, repl: Any, text: str, count: int = 0) -> str:
        if type(repl) is str and "\\" not in repl:
            try:
                return _sub_literal(self._re, repl, text, count)
            except UnicodeEncodeError:
                pass
        try:
            return cast(str, self._re.sub(repl, text, count))
        except UnicodeEncodeError:
            pieces, end = [], 0
            for n, m in enumerate(self.finditer(text)):
                if count and n == count:
                    break
                pieces += [text[end : m.start()], repl(m) if callable(repl) else m.expand(repl)]
                end = m.end()
            return "".join([*pieces, text[end:]])

    def split(self, text: str, maxsplit: int = 0) -> list[str]:
        try:
            return cast(list[str], self._re.split(text, maxsplit))
        except UnicodeEncodeError:
            pieces, end = [], 0
            for n, m in enumerate(self.finditer(text)):
                if maxsplit and n == maxsplit:
                    break
                pieces += [text[end : m.start()], *m.groups()]
                end = m.end()
            return [*pieces, text[end:]]


def _sub_literal(regexp: Any, repl: str, text: str, count: int) -> str:
    """`sub` with a plain replacement, in UTF-8 bytes: the binding's own builds a match object
    with character offsets per match, a few times the cost on short texts."""
    data = text.encode("utf-8")
    match, anchor = regexp._regexp.Match, re2._Anchor.UNANCHORED
    replacement, pieces = repl.encode("utf-8"), []
    last = pos = n = 0
    end = len(data)
    while pos <= end:
        start, stop = match(anchor, data, pos, end)[0]
        if start < 0:
            break
        pieces += [data[last:start], replacement]
        last, n = stop, n + 1
        if n == count:
            break
        # an empty match steps over one character, as `re` does
        pos = stop if stop > start else stop + re2._re2.CharLenToBytes(data, stop, 1)
        if stop == end and stop == start:
            break
    if not pieces:
        return text
    pieces.append(data[last:])
    return b"".join(pieces).decode("utf-8")


def _readable(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def compile(pattern: str) -> Pattern:
    """The pattern, compiled by RE2. Flags go inline: `(?s)`, `(?i)`, `(?m)`."""
    return cast(Pattern, _Linear(pattern))


def is_linear(value: object) -> bool:
    """Whether value is a pattern compiled here (tests enumerate the modules' patterns)."""
    return isinstance(value, _Linear)
