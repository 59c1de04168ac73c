"""GitHub Actions workflow commands: one annotation per finding on its file and line.

high/critical -> ::error, medium/low -> ::warning, info -> ::notice. Printed to stdout, where
the runner picks them up and shows them on the job and on the changed file.

Each line is one command that we build; log text only fills its property values and message.
The runner reads a line as `::name k=v,k=v::data` and splits on the first `::` after the name,
so values are escaped as GitHub documents (workflow-commands reference; the runner's
ActionCommand.cs): `%` -> `%25`, CR -> `%0D`, LF -> `%0A` everywhere, and in properties also
`:` -> `%3A`, `,` -> `%2C`. With CR and LF encoded no log text can end the line and start a
command of its own, and with `:` encoded in properties the data can not start early. Other
control and bidi characters are made visible first (safe.visible), as on the terminal.
"""

from __future__ import annotations

from pathlib import Path

from forensics.report.render.labels import episode_label
from forensics.report.render.paths import display
from forensics.report.render.safe import visible
from forensics.report.types import Report

COMMANDS = {
    "critical": "error",
    "high": "error",
    "medium": "warning",
    "low": "warning",
    "info": "notice",
}


def _data(text: object) -> str:
    """A command's message. `%` first, so the runner's unescaping gives back exactly the text."""
    text = visible(text, keep="\r\n")  # CR and LF are encoded below, the runner decodes them
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: object) -> str:
    """A property value: `:` and `,` end it, so they are encoded too."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(model: Report, base: Path, only: set[str] | None = None) -> str:
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
                props.append(f"line={_prop(f['source']['line'])}")
        title = f"forensics {f['rule']} ({f['severity']})"
        props.append(f"title={_prop(title)}")
        where = episode_label(f["task_id"], None, f["trajectory_id"])
        if f["turn_index"] is not None:
            where += f", turn {f['turn_index']}"
        message = f"{f['message']} [{where}]"
        command = COMMANDS.get(f["severity"], "warning")
        lines.append(f"::{command} {','.join(props)}::{_data(message)}")
    for r in model["rejects"]:
        props = [f"file={_prop(display(r['path'], base))}"]
        if r["line"]:
            props.append(f"line={_prop(r['line'])}")
        props.append(f"title={_prop('forensics: record not read')}")
        lines.append(f"::warning {','.join(props)}::{_data(r['reason'])}")
    return "".join(line + "\n" for line in lines)
