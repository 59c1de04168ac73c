"""The top-level keys of the first JSON object in a file head, even when the head cuts it.

Detection sees the first 64 KiB of a file. A capture line holding a long agent history does not
end there, so format sniffers read the first object token by token: keys at depth 1, with their
value when it is a scalar (enough to tell `"object": "chat.completion"` from a tau2 result).
"""

from __future__ import annotations

import json
import re

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


# (text, keys) of the last head read: format detection asks every sniffer in turn about the
# same head, and tokenising it once is enough. Callers only read the keys.
_last: tuple[str, dict[str, object]] = ("", {})


def top_level(text: str) -> dict[str, object]:
    """Keys of the first object in text (or of an array's first element), in order.

    Values are kept for scalars (strings, numbers, booleans) and are None for containers or
    values the head cuts.
    """
    global _last
    if text is _last[0] or text == _last[0]:
        return _last[1]
    keys = _top_level(text)
    _last = (text, keys)
    return keys


def _top_level(text: str) -> dict[str, object]:
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        stripped = stripped[1:].lstrip()
    if not stripped.startswith("{"):
        return {}
    out: dict[str, object] = {}
    depth = 0
    key: str | None = None
    expect_value = False
    for m in _TOKEN.finditer(stripped):
        tok = m.group()
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
    return out
