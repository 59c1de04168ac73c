"""Crafted inputs for a regex, built from the pattern itself.

A backtracking engine goes quadratic (or worse) where a pattern's prefix can start a match at
every position of a long text and fail only near its end: `<think>` repeated with no closer,
`"` followed by a megabyte without the closing quote, `content=` whose lookahead runs to the
end of the line every time. Such texts are the pattern's own prefixes, repeated or followed by
a long run: this module walks the parsed pattern (Python's `re` parser) for short strings that
match a prefix of it, then repeats and extends them to a given size. Used by
tests/robustness/test_regex_bounds.py and benchmarks/fuzz.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import zip_longest
from re import _constants as c
from re import _parser as sre_parse

# Characters tried where the pattern asks for "any but …" or a class: the first one accepted.
_ALPHABET = "a0 _-.:,=\"'\\/<>{}[]()|\n\t"
_CAP = 12  # alternatives kept per node: enough for every branch of the patterns here
_ONE_CHAR = (c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN, c.CATEGORY)


def _category(cat: object) -> str | None:
    name = str(cat)
    if "NOT_DIGIT" in name or "NOT_WORD" in name:
        return " "
    if "NOT_SPACE" in name or "NOT_LINEBREAK" in name:
        return "a"
    if "DIGIT" in name:
        return "0"
    if "WORD" in name:
        return "a"
    if "SPACE" in name:
        return " "
    return "a"


def _accepts(items: list[tuple[object, object]], ch: str) -> bool:
    """Whether the character class `items` (an IN node's list) matches `ch`."""
    negate = False
    hit = False
    for op, av in items:
        if op is c.NEGATE:
            negate = True
        elif op is c.LITERAL:
            hit = hit or ord(ch) == av
        elif op is c.RANGE:
            lo, hi = av  # type: ignore[misc]
            hit = hit or lo <= ord(ch) <= hi
        elif op is c.CATEGORY:
            hit = hit or bool(re.fullmatch(_CATEGORY_RE.get(str(av), "."), ch))
    return hit != negate


_CATEGORY_RE = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


def _chars(op: object, av: object, literals: str) -> list[str]:
    """Characters the node accepts: a letter, and the pattern's own punctuation (a quote after
    a backslash is what keeps an escaped string open)."""
    if op is c.LITERAL:
        return [chr(av)]  # type: ignore[arg-type]
    if op is c.CATEGORY:
        return [_category(av) or "a"]
    tried = "a" + literals + _ALPHABET
    if op is c.NOT_LITERAL:
        accepted = [ch for ch in tried if ord(ch) != av]
    elif op is c.IN:
        accepted = [ch for ch in tried if _accepts(av, ch)]  # type: ignore[arg-type]
    else:  # ANY
        accepted = [ch for ch in tried if ch != "\n"]
    return list(dict.fromkeys(accepted))[:3] or ["a"]


def _merge(lists: list[list[str]]) -> list[str]:
    """Round robin, so that a cap keeps some of every alternative."""
    out = [s for group in zip_longest(*lists) for s in group if s is not None]
    return _dedupe(out)


def _dedupe(strings: list[str]) -> list[str]:
    return list(dict.fromkeys(strings))[:_CAP]


class _Walk:
    def __init__(self, literals: str) -> None:
        self.literals = literals

    def node(self, op: object, av: object) -> tuple[list[str], list[str]]:
        """(strings matching the node whole, strings matching a start of it), a few of each."""
        if op in _ONE_CHAR:
            # a run of literals is one step: `<thi` is no more a threat than `<think>`
            return self.chars(op, av), []
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, high, sub = av  # type: ignore[misc]
            full, starts = self.seq(sub)
            once = full or [""]
            n = max(low, 1) if high >= 1 else 0
            whole = _merge([[f * low for f in once], [f * n for f in once]])
            return whole, _merge([[once[0] * low + s for s in starts], whole])
        if op in (c.SUBPATTERN, c.ATOMIC_GROUP):
            return self.seq(av[-1] if op is c.SUBPATTERN else av)  # type: ignore[index]
        if op is c.BRANCH:
            walked = [self.seq(alt) for alt in av[1]]  # type: ignore[index]
            return _merge([f for f, _ in walked]), _merge([s for _, s in walked])
        if op is c.ASSERT:
            # A lookahead consumes nothing; the text it wants is a start worth trying on its own.
            full, starts = self.seq(av[1])  # type: ignore[index]
            return [""], _merge([starts, full])
        # anchors, negative lookarounds, back-references: no text of their own
        return [""], []

    def chars(self, op: object, av: object) -> list[str]:
        return _chars(op, av, self.literals)

    def seq(self, items: sre_parse.SubPattern) -> tuple[list[str], list[str]]:
        fulls = [""]
        starts: list[str] = []
        previous = None
        for op, av in items:
            if previous not in _ONE_CHAR or op not in _ONE_CHAR:
                starts += fulls  # what matched so far, at a step boundary
            full, start = self.node(op, av)
            starts += [f + s for f in fulls for s in start]
            fulls = _dedupe([f + g for f in fulls for g in full])
            previous = op
        return fulls, _dedupe([s for s in dict.fromkeys(starts + fulls) if s])


def _literals(items: sre_parse.SubPattern) -> str:
    """The punctuation the pattern spells out, in order."""
    out = []
    for op, av in items:
        if op is c.LITERAL and not chr(av).isalnum():  # type: ignore[arg-type]
            out.append(chr(av))  # type: ignore[arg-type]
        elif isinstance(av, (list, tuple)):
            for sub in av:
                if isinstance(sub, sre_parse.SubPattern):
                    out.append(_literals(sub))
                elif isinstance(sub, list):
                    out.extend(_literals(s) for s in sub if isinstance(s, sre_parse.SubPattern))
        elif isinstance(av, sre_parse.SubPattern):
            out.append(_literals(av))
    return "".join(dict.fromkeys("".join(out)))


# RE2 spellings Python's parser does not read, and what stands for them here.
_RE2_ONLY = [
    (re.compile(r"\\x\{([0-9a-fA-F]+)\}"), lambda m: f"\\U{int(m.group(1), 16):08x}"),
    (re.compile(r"\\p[LN]|\\p\{[A-Za-z]+\}"), lambda m: "a"),
    (re.compile(r"\\z"), lambda m: "\\Z"),
]


_GLOBAL_FLAGS = re.compile(r"\(\?([ims]+)\)")
_FLAG = {"i": re.I, "m": re.M, "s": re.S}


def prefixes(pattern: str | bytes, flags: int = 0) -> list[str]:
    """Non-empty strings that match a start of the pattern, the shorter starts first."""
    if isinstance(pattern, bytes):
        pattern = pattern.decode("latin-1")
        flags &= ~re.ASCII
    for spelling, python in _RE2_ONLY:
        pattern = spelling.sub(python, pattern)
    # Rust and RE2 take a global flag anywhere (two patterns joined by `|`), Python at the start
    for letters in _GLOBAL_FLAGS.findall(pattern):
        for letter in letters:
            flags |= _FLAG[letter]
    pattern = _GLOBAL_FLAGS.sub("", pattern)
    tree = sre_parse.parse(pattern, flags & ~re.DEBUG)
    full, starts = _Walk(_literals(tree)).seq(tree)
    return [s for s in dict.fromkeys(starts + full) if s]


_FILLERS = ("a", " ", "\\")
_SEPARATORS = ("", " ", "\n", ", ")


def shapes(pattern: str | bytes, flags: int = 0, limit: int = _CAP) -> list[tuple[str, str]]:
    """(head, unit) pairs: a text is the head, then the unit repeated. Each start of the
    pattern repeated (bare, or after a space, newline or comma); followed by a long run; and its
    first character followed by the rest repeated (`"` then `\\"`…: every quote opens a
    string that never closes)."""
    out: list[tuple[str, str]] = []
    for start in prefixes(pattern, flags)[:limit]:
        out += [("", start + sep) for sep in _SEPARATORS]
        out += [(start, filler) for filler in _FILLERS]
        if len(start) > 1:
            out.append((start[0], start[1:]))
    return list(dict.fromkeys(out))


def build(head: str, unit: str, size: int) -> str:
    """head + unit repeated, about size characters in all."""
    return head + unit * max(1, (size - len(head)) // len(unit))


def crafted(pattern: str | bytes, flags: int = 0, size: int = 1 << 20) -> Iterator[str]:
    """Texts of about `size` characters a backtracking engine finds hardest (see shapes)."""
    for head, unit in shapes(pattern, flags):
        yield build(head, unit, size)
