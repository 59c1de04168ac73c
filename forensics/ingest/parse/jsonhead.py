"""The top-level keys of the first JSON object in a file head, even when the head cuts it.

Detection sees the first 64 KiB of a file. A capture line holding a long agent history does not
end there, so format sniffers read the first object token by token: keys at depth 1, with their
value when it is a scalar (enough to tell `"object": "chat.completion"` from a tau2 result).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+("?)|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_NOT_STRING = re.compile(r'[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _tokens(text: str) -> Iterator[str]:
    """Strings, punctuation and bare words. A string that does not close (group 1 empty) is
    matched to where it stops, and its inside read as if its quote were no token: every quote
    in there opens a string that stops at the same place. Failing to match it instead would
    rescan the rest of the head from each of those quotes (quadratic)."""
    pos = 0
    while (m := _TOKEN.search(text, pos)) is not None:
        if m.group(1) == "":
            stop, pos = m.end(), m.start() + 1
            for inner in _NOT_STRING.finditer(text, pos):
                if inner.start() >= stop:
                    break
                yield inner.group()
                pos = inner.end()
            pos = max(pos, stop)
            continue
        yield m.group()
        pos = m.end()


# (text, end, keys) of the last head read: format detection asks every sniffer in turn about
# the same head (stripped or not, or only its first line), and reading it once is enough. end:
# where the object parsed as JSON closed (its keys depend on nothing after it), else None.
# Callers only read the keys.
_last: tuple[str, int | None, dict[str, object]] = ("", None, {})
_DECODER = json.JSONDecoder()


def top_level(text: str) -> dict[str, object]:
    """Keys of the first object in text (or of an array's first element), in order.

    Values are kept for scalars (strings, numbers, booleans) and are None for containers or
    values the head cuts.
    """
    global _last
    stripped = text.lstrip("\ufeff \t\r\n")
    seen, end, keys = _last
    if stripped is seen or stripped == seen:
        return keys
    if end is not None and stripped.startswith(seen[:end]):
        return keys  # the same object, closed before either text ends
    end, keys = _top_level(stripped)
    _last = (stripped, end, keys)
    return keys


def _top_level(stripped: str) -> tuple[int | None, dict[str, object]]:
    body = stripped
    if body.startswith("["):
        body = body[1:].lstrip()
    if not body.startswith("{"):
        return None, {}
    offset = len(stripped) - len(body)
    # A complete object (most heads: a JSONL line, a small document) is parsed in C; the token
    # walk below, for a head that cuts the object or does not parse, gives the same keys.
    try:
        value, end = _DECODER.raw_decode(body)
    except (ValueError, RecursionError):
        pass
    else:
        return offset + end, {
            k: None if isinstance(v, dict | list) else v for k, v in value.items()
        }
    out: dict[str, object] = {}
    depth = 0
    key: str | None = None
    expect_value = False
    for tok in _tokens(body):
        if tok in "{[":
            if depth == 1 and expect_value and key is not None:
                out[key] = None
                key, expect_value = None, False
            depth += 1
        elif tok in "}]":
            depth -= 1
            if depth == 0:
                break
        elif depth != 1 or tok == ",":
            continue
        elif tok == ":":
            expect_value = key is not None
        elif expect_value and key is not None:
            try:
                out[key] = json.loads(tok)
            except ValueError:
                out[key] = None
            key, expect_value = None, False
        elif tok.startswith('"'):
            try:
                key = json.loads(tok)
            except ValueError:
                key = None
    if key is not None and expect_value:
        out.setdefault(key, None)
    # No end: where a walk closes depends on what follows (a quote the cut left unmatched
    # starts a string in a longer text), so its keys are reused for this very text only.
    return None, out
