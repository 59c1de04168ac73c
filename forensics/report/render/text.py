"""The terminal summary: verdict, ranked causes with their first fix, counts, where to look.

Every value printed here may come from a log (titles and fixes embed values read from the
data too), so each passes through safe.visible, and every finished line through
safe.guard_line: no log text reaches the terminal raw or starts a GitHub Actions command.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Iterable
from typing import Any

from forensics.report.render.safe import guard_line, one_line
from forensics.report.render.safe import visible as v
from forensics.report.types import Report, Summary, cause_evidence


def _incidents(summary: Summary) -> str:
    """Rule hits that share a turn and a cause are one incident; said only when that differs."""
    n = summary.get("incidents", summary["findings"])
    return "" if n == summary["findings"] else f" ({n:,} incidents)"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


# SGR colours by severity; only ever around text this module wrote or already escaped.
_SEVERITY_COLOUR = {"critical": "1;31", "high": "31", "medium": "33", "low": "36", "info": "2"}


class Style:
    """How the terminal takes the text: a width to wrap at (None: no wrapping) and colour."""

    def __init__(self, width: int | None = None, color: bool = False) -> None:
        self.width = width
        self.color = color

    def paint(self, text: str, code: str | None) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and code else text

    def severity(self, severity: str) -> str:
        return self.paint(f"[{severity}]", _SEVERITY_COLOUR.get(severity))

    def lines(self, text: str) -> str:
        """Every line guarded, and wrapped to the width under its own indent. A colour code is
        zero-width, so a painted line may wrap a little early; it never wraps late."""
        out = []
        for line in text.split("\n"):
            if self.width and len(line) > self.width:
                body = line.lstrip(" ")
                lead = " " * (len(line) - len(body))
                # Continuation lines of a numbered or labelled item sit under its text.
                hang = re.match(r"(?:\d+\. |fix \d+: |e\.g\. |note: |- )", body)
                more = lead + " " * (len(hang.group(0)) if hang else 0)
                out += textwrap.wrap(
                    body,
                    width=max(20, self.width),
                    initial_indent=lead,
                    subsequent_indent=more,
                    break_long_words=False,
                    break_on_hyphens=False,
                ) or [line]
            else:
                out.append(line)
        return "\n".join(guard_line(line) for line in out)


PLAIN = Style()


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


def render(model: Report, report_path: str | None = None, style: Style = PLAIN) -> str:
    """The summary printed after a scan (report_path: the HTML report, when one was written)."""
    s = model["summary"]
    lines = [
        f"forensics: {_plural(s['files'], 'file')}, "
        f"{_plural(s['trajectories'], 'trajectory', 'trajectories')}, "
        f"{_plural(s['turns'], 'turn')}, {_plural(s['findings'], 'finding')}{_incidents(s)}, "
        f"{_plural(s['rejects'], 'reject')}",
        # The settings file applied, as pytest names its configfile: a scan from a
        # subdirectory picks one up from above, and that should never be silent.
        *([f"config: {v(model['config'])}"] if model.get("config") else []),
        "",
        v(model["verdict"]),
        *_runs(s["runs"]),
        *_disagreements(s["disagreements"]),
    ]
    if split := model.get("score_split"):
        lines += ["", f"Is this score about the model? {v(split['text'])}"]
    quoted = cause_evidence(model)
    for cause in model["causes"]:
        lines.append("")
        title = style.paint(f"{cause['rank']}. {v(cause['title'])}", "1")
        lines.append(f"{title}  {style.severity(v(cause['severity']))}")
        lines.append(f"   {v(cause['why_ranked'])}")
        for fix in cause["fixes"]:
            lines.append(f"   fix {fix['rank']}: {v(fix['action'])}")
            if fix["rank"] == 1:
                lines.append(f"          {v(fix['detail'])}")
        for ev in quoted[cause["id"]][:2]:
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
    lines += _not_checked(model)
    notes = [f for f in model["files"] if f.get("note")]
    for f in notes[:5]:
        lines.append(f"note: {v(f['path'])}: {v(f['note'])}")
    if len(notes) > 5:
        lines.append(f"… and {len(notes) - 5} more notes (see --explain-formats)")
    if model["skipped"]:
        why = Counter(s["reason"] for s in model["skipped"])
        kinds = ", ".join(f"{n} {v(r)}" for r, n in sorted(why.items()))
        lines.append(f"skipped: {len(model['skipped'])} ({kinds})")
    for reject in model["rejects"][:5]:
        where = f"{reject['path']}:{reject['line']}" if reject["line"] else reject["path"]
        lines.append(f"rejected: {v(where)}: {v(reject['reason'])}")
    if len(model["rejects"]) > 5:
        lines.append(f"… and {len(model['rejects']) - 5} more rejects (see the report)")
    if report_path:
        lines += ["", f"report: {v(report_path)}"]
    return style.lines("\n".join(lines)) + "\n"


def _not_checked(model: Report) -> list[str]:
    """One line per kind of missing data and the files that lack it, each rule once (report
    model: not_checked_groups). With several files, each line says in which of them; a rule
    that ran on other files says on how many (its findings there are real)."""
    groups = model.get("not_checked_groups", [])
    if not groups:
        return []
    several = max(g.get("of_files", 1) for g in groups) > 1
    head = "these files lack the data the rules read" if several else "the inputs lack the data"
    out = [f"not checked ({head}{'' if several else ' these rules read'}):"]
    for g in groups:
        missing = " or ".join(v(m).replace("+", " with ") for m in g["missing"])
        ran = g.get("ran_on", {})
        others = g.get("of_files", 1) - g["files"]
        if ran and all(ran.get(r) == others for r in g["rules"]):
            # the usual case: each of them ran on every file that had the data
            where = "the other file" if others == 1 else f"the other {others} files"
            rules = ", ".join(v(r) for r in g["rules"]) + f" (ran on {where})"
        else:
            rules = ", ".join(
                v(r) + (f" (ran on {_plural(ran[r], 'file')})" if r in ran else "")
                for r in g["rules"]
            )
        out.append(f"   no {missing}{_files_lacking(g) if several else ''}: {rules}")
    return out


def _files_lacking(group: dict[str, Any], shown: int = 2) -> str:
    """Where a group's data is missing: " in all 3 files", " in 2 of 5 files (a, b)"."""
    n, of = group["files"], group["of_files"]
    if n >= of:
        return f" in all {of} files"
    names = ", ".join(v(p) for p in group["paths"][:shown])
    more = f" and {n - shown} more" if n > shown else ""
    return f" in {n} of {of} files ({names}{more})"


