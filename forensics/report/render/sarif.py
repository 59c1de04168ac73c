"""SARIF 2.1.0 for code-scanning tools (GitHub code scanning, VS Code SARIF viewer, …).

One run; the rule pack as reportingDescriptors (descriptions and help from the rule docs); one
result per finding at the source file and line of its turn; partialFingerprints carry the
finding's stable id, so a rescan of the same data matches the same alerts. Rejected records and
rules that could not run become tool-execution notifications instead of vanishing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from forensics.report.render import jsonout
from forensics.report.render.paths import relative
from forensics.report.types import Finding, Report, RuleEntry
from forensics.schema import DOC_SECTIONS

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
FINGERPRINT_KEY = "forensicsFindingId/v1"
LEVELS = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}
PRECISION = {"hard": "very-high", "heuristic": "medium"}
SECTION_TITLES = {
    "detects": "What it detects",
    "why": "Why it matters",
    "example": "Example",
    "fix": "How to fix",
    "false_positives": "Known false positives",
}


def _artifact(path: str, base: Path) -> dict[str, Any]:
    rel = relative(path, base)
    if rel is None:
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    return {"uri": quote(rel, safe="/"), "uriBaseId": "%SRCROOT%"}


def _location(path: str | None, line: int | None, base: Path) -> dict[str, Any] | None:
    if not path:
        return None
    physical: dict[str, Any] = {"artifactLocation": _artifact(path, base)}
    if line and line >= 1:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def _pascal(rule_id: str) -> str:
    return "".join(part.capitalize() for part in rule_id.replace("_", "-").split("-"))


def _descriptor(rule: RuleEntry) -> dict[str, Any]:
    sections = [(SECTION_TITLES[s], rule["docs"].get(s, "")) for s in DOC_SECTIONS]
    sections = [(title, body) for title, body in sections if body]
    text = "\n\n".join(f"{title}: {body}" for title, body in sections)
    markdown = "\n\n".join(
        f"## {title}\n\n" + (f"```\n{body}\n```" if title == "Example" else body)
        for title, body in sections
    )
    return {
        "id": rule["id"],
        "name": _pascal(rule["id"]),
        "shortDescription": {"text": rule["title"]},
        "fullDescription": {"text": rule["summary"]},
        "help": {"text": text or rule["summary"], "markdown": markdown or rule["summary"]},
        "defaultConfiguration": {"level": LEVELS[rule["severity"]]},
        "properties": {
            "tags": ["forensics", rule["cause"], rule["confidence"]],
            "precision": PRECISION.get(rule["confidence"], "medium"),
            "severity": rule["severity"],
            "cause": rule["cause"],
        },
    }


def _where(f: Finding) -> str:
    task = f"task {f['task_id']}" if f.get("task_id") is not None else f["trajectory_id"]
    trial = f" trial {f['trial']}" if f.get("trial") is not None else ""
    turn = f", turn {f['turn_index']}" if f.get("turn_index") is not None else ""
    actor = f" ({f['actor']})" if f.get("actor") else ""
    return f"{task}{trial}{turn}{actor}"


def _result(f: Finding, index: int | None, base: Path, new: set[str] | None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f["rule"],
        "level": LEVELS.get(f["severity"], "warning"),
        "message": {"text": f"{f['message']} — {_where(f)}"},
        "partialFingerprints": {FINGERPRINT_KEY: f["id"]},
        "properties": {
            "severity": f["severity"],
            "confidence": f["confidence"],
            "cause": f["cause"],
            "trajectoryId": f["trajectory_id"],
            "taskId": f["task_id"],
            "trial": f["trial"],
            "turnIndex": f["turn_index"],
            "role": f["role"],
            "actor": f["actor"],
            "evidence": f["evidence"],
        },
    }
    if index is not None:
        result["ruleIndex"] = index
    location = _location(f["source"]["path"], f["source"]["line"], base)
    if location:
        result["locations"] = [location]
    if new is not None:
        result["baselineState"] = "new" if f["id"] in new else "unchanged"
    return result


def _notifications(model: Report, index: dict[str, int], base: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in model["rejects"]:
        note: dict[str, Any] = {
            "level": "warning",
            "message": {"text": f"record not read: {r['reason']}"},
        }
        if location := _location(r["path"], r["line"], base):
            note["locations"] = [location]
        out.append(note)
    for n in model["not_checked"]:
        note = {
            "level": "note",
            "message": {
                "text": f"{n['rule']} not checked: the input has no {' or '.join(n['missing'])}"
            },
            "associatedRule": {"id": n["rule"]},
        }
        if n["rule"] in index:
            note["associatedRule"]["index"] = index[n["rule"]]
        if location := _location(n["path"], None, base):
            note["locations"] = [location]
        out.append(note)
    return out


def render(
    model: Report,
    base: Path,
    version: str,
    new: set[str] | None = None,
) -> str:
    """The SARIF log as JSON text. base: directory paths are made relative to (the scan's
    working directory); new: with a baseline, the ids of new findings (sets baselineState)."""
    rules = model["rules"]
    index = {r["id"]: i for i, r in enumerate(rules)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "forensics",
                "version": version,
                "semanticVersion": version,
                "rules": [_descriptor(r) for r in rules],
            }
        },
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": _notifications(model, index, base),
            }
        ],
        "results": [_result(f, index.get(f["rule"]), base, new) for f in model["findings"]],
        "columnKind": "unicodeCodePoints",
    }
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return jsonout.dumps(log, allow_nan=True) + "\n"
