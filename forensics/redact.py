"""Secrets never leave forensics: API keys and bearer tokens are masked in every table.

The same patterns run vectorised over table columns (polars, Rust regex) and in Python over the
few loose strings (labels, reject excerpts). Both regex dialects accept these patterns.
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

MASK = "***REDACTED***"

# (pattern, number of leading groups to keep)
_PATTERNS: list[tuple[str, int]] = [
    (r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}", 1),
    (
        r"(?i)((?:authorization|x-api-key|x-goog-api-key|api[_-]?key|access[_-]?token|"
        r"secret[_-]?key|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]{6,}",
        1,
    ),
    # Header lists of HAR files and proxy dumps: {"name": "x-api-key", "value": "<secret>"}.
    (
        r"(?i)(\"name\"\s*:\s*\"(?:authorization|proxy-authorization|x-api-key|api-key|"
        r"x-goog-api-key|cookie|set-cookie)\"\s*,\s*\"value\"\s*:\s*\")[^\"]{4,}",
        1,
    ),
    (r"\b(sk-)[A-Za-z0-9_-]{16,}", 1),
    (r"\b(AIza)[0-9A-Za-z_-]{30,}", 1),
    (r"\b(hf_)[A-Za-z0-9]{30,}", 1),
]
_PY = [(re.compile(p), "".join(f"\\{i + 1}" for i in range(k)) + MASK) for p, k in _PATTERNS]


def redact_text(text: str | None) -> str | None:
    if not text:
        return text
    for pattern, repl in _PY:
        text = pattern.sub(repl, text)
    return text


def redact_expr(expr: pl.Expr) -> pl.Expr:
    for pattern, keep in _PATTERNS:
        repl = "".join(f"${{{i + 1}}}" for i in range(keep)) + MASK
        expr = expr.str.replace_all(pattern, repl)
    return expr


@lru_cache(maxsize=4096)
def redact_name(name: str) -> str:
    """A file path or run id, redacted; cached, since every row of a file repeats it."""
    return redact_text(name) or name
