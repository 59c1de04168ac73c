"""The JSON documents forensics writes, and the machine result (--json) among them.

`dumps` is `json.dumps(value, indent=2 or compact, ensure_ascii=False, allow_nan=…,
default=…)` byte for byte, errors included, written by orjson: a big scan writes ~100 MB of
JSON, and json's indenting encoder is pure Python (83 MB of result: 1.4 s of CPU with json,
0.45 s here).
orjson writes what json writes except in four places, each kept to json's bytes:
- a float with 1e-10 <= |x| < 1e-4: orjson writes 0.00001 and 1e-7 where repr writes 1e-05
  and 1e-07. Such number tokens are rewritten in orjson's output (only when a survey of the
  value found such a float).
- a non-finite float: orjson writes null where json raises (allow_nan=False) or writes NaN.
  The survey finds it and json decides.
- what orjson refuses: a str with a lone surrogate (a file name that is not UTF-8), a key that
  is not a str, an int beyond 64 bits, nesting deeper than orjson's limit. json writes that
  document (slower, same bytes).
- a type beyond dict, list, tuple, str, int, float, bool and None: orjson writes enums,
  UUIDs and dates where json raises or calls `default`. The survey finds it and json writes.

`render` writes the machine result as strict JSON (RFC 8259), so any parser reads it: a
non-finite number (NaN, ±Infinity, which Python's json would write as bare `NaN` /
`Infinity` tokens) is written as null, and the top-level "notes" list says where, one sorted
line per JSON path. The page-only part of the model ("page": the HTML explorer's turns and
chart data) is left out, and so is the turn text ("turn_text") unless asked for: each finding is
written once, so the result grows with the findings, not with the text of the input.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard

import orjson

from forensics import atomic

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A lone surrogate (from a file name that is not UTF-8) can not be written as UTF-8: it is
# written as its \u escape instead, which every JSON parser reads back.
_SURROGATE = re.compile("[\ud800-\udfff]")

# Exact types: a subclass (an IntEnum, an OrderedDict) is json's to write, as it would be.
_CONTAINERS = frozenset({dict, list, tuple})
_KNOWN = _CONTAINERS | {str, int, float, bool, type(None)}
# orjson's spelling of a float that repr spells otherwise (0.00001 for 1e-05, 1e-7 for
# 1e-07), as a whole number token: in orjson's indented output a number ends its line (after
# ": " or the indentation, before an optional ","), and no string holds a raw newline, so
# a token so placed is never inside a string.
_ORJSON_ONLY = re.compile(rb" (-?(?:0\.0000[1-9][0-9]*|[1-9](?:\.[0-9]+)?e-[6-9]))(?=,?(?:\n|\Z))")
_CLEAN, _SMALL, _NON_FINITE, _FOREIGN = range(4)


def _survey(value: Any) -> int:
    """What orjson got wrong in value, which it wrote (so value holds no cycle): _CLEAN,
    _SMALL (a float it spells otherwise), _NON_FINITE (it wrote null) or _FOREIGN (a type
    json would not write, or not so), the last two as soon as seen."""
    found = _CLEAN
    stack: list[Any] = [(value,)]
    while stack:
        items = stack.pop()
        kinds = {*map(type, items)}
        if not kinds <= _KNOWN:
            return _FOREIGN
        if float in kinds:
            for v in items:
                # one comparison for the common case; NaN fails it, so lands in the branch
                if type(v) is float and not (1e-4 <= abs(v) < math.inf or v == 0):
                    if not math.isfinite(v):
                        return _NON_FINITE
                    found = _SMALL
        if kinds & _CONTAINERS:
            stack += [v.values() if type(v) is dict else v for v in items if type(v) in _CONTAINERS]
    return found


def _python_float(m: re.Match[bytes]) -> bytes:
    return b" " + repr(float(m[1])).encode()


def _write(
    value: Any, indent: bool, allow_nan: bool, default: Callable[[Any], Any] | None
) -> tuple[str, bool]:
    """value's JSON text as json.dumps writes it, and whether orjson wrote it."""
    if type(value) in _CONTAINERS:
        try:
            out = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate, a key that is not a str, a big int, deep nesting, a cycle
        else:
            found = _survey(value)
            if found == _CLEAN:
                return out.decode(), True
            if found == _SMALL and indent:
                return _ORJSON_ONLY.sub(_python_float, out).decode(), True
            if found == _NON_FINITE and not allow_nan:
                # json's error from its C encoder, which stops at the same first offending
                # value as the indenting one, without writing a big document in Python first
                json.dumps(value, ensure_ascii=False, allow_nan=False, default=default)
    text = json.dumps(
        value,
        indent=2 if indent else None,
        separators=None if indent else (",", ":"),
        ensure_ascii=False,
        allow_nan=allow_nan,
        default=default,
    )
    return text, False


