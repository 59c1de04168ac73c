"""The terminal summary: verdict, ranked causes with their first fix, counts, where to look."""

from __future__ import annotations

from collections import Counter
from typing import Any


def render(model: dict[str, Any], report_path: str | None = None) -> str:
    s = model["summary"]
    lines = [
        f"forensics: {s['files']} file(s), {s['trajectories']} trajectories, {s['turns']} turns, "
        f"{s['findings']} findings, {s['rejects']} rejects",
        "",
        model["verdict"],
    ]
    for cause in model["causes"]:
        lines.append("")
        lines.append(f"{cause['rank']}. {cause['title']}  [{cause['severity']}]")
        lines.append(f"   {cause['why_ranked']}")
        for fix in cause["fixes"]:
            lines.append(f"   fix {fix['rank']}: {fix['action']}")
            if fix["rank"] == 1:
                lines.append(f"          {fix['detail']}")
        for ev in cause["evidence"][:2]:
            src = ev["source"]
            lines.append(f"   e.g. {src['path']}:{src['line']}  {ev['rule']}: {ev['message']}")
    if model["validation"]:
        lines += ["", "validate:"] + [f"   {i}. {v}" for i, v in enumerate(model["validation"], 1)]
    if s["findings_by_rule"]:
        counts = ", ".join(f"{k} {v}" for k, v in s["findings_by_rule"].items())
        lines += ["", f"findings by rule: {counts}"]
    if model["not_checked"]:
        missing = sorted(
            {f"{n['rule']} (no {' or '.join(n['missing'])})" for n in model["not_checked"]}
        )
        lines.append("not checked: " + "; ".join(missing))
    notes = [f for f in model["files"] if f.get("note")]
    for f in notes[:5]:
        lines.append(f"note: {f['path']}: {f['note']}")
    if len(notes) > 5:
        lines.append(f"… and {len(notes) - 5} more notes (see --explain-formats)")
    if model["skipped"]:
        why = Counter(s["reason"] for s in model["skipped"])
        kinds = ", ".join(f"{n} {r}" for r, n in sorted(why.items()))
        lines.append(f"skipped in directory walks: {len(model['skipped'])} ({kinds})")
    for reject in model["rejects"][:5]:
        where = f"{reject['path']}:{reject['line']}" if reject["line"] else reject["path"]
        lines.append(f"rejected: {where}: {reject['reason']}")
    if len(model["rejects"]) > 5:
        lines.append(f"… and {len(model['rejects']) - 5} more rejects (see the report)")
    if report_path:
        lines += ["", f"report: {report_path}"]
    return "\n".join(lines) + "\n"
