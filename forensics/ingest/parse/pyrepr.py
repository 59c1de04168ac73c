"""Python-repr literals (`print(dict)` output) read through the JSON decoder.

tau-bench prints its info dicts with Python's repr: `{'task': {'user_id': 'x', ...}, 'ok': True}`.
`ast.literal_eval` reads them, but it compiles the text first, which costs ten times what the
JSON decoder does. Most repr text differs from JSON only in its quotes and three names, so it is
rewritten token by token into JSON and decoded there. The rewrite gives up (returns None, and
the caller uses literal_eval) on anything whose meaning it can not carry exactly: any name but
True/False/None, any string escape JSON reads differently, a quote that does not close on its
line. What it does rewrite decodes to the value literal_eval would give: JSON's own constants
(NaN, Infinity) are refused, and nesting past the Python parser's limit falls back too, so the
same text is accepted or refused as before.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Python's tokenizer refuses brackets nested deeper than this; JSON would read them.
MAX_NESTING = 200

# A string literal without prefix, in either quote (a backslash escapes what follows). Group 1
# or 2 holds its closing quote, and is empty for a string that does not close on its line: it
# matches to where it stops. A scan that skips strings stays linear so; a string that failed
# to match would be tried again from every quote inside it (`'\'\'\'…`), each time to the
# end of the line.
STRING = r"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+('?)" r'|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+("?)'
_TOKEN = re.compile(
    # a single- or double-quoted string's body; the closing quote is empty for a string that does
    # not close on its line (matched whole, as in STRING)
    r"'(?P<single>[^'\\\n]*+(?:\\.[^'\\\n]*+)*+)(?P<single_end>'?)"
    r'|"(?P<double>[^"\\\n]*+(?:\\.[^"\\\n]*+)*+)(?P<double_end>"?)'
    r"|(?<![\w.])(?P<constant>True|False|None)\b"
    r"|(?<![\w.])[A-Za-z_]",  # any other name: give up
)
_CONSTANTS = {"True": "true", "False": "false", "None": "null"}
# Escapes that mean the same in a Python string and in JSON, and those that need rewriting.
# Anything else (\U, \a, \v, octal, \N{…}, line continuations, unknown escapes kept as they are
# by Python, JSON's \/) gives up.
# A raw double quote (only in a single-quoted body) is escaped for JSON.
_ESCAPE = re.compile(r"\\(?:([\\\"nrtbf])|(')|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|.)|(\")", re.S)
# Read over JSON that decoded, where every string closes; the closing quote is optional all the
# same, so that no text makes a string that fails to match be tried again from each quote in it.
_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*+"?|[\[\]{}]', re.S)


class _GiveUp(Exception):
    pass


def _refuse_constant(name: str) -> Any:
    raise _GiveUp(name)


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _escape(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(0)
    if m.group(5) is not None:
        return '\\"'
    if m.group(2) is not None:
        return "'"
    if m.group(3) is not None:
        return "\\u00" + m.group(3)
    code = m.group(4)
    if code is not None and not 0xD800 <= int(code, 16) <= 0xDFFF:
        # JSON would join a surrogate pair into one character; Python keeps two.
        return m.group(0)
    raise _GiveUp("escape")


def _token(m: re.Match[str]) -> str:
    body = m.group("single")
    if body is not None:
        if not m.group("single_end"):
            raise _GiveUp("quote")
        if "\\" in body or '"' in body:
            body = _ESCAPE.sub(_escape, body)
        return '"' + body + '"'
    body = m.group("double")
    if body is not None:
        if not m.group("double_end"):
            raise _GiveUp("quote")
        return '"' + _ESCAPE.sub(_escape, body) + '"' if "\\" in body else m.group(0)
    if m.group("constant") is not None:
        return _CONSTANTS[m.group("constant")]
    raise _GiveUp("name")


def to_json(text: str) -> str | None:
    """The JSON text of a Python literal, or None when the rewrite can not be exact."""
    try:
        return _TOKEN.sub(_token, text)
    except _GiveUp:
        return None


def loads(text: str) -> tuple[bool, Any]:
    """(True, value) when the repr text reads through JSON; (False, None) when it needs the
    Python parser (or is not a literal at all).

    Only a bracketed text is read: inside brackets Python takes any line break and indent as
    JSON takes whitespace, outside them (`0\\r `) it does not."""
    if not text or text[0] not in "{[" or text[-1] not in "}]":
        return False, None
    rewritten = to_json(text)
    if rewritten is None:
        return False, None
    try:
        value = _DECODER.decode(rewritten)
    except (ValueError, _GiveUp, RecursionError):
        return False, None
    if (
        rewritten.count("[") + rewritten.count("{") > MAX_NESTING
        and _nesting(rewritten) > MAX_NESTING
    ):
        return False, None
    return True, value


def _nesting(text: str) -> int:
    depth = deepest = 0
    for m in _BRACKET.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest
