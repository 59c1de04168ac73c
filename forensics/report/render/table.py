"""Query results as text: an aligned table for people, CSV and JSON for scripts.

The values come from the logs, so all three go through safe.py as the scan's terminal output
does: no control, bidi or line-separator character reaches the screen raw, and no line of
stdout is a GitHub Actions workflow command. The table and the CSV show such characters as
escapes (`\x1b`, `\n`: a CSV record stays one line); the JSON spells them as JSON escapes,
so its values are exactly the database's.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from forensics.report.render import jsonout
from forensics.report.render.safe import guard_line, guard_lines, json_visible, visible

MAX_CELL = 60


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def text(columns: list[str], rows: Sequence[Sequence[Any]], max_cell: int = MAX_CELL) -> str:
    """Columns padded to their widest cell; long cells cut with … (CSV/JSON keep them whole);
    line breaks shown as ⏎ so one row stays one line."""

    def fit(value: Any) -> str:
        s = visible(_cell(value).replace("\r\n", "⏎").replace("\n", "⏎"))
        return s if len(s) <= max_cell else s[: max_cell - 1] + "…"

    columns = [visible(c) for c in columns]
    cells = [[fit(v) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [
        bool(rows) and all(isinstance(r[i], int | float) or r[i] is None for r in rows)
        for i in range(len(columns))
    ]

    def line(values: list[str]) -> str:
        out = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(out).rstrip()

    lines = [line(columns), "  ".join("-" * w for w in widths)]
    lines += [line(r) for r in cells]
    lines.append(f"({len(rows)} row{'' if len(rows) == 1 else 's'})")
    return guard_lines("\n".join(lines)) + "\n"


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json_visible(json.dumps(value))
    return visible(value) if isinstance(value, str) else value


def csv_text(columns: list[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([visible(c) for c in columns])
    for row in rows:
        writer.writerow([_csv_cell(v) for v in row])
    # Every value is escaped: the only newlines left are the record ends.
    return "".join(guard_line(line) + "\n" for line in buf.getvalue().split("\n")[:-1])


def json_text(columns: list[str], rows: Sequence[Sequence[Any]]) -> str:
    records = [dict(zip(columns, row, strict=True)) for row in rows]
    return json_visible(jsonout.dumps(records, allow_nan=True, default=str)) + "\n"
