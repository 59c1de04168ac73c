"""The rule catalogue as Markdown, generated from the rule pack.

The catalogue in docs/rules.md (CATALOGUE) sits between two markers and is rewritten by
`forensics rules readme` (and by `forensics rules new`); test_rules_as_data.py fails when what
sits there differs from what the pack generates, so the table can not drift from the rule files.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from forensics.check.engine import Rule

# Relative to the repository root: where `forensics rules readme` writes by default.
CATALOGUE = "docs/rules.md"
START = "<!-- rule-table:start -->"
END = "<!-- rule-table:end -->"


class CatalogueError(Exception):
    """A document without the markers the table is written between."""


def _cell(text: str) -> str:
    """One table cell: a single line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(rules: Iterable[Rule]) -> str:
    """One row per rule, by id: its catalogue one-liner (`brief`, else the summary)."""
    lines = [
        "| rule | severity | confidence | cause | detects |",
        "|---|---|---|---|---|",
    ]
    for r in sorted(rules, key=lambda r: r.id):
        name = f"`{r.id}`" + (" (preview)" if r.preview else "")
        lines.append(
            f"| {name} | {r.severity} | {r.confidence} | `{r.cause}` | "
            f"{_cell(r.brief or r.summary)} |"
        )
    return "\n".join(lines)


def _span(text: str) -> tuple[int, int]:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise CatalogueError(f"no {START} … {END} markers around the rule table")
    return start + len(START), end


def current(text: str) -> str:
    """What sits between the markers, without the blank lines around it."""
    start, end = _span(text)
    return text[start:end].strip("\n")


def replaced(text: str, table: str) -> str:
    """The document with the table between the markers replaced (blank line either side)."""
    start, end = _span(text)
    return f"{text[:start]}\n\n{table}\n\n{text[end:]}"


def document(rules_dir: Path) -> Path | None:
    """The catalogue document of the rule pack in `rules_dir` (CATALOGUE beside it), when it
    has the markers the table goes between."""
    path = rules_dir.parent / CATALOGUE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return path if START in text and END in text else None
