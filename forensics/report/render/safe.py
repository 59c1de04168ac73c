"""Log text on its way to a terminal: shown, never obeyed.

Everything a renderer takes from a log (model output, file names, reject reasons, evidence) is
hostile. On a terminal, an ESC sequence can recolour, hide or rewrite what was printed, OSC 8 can
plant a link, OSC 52 can write the clipboard; bidi overrides reorder what a reader sees; a
newline inside a value starts a line the log wrote. And the lines of stdout are read by GitHub
Actions, which runs any line that starts with `::` (after leading whitespace) or that holds
`##[` anywhere as a workflow command. `visible` escapes the characters, `guard_line` defuses the
lines: text.py passes every log-derived value through the one and every line it prints through
the other; github.py (whose lines are commands on purpose, their values %-encoded) and
markdown.py use `visible` too, and so does every other command's output: `forensics query`'s
table and CSV (`visible` per value, `guard_line` per line) and its JSON (`json_visible`, the
same characters as JSON escapes).
"""

from __future__ import annotations

import re

# C0 controls (newline and tab included: inside a value they are the log's, not ours), DEL, C1
# controls, the Unicode line and paragraph separators (a line break to many readers), the
# bidi embeddings, overrides, isolates and marks, and lone surrogates (from a file name that is
# not UTF-8: they can not even be written to a UTF-8 stream).
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
# The usual spellings of the three controls ordinary text carries, as in Python's repr.
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(value: object, keep: str = "") -> str:
    """str(value) with every control, bidi and line-separator character written as a visible
    escape (`\\x1b`, `\\u202e`, `\\n`); characters in `keep` stay as they are (the caller escapes
    them its own way). Ordinary text comes back unchanged, byte for byte.

    A backslash already in the text is not doubled: the output is for reading, not to be parsed
    back, and doubling would change every Windows path and regex in ordinary output.
    """
    text = str(value)
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m.group()), text)


# What the Actions runner strips before it looks for `::`: .NET's TrimStart() drops Unicode
# whitespace; Python's str.isspace covers that set and more, and the zero-width characters older
# runtimes counted as whitespace are added to be safe.
_RUNNER_BLANK = "\u180e\u200b\ufeff"
# The legacy command syntax, `##[command props]data`, is matched anywhere in a line.
_LEGACY = "##["


def guard_line(line: str) -> str:
    """One line of plain stdout, defused as a GitHub Actions workflow command.

    A line that would start with `::` once leading blanks are stripped gets a backslash before
    the `::` (`  ::error::x` -> `  \\::error::x`), and every `##[` becomes `##\\[`: the text
    still reads the same, and the runner no longer sees a command. Lines that hold neither are
    returned unchanged. Call it on whole output lines, after `visible` (a raw newline would
    hide a second line from the check).
    """
    line = line.replace(_LEGACY, "##\\[")
    start = 0
    while start < len(line) and (line[start].isspace() or line[start] in _RUNNER_BLANK):
        start += 1
    if line.startswith("::", start):
        line = f"{line[:start]}\\{line[start:]}"
    return line


def json_visible(document: str) -> str:
    """A JSON text (json.dumps output) with every character `visible` escapes written as a
    JSON escape (`\\u009b`, `\\u202e`) and `##[` as `##\\u005b`: the same values, read
    back by any parser, and nothing in it a terminal obeys or the Actions runner takes for a
    command (a JSON line never starts with `::`). Raw newlines are the document's own indent."""
    text = _UNSAFE.sub(
        lambda m: m.group() if m.group() == "\n" else f"\\u{ord(m.group()):04x}", document
    )
    return text.replace(_LEGACY, "##\\u005b")


def block(text: str) -> str:
    """A block of plain text made of log values (a query's table): every character `visible`
    escapes escaped, its own newlines kept, and every line guarded."""
    return guard_lines(visible(text, keep="\n"))


def one_line(text: object) -> str:
    """A whole line made of log text (no newline of ours inside): escaped, then guarded."""
    return guard_line(visible(text))


def guard_lines(text: str) -> str:
    """Every line of a rendered block guarded (its values already passed through `visible`)."""
    return "\n".join(guard_line(part) for part in text.split("\n"))
