"""The self-contained HTML report: Jinja2 templates from reports/, everything escaped."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import polars as pl
from markupsafe import Markup, escape

from forensics import markers
from forensics.pipeline import ScanResult

MAX_DETAILED_TRAJECTORIES = 200
TURN_CHARS = 3000
_MARKUP = re.compile(
    "|".join(re.escape(str(escape(t))) for pair in markers.REASONING_TAGS for t in pair)
)


def default_reports_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "reports", here / "_data" / "reports"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the report templates are missing from this installation")


def highlight(text: str | None) -> Markup:
    """Escape untrusted text, then mark reasoning tags so they stand out."""
    if not text:
        return Markup("")
    escaped = str(escape(text))
    return Markup(_MARKUP.sub(lambda m: f"<mark>{m.group(0)}</mark>", escaped))


def _trajectories(result: ScanResult) -> list[dict[str, Any]]:
    flagged = result.findings.group_by("trajectory_id").agg(pl.len().alias("n"))
    counts = dict(flagged.iter_rows())
    marks: dict[tuple[str, int], list[str]] = {}
    for row in result.findings.select("trajectory_id", "turn_index", "rule").iter_rows():
        marks.setdefault((row[0], row[1]), []).append(row[2])
    ordered = result.trajectories.with_columns(
        pl.col("trajectory_id").replace_strict(counts, default=0).alias("_n")
    ).sort(["_n", "trajectory_id"], descending=[True, False])
    out = []
    for row in ordered.head(MAX_DETAILED_TRAJECTORIES).iter_rows(named=True):
        turns = result.turns.filter(pl.col("trajectory_id") == row["trajectory_id"]).sort(
            "turn_index"
        )
        out.append(
            {
                **row,
                "findings": counts.get(row["trajectory_id"], 0),
                "turns": [
                    {
                        **t,
                        "content": (t["content"] or "")[:TURN_CHARS],
                        "clipped": len(t["content"] or "") > TURN_CHARS,
                        "rules": marks.get((row["trajectory_id"], t["turn_index"]), []),
                    }
                    for t in turns.iter_rows(named=True)
                ],
            }
        )
    return out


def render(model: dict[str, Any], result: ScanResult, templates: Path | None = None) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates or default_reports_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["highlight"] = highlight
    template = env.get_template("report.html.j2")
    return template.render(
        m=model,
        trajectories=_trajectories(result),
        total_trajectories=result.trajectories.height,
        max_detailed=MAX_DETAILED_TRAJECTORIES,
    )
