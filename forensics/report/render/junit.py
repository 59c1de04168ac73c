"""JUnit XML for CI test-report views (GitLab, Jenkins, Azure, test-reporter actions).

One testsuite per run, one testcase per trajectory, one <failure> per finding; a trajectory
without findings passes. Rejected records get their own suite of <error> cases, so unreadable
input shows up as red rather than as fewer tests. `failures` counts failed testcases (what the
viewers total), not <failure> elements.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

from forensics.report.render.paths import display
from forensics.report.types import Finding, Report, Trajectory

# Characters XML 1.0 forbids even escaped; model output can contain them.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: Any) -> str:
    return _ILLEGAL.sub("\ufffd", "" if text is None else str(text))


def _el(parent: ET.Element, tag: str, text: str | None = None, **attrs: Any) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: _clean(v) for k, v in attrs.items() if v is not None})
    if text is not None:
        el.text = _clean(text)
    return el


def _case_name(t: Trajectory) -> str:
    if t.get("task_id") is None:
        return t["trajectory_id"]
    trial = f" trial {t['trial']}" if t.get("trial") is not None else ""
    return f"task {t['task_id']}{trial}"


def _failure_text(f: Finding, base: Path) -> str:
    src = f["source"]
    # A finding is at a turn and every turn was read from a file: its path is never null.
    assert src["path"] is not None
    where = display(src["path"], base) + (f":{src['line']}" if src["line"] else "")
    lines = [
        f"{f['rule']} [{f['severity']}, {f['confidence']}] at turn {f['turn_index']} "
        f"({f['role']}/{f['actor']}), {where}",
        f"message: {f['message']}",
    ]
    if f.get("evidence"):
        lines.append(f"evidence: {f['evidence']}")
    return "\n".join(lines)


def render(model: Report, base: Path) -> str:
    """The JUnit document as XML text; paths relative to base when inside it."""
    by_trajectory: dict[str, list[Finding]] = defaultdict(list)
    for f in model["findings"]:
        by_trajectory[f["trajectory_id"]].append(f)
    by_run: dict[str, list[Trajectory]] = defaultdict(list)
    for t in model["trajectories"]:
        by_run[t["run_id"] or "(no run)"].append(t)

    root = ET.Element("testsuites", {"name": "forensics"})
    total = failed = errors = 0
    for run_id in sorted(by_run):
        cases = by_run[run_id]
        run_failed = sum(1 for t in cases if by_trajectory.get(t["trajectory_id"]))
        path = cases[0]["source"]["path"]
        suite = _el(
            root,
            "testsuite",
            name=run_id,
            tests=len(cases),
            failures=run_failed,
            errors=0,
            skipped=0,
            file=display(path, base) if path else None,
        )
        first = cases[0]
        props = _el(suite, "properties")
        for key in ("agent_model", "variant"):
            if first.get(key) is not None:
                _el(props, "property", name=key, value=first[key])
        for t in cases:
            src = t["source"]
            case = _el(
                suite,
                "testcase",
                classname=run_id,
                name=_case_name(t),
                file=display(src["path"], base) if src["path"] else None,
                line=src["line"],
            )
            for f in by_trajectory.get(t["trajectory_id"], []):
                _el(
                    case,
                    "failure",
                    _failure_text(f, base),
                    type=f["rule"],
                    message=f"[{f['severity']}] {f['rule']}: {f['message']}",
                )
            _el(
                case,
                "system-out",
                f"trajectory {t['trajectory_id']}: reward {t['reward']}, "
                f"{t['turn_count']} turns, ended by {t['termination_reason']}",
            )
        total += len(cases)
        failed += run_failed
    if model["rejects"]:
        suite = _el(
            root,
            "testsuite",
            name="rejected records",
            tests=len(model["rejects"]),
            failures=0,
            errors=len(model["rejects"]),
            skipped=0,
        )
        for r in model["rejects"]:
            where = display(r["path"], base) + (f":{r['line']}" if r["line"] else "")
            case = _el(
                suite,
                "testcase",
                classname="rejects",
                name=where,
                file=display(r["path"], base),
                line=r["line"],
            )
            _el(case, "error", r["excerpt"] or "", type="reject", message=r["reason"])
        total += len(model["rejects"])
        errors += len(model["rejects"])
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", str(errors))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
