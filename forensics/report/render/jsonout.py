"""The machine result: summary, causes, findings, rejects (and the rest of the model).

Strict JSON (RFC 8259), so any parser reads it: a non-finite number (NaN, ±Infinity, which
Python's json would write as bare `NaN` / `Infinity` tokens) is written as null, and the
top-level "notes" list says where, one sorted line per JSON path. The page-only part of the
model ("page": the HTML explorer's turns and chart data) is left out.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from forensics.report.render import fastjson

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A lone surrogate (from a file name that is not UTF-8) can not be written as UTF-8: it is
# written as its \u escape instead, which every JSON parser reads back.
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def _dumps(data: dict[str, Any]) -> str:
    # json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False), without its pure
    # Python indenting encoder (a big scan writes ~100 MB of JSON)
    return fastjson.dumps(data)


def render(model: dict[str, Any]) -> str:
    """The model as strict, deterministic JSON text (ordinary models: exactly json.dumps)."""
    data = {k: v for k, v in model.items() if k != "page"}
    try:
        text = _dumps(data)
    except ValueError:  # a non-finite float somewhere: walk the model (only then) to null it
        notes: list[str] = []
        data = _finite(data, "", notes)
        earlier = data.get("notes")
        earlier = earlier if isinstance(earlier, list) else [] if earlier is None else [earlier]
        data["notes"] = earlier + sorted(notes)
        text = _dumps(data)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"
