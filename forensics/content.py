"""Where the content the engine loads lives: `rules/` and `reports/` of a source checkout, else
the copies the wheel ships under `forensics/_data/` (pyproject's force-include)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CHECKOUT = PACKAGE.parent


def content_dir(name: str) -> Path | None:
    """The `name` folder (rules, reports) of this installation, or None when it is missing."""
    for candidate in (CHECKOUT / name, PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    return None