def statistics(model: Report, style: Style = PLAIN) -> str:
    """--statistics: per rule that fired, its count, severity and title, most hits first (as
    `ruff check --statistics` prints them), then the total."""
    titles = {r["id"]: r["title"] for r in model["rules"]}
    severity = {r["id"]: r["severity"] for r in model["rules"]}
    trajectories: dict[str, set[str]] = {}
    for f in model["findings"]:
        trajectories.setdefault(f["rule"], set()).add(f["trajectory_id"])
    counts = sorted(model["summary"]["findings_by_rule"].items(), key=lambda kv: (-kv[1], kv[0]))
    if not counts:
        n = model["summary"]["trajectories"]
        return style.lines(f"no findings in {_plural(n, 'trajectory', 'trajectories')}") + "\n"
    wide = max(len(f"{n:,}") for _, n in counts)
    rule_w = max(len(v(r)) for r, _ in counts)
    lines = []
    for rule, n in counts:
        sev = severity.get(rule, "info")
        pad = " " * (8 - len(sev))
        where = _plural(len(trajectories.get(rule, ())), "trajectory", "trajectories")
        lines.append(
            f"{n:>{wide},}  {v(rule):<{rule_w}}  {style.severity(v(sev))}{pad}"
            f"{v(titles.get(rule, rule))} ({where})"
        )
    s = model["summary"]
    where = _plural(s["trajectories_with_findings"], "trajectory", "trajectories")
    lines.append(f"Found {_plural(s['findings'], 'finding')} in {where}.")
    # A table: coloured like the summary, never wrapped.
    return Style(None, style.color).lines("\n".join(lines)) + "\n"


def explain_formats(model: Report) -> str:
    """--explain-formats: how each file was detected, its note, what the walk skipped."""
    lines = []
    for f in model["files"]:
        lines.append(f"{v(f['path'])}: {v(f['format'] or 'rejected')} — {v(f['detected_because'])}")
        if f.get("note"):
            lines.append(f"  note: {v(f['note'])}")
    for s in model["skipped"]:
        lines.append(f"{v(s['path'])}: skipped — {v(s['reason'])}")
    return "".join(guard_line(line) + "\n" for line in lines)


def gate_lines(lines: Iterable[str], style: Style = PLAIN) -> str:
    """The gate's verdict lines (gate.Verdict.lines), which name rules, paths and trajectory
    ids from the data: each escaped and guarded as one line; the verdict coloured."""
    out = []
    for line in lines:
        shown = one_line(line)
        if shown.startswith("gate: FAIL"):
            shown = style.paint("gate: FAIL", "1;31") + shown[len("gate: FAIL") :]
        elif shown.startswith("gate: pass"):
            shown = style.paint("gate: pass", "32") + shown[len("gate: pass") :]
        out.append(shown + "\n")
    return "".join(out)
