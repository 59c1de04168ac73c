"""`forensics formats`: every input format, how it is recognised, what it can fill.

Which rules a format supports is not written down anywhere: it follows from the columns the
format declares (ingest.Format.columns) and the columns each rule requires, by the same test
the engine applies to a scanned file (Rule.checkable). A format that declares nothing is listed
as such, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from forensics import schema
from forensics.check.engine import Rule
from forensics.ingest import FORMATS, Format

# Filled by the collector for every turn of every format (records.Collector._turn_row):
# provenance, identity, role and actor, and tool_calls, an empty list when there are none.
ALWAYS_FILLED = frozenset(
    {
        "source_path",
        "source_line",
        "source_format",
        "run_id",
        "trajectory_id",
        "turn_index",
        "trial",
        "role",
        "actor",
        "tool_calls",
    }
)


@dataclass(frozen=True)
class FormatEntry:
    name: str
    description: str
    detection: str
    columns: list[str] | None  # None: the format does not declare them
    rules: list[str]  # rules that can run on it (empty when undeclared)
    not_checked: list[tuple[str, list[str]]]  # rule id -> what is missing, one per way to run


def unknown_columns(fmt: Format) -> list[str]:
    """Declared columns that are not turn columns (a mistake in the declaration)."""
    return sorted((fmt.columns or frozenset()) - set(schema.RAW_TURNS.names))


def entries(rules: Iterable[Rule], formats: Iterable[Format] = FORMATS) -> list[FormatEntry]:
    """One entry per format, in detection order."""
    rules = sorted(rules, key=lambda r: r.id)
    out = []
    for fmt in formats:
        doc = (fmt.sniff.__doc__ or "").strip().split("\n\n")[0]
        detection = fmt.detection or " ".join(doc.split()) or "not described"
        if fmt.columns is None:
            out.append(FormatEntry(fmt.name, fmt.description, detection, None, [], []))
            continue
        if not fmt.columns:  # metadata only (a run sidecar): no turns for any rule to read
            out.append(FormatEntry(fmt.name, fmt.description, detection, [], [], []))
            continue
        present = set(fmt.columns) | ALWAYS_FILLED
        runs = [r.id for r in rules if r.checkable(present)]
        missing = [(r.id, r.missing(present)) for r in rules if not r.checkable(present)]
        out.append(
            FormatEntry(
                fmt.name,
                fmt.description,
                detection,
                sorted(fmt.columns),
                runs,
                missing,
            )
        )
    return out


def render_text(items: list[FormatEntry], rule_count: int) -> str:
    lines = []
    for e in items:
        lines.append(f"{e.name} — {e.description}")
        lines.append(f"  detected by: {e.detection}")
        if e.columns is None:
            lines.append("  columns: not declared (which rules can run is not known)")
            lines.append("")
            continue
        if not e.columns:
            lines.append("  columns: none (describes a run; fills no turns)")
            lines.append("")
            continue
        lines.append(f"  columns: {', '.join(e.columns)}")
        lines.append(f"  rules ({len(e.rules)} of {rule_count}): {', '.join(e.rules) or 'none'}")
        for rule_id, missing in e.not_checked:
            lines.append(f"  not checked: {rule_id} (needs {' or '.join(missing)})")
        lines.append("")
    return "\n".join(lines)