def dumps(
    value: Any,
    *,
    indent: bool = True,
    allow_nan: bool = False,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """Exactly json.dumps(value, ensure_ascii=False, allow_nan=allow_nan, default=default)
    with indent=2 (indent) or separators=(",", ":") (not indent)."""
    return _write(value, indent, allow_nan, default)[0]


def _name(x: float) -> str:
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _key(path: str, key: object) -> str:
    if isinstance(key, str) and _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(str(key), ensure_ascii=False)}]"


def _finite(value: Any, path: str, notes: list[str]) -> Any:
    """value with every non-finite float replaced by None, each noted with its path."""
    if isinstance(value, float) and not math.isfinite(value):
        notes.append(f"{path or '$'}: {_name(value)} written as null")
        return None
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, float) and not math.isfinite(k):
                k = _name(k)  # json.dumps would write a non-finite key as NaN too
            out[k] = _finite(v, _key(path, k), notes)
        return out
    if isinstance(value, list | tuple):
        return [_finite(v, f"{path}[{i}]", notes) for i, v in enumerate(value)]
    return value


# The findings of a large result are written this many at a time (pieces), not as one text.
PIECE = 2048
_PLACE = '\n  "findings": []'


class _Irregular(Exception):
    """A piece of findings holds what only a whole-document rendering writes right."""


def pieces(
    model: Mapping[str, Any], *, turn_text: bool = False, piece: int = PIECE
) -> Iterator[str]:
    """render's text in pieces, so that writing a large result never holds all of it: the
    document around an empty findings list, then the findings a few thousand at a time, each
    written as render writes them and indented one level. A finding with a non-finite number
    (render notes those) raises _Irregular before its piece is yielded; `write` then starts
    over with render."""
    findings = model.get("findings")
    if not _sequence(findings) or len(findings) <= piece:
        yield render(model, turn_text=turn_text)
        return
    text = render({**model, "findings": []}, turn_text=turn_text)
    at = text.find(_PLACE)
    if at < 0 or text.find(_PLACE, at + 1) >= 0:
        yield render(model, turn_text=turn_text)
        return
    yield text[: at + len(_PLACE) - 1] + "\n"
    for start in range(0, len(findings), piece):
        try:
            written, by_orjson = _write(findings[start : start + piece], True, False, None)
        except ValueError:
            raise _Irregular from None
        if not by_orjson:
            written = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", written)
        body = written[2:-2].replace("\n", "\n  ")  # the items of "[\n ... \n]", one level in
        yield ("" if start == 0 else ",\n") + "  " + body
    yield "\n  ]" + text[at + len(_PLACE) :]


def _sequence(value: Any) -> TypeGuard[Sequence[Any]]:
    """A list, or a sequence other than text and tuples that stands for one."""
    return isinstance(value, Sequence) and not isinstance(value, str | bytes | tuple)


def write(
    path: Path, model: Mapping[str, Any], *, turn_text: bool = False, piece: int = PIECE
) -> Path:
    """render's text written to path atomically, a piece at a time (see pieces)."""
    try:
        return atomic.write_pieces(path, pieces(model, turn_text=turn_text, piece=piece))
    except _Irregular:
        return atomic.write_text(path, render(model, turn_text=turn_text))


def render(model: Mapping[str, Any], *, turn_text: bool = False) -> str:
    """The model as strict, deterministic JSON text (ordinary models: exactly json.dumps).
    turn_text: keep the model's "turn_text" (scan --json-text)."""
    left_out = {"page"} if turn_text else {"page", "turn_text"}
    # A sequence the model makes as it is read (its findings) is written as the list it is.
    data = {k: list(v) if _sequence(v) else v for k, v in model.items() if k not in left_out}
    try:
        text, by_orjson = _write(data, True, False, None)
    except ValueError:  # a non-finite float somewhere: walk the model (only then) to null it
        notes: list[str] = []
        data = _finite(data, "", notes)
        earlier = data.get("notes")
        earlier = earlier if isinstance(earlier, list) else [] if earlier is None else [earlier]
        data["notes"] = earlier + sorted(notes)
        text, by_orjson = _write(data, True, False, None)
    if by_orjson:  # orjson refuses lone surrogates: its text holds none
        return text + "\n"
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"
