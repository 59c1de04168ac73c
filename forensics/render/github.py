"""GitHub Actions workflow commands: one annotation per finding on its file and line.

high/critical -> ::error, medium/low -> ::warning, info -> ::notice. Printed to stdout, where
the runner picks them up and shows them on the job and on the changed file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forensics.render.paths import display

COMMANDS = {
    "critical": "error",
    "high": "error",
    "medium": "warning",
    "low": "warning",
    "info": "notice",
}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(model: dict[str, Any], base: Path, only: set[str] | None = None) -> str:
    """Workflow commands for the findings (only those with ids in `only`, when given: with a
    baseline, just the new ones) and for rejected records."""
    lines = []
    for f in model["findings"]:
        if only is not None and f["id"] not in only:
            continue
        props = []
        if f["source"]["path"]:
            props.append(f"file={_prop(display(f['source']['path'], base))}")
            if f["source"]["line"]:
                props.append(f"line={f['source']['line']}")
        title = f"forensics {f['rule']} ({f['severity']})"
        props.append(f"title={_prop(title)}")
        task = f"task {f['task_id']}" if f["task_id"] is not None else f["trajectory_id"]
        message = f"{f['message']} [{task}, turn {f['turn_index']}]"
        command = COMMANDS.get(f["severity"], "warning")
        lines.append(f"::{command} {','.join(props)}::{_data(message)}")
    for r in model["rejects"]:
        props = [f"file={_prop(display(r['path'], base))}"]
        if r["line"]:
            props.append(f"line={r['line']}")
        props.append(f"title={_prop('forensics: record not read')}")
        lines.append(f"::warning {','.join(props)}::{_data(r['reason'])}")
    return "".join(line + "\n" for line in lines)
