"""The terminal summary: verdict, ranked causes with their first fix, counts, where to look.

Every value printed here may come from a log (titles and fixes embed values read from the
data too), so each passes through safe.visible, and every finished line through
safe.guard_line: no log text reaches the terminal raw or starts a GitHub Actions command.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from forensics.render.safe import guard_line, guard_lines, one_line
from forensics.render.safe import visible as v


def _incidents(summary: dict[str, Any]) -> str:
    """Rule hits that share a turn and a cause are one incident; said only when that differs."""
    n = summary.get("incidents", summary["findings"])
    return "" if n == summary["findings"] else f" ({n:,} incidents)"


def _runs(runs: list[dict[str, Any]]) -> list[str]:
    """One line per run, so that runs are compared, not pooled; nothing for a single run."""
    if len(runs) < 2:
        return []
    lines = ["", f"runs: {len(runs)}"]
    for r in runs:
        about = ", ".join(
            v(str(r[k])) for k in ("agent_model", "variant", "domain", "started") if r[k]
        )
        reward = "not scored" if r["mean_reward"] is None else f"mean reward {r['mean_reward']:g}"
        n = r["trajectories"]
        lines.append(
            f"   {v(r['run_id'])}{f' ({about})' if about else ''}: {n} "
            f"{'trajectory' if n == 1 else 'trajectories'}, {reward}, {r['findings']:,} findings"
        )
    return lines


def _disagreements(found: list[dict[str, str]], shown: int = 5) -> list[str]:
    lines = [f"sources disagree: {v(d['trajectory_id'])}: {v(d['disagreements'])}" for d in found]
    if len(found) > shown:
        lines[shown:] = [f"sources disagree: … and {len(found) - shown} more episodes"]
    return lines


def render(model: dict[str, Any], report_path: str | None = None) -> str:
    """The summary printed after a scan (report_path: the HTML report, when one was written)."""
    s = model["summary"]
    lines = [
        f"forensics: {s['files']} file(s), {s['trajectories']} trajectories, {s['turns']} turns, "
        f"{s['findings']} findings{_incidents(s)}, {s['rejects']} rejects",
        "",
        v(model["verdict"]),
        *_runs(s["runs"]),
        *_disagreements(s["disagreements"]),
    ]
    if split := model.get("score_split"):
        lines += ["", f"Is this score about the model? {v(split['text'])}"]
    for cause in model["causes"]:
        lines.append("")
        lines.append(f"{cause['rank']}. {v(cause['title'])}  [{v(cause['severity'])}]")
        lines.append(f"   {v(cause['why_ranked'])}")
        for fix in cause["fixes"]:
            lines.append(f"   fix {fix['rank']}: {v(fix['action'])}")
            if fix["rank"] == 1:
                lines.append(f"          {v(fix['detail'])}")
        for ev in cause["evidence"][:2]:
            src = ev["source"]
            lines.append(
                f"   e.g. {v(src['path'])}:{v(src['line'])}  {v(ev['rule'])}: {v(ev['message'])}"
            )
    if model["validation"]:
        steps = [f"   {i}. {v(step)}" for i, step in enumerate(model["validation"], 1)]
        lines += ["", "validate:", *steps]
    if s["findings_by_rule"]:
        counts = ", ".join(f"{v(k)} {n}" for k, n in s["findings_by_rule"].items())
        lines += ["", f"findings by rule: {counts}"]
    if model["not_checked"]:
        missing = sorted(
            {f"{n['rule']} (no {' or '.join(n['missing'])})" for n in model["not_checked"]}
        )
        lines.append("not checked: " + v("; ".join(missing)))
    notes = [f for f in model["files"] if f.get("note")]
    for f in notes[:5]:
        lines.append(f"note: {v(f['path'])}: {v(f['note'])}")
    if len(notes) > 5:
        lines.append(f"… and {len(notes) - 5} more notes (see --explain-formats)")
    if model["skipped"]:
        why = Counter(s["reason"] for s in model["skipped"])
        kinds = ", ".join(f"{n} {v(r)}" for r, n in sorted(why.items()))
        lines.append(f"skipped in directory walks: {len(model['skipped'])} ({kinds})")
    for reject in model["rejects"][:5]:
        where = f"{reject['path']}:{reject['line']}" if reject["line"] else reject["path"]
        lines.append(f"rejected: {v(where)}: {v(reject['reason'])}")
    if len(model["rejects"]) > 5:
        lines.append(f"… and {len(model['rejects']) - 5} more rejects (see the report)")
    if report_path:
        lines += ["", f"report: {v(report_path)}"]
    return guard_lines("\n".join(lines)) + "\n"


def explain_formats(model: dict[str, Any]) -> str:
    """--explain-formats: how each file was detected, its note, what the walk skipped."""
    lines = []
    for f in model["files"]:
        lines.append(f"{v(f['path'])}: {v(f['format'] or 'rejected')} — {v(f['detected_because'])}")
        if f.get("note"):
            lines.append(f"  note: {v(f['note'])}")
    for s in model["skipped"]:
        lines.append(f"{v(s['path'])}: skipped — {v(s['reason'])}")
    return "".join(guard_line(line) + "\n" for line in lines)


def gate_lines(lines: Iterable[str]) -> str:
    """The gate's verdict lines (gate.Verdict.lines), which name rules, paths and trajectory
    ids from the data: each escaped and guarded as one line."""
    return "".join(one_line(line) + "\n" for line in lines)
