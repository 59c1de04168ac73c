"""`forensics formats`: every input format, how it is recognised, what it can fill.

Everything shown comes from the format's declaration (ingest.registry.FormatSpec). Which rules a
format supports is not written down anywhere: it follows from the columns the format declares
and the columns each rule requires, by the same test the engine applies to a scanned file
(Rule.checkable). Columns a format reads only when a writer adds them (extra_columns) are shown
but promise no rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from forensics import ingest, schema
from forensics.check.engine import Rule
from forensics.ingest import FormatSpec

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
    columns: list[str]  # empty: the format describes a run and fills no turn
    extra_columns: list[str]  # filled only when a writer adds them: no rule counts on them
    rules: list[str]  # rules that can run on it
    not_checked: list[tuple[str, list[str]]]  # rule id -> what is missing, one per way to run
    artifact: str  # what the validation plan tells the user to scan next
    rerun: str | None  # the harness's rerun command for two tasks, <id> standing for their ids
    origin: str | None  # the package of a plugin format; None: built in


def unknown_columns(fmt: FormatSpec) -> list[str]:
    """Declared columns that are not turn columns (a mistake in the declaration)."""
    return sorted((fmt.columns | fmt.extra_columns) - set(schema.RAW_TURNS.names))


def entries(
    rules: Iterable[Rule], formats: Iterable[FormatSpec] | None = None
) -> list[FormatEntry]:
    """One entry per format (default: every registered one), in detection order."""
    rules = sorted(rules, key=lambda r: r.id)
    out = []
    for fmt in ingest.FORMATS if formats is None else formats:
        runs: list[str] = []
        missing: list[tuple[str, list[str]]] = []
        if fmt.columns:  # metadata only (a run sidecar): no turns for any rule to read
            present = set(fmt.columns) | ALWAYS_FILLED
            runs = [r.id for r in rules if r.checkable(present)]
            missing = [(r.id, r.missing(present)) for r in rules if not r.checkable(present)]
        out.append(
            FormatEntry(
                fmt.name,
                fmt.description,
                fmt.detection,
                sorted(fmt.columns),
                sorted(fmt.extra_columns),
                runs,
                missing,
                fmt.artifact,
                fmt.rerun_hint(["<id>", "<id>"]),
                fmt.origin,
            )
        )
    return out


def render_text(items: list[FormatEntry], rule_count: int) -> str:
    lines = []
    for e in items:
        origin = f" (plugin from {e.origin})" if e.origin else ""
        lines.append(f"{e.name} — {e.description}{origin}")
        lines.append(f"  detected by: {e.detection}")
        rerun = f"; rerun with {e.rerun}" if e.rerun else ""
        lines.append(f"  validation plan: scan the new {e.artifact}{rerun}")
        if not e.columns:
            lines.append("  columns: none (describes a run; fills no turns)")
            lines.append("")
            continue
        lines.append(f"  columns: {', '.join(e.columns)}")
        if e.extra_columns:
            lines.append(
                f"  also, when a writer adds them: {', '.join(e.extra_columns)} (no rule counts "
                "on them)"
            )
        lines.append(f"  rules ({len(e.rules)} of {rule_count}): {', '.join(e.rules) or 'none'}")
        for rule_id, missing in e.not_checked:
            lines.append(f"  not checked: {rule_id} (needs {' or '.join(missing)})")
        lines.append("")
    return "\n".join(lines)
