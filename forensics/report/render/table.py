"""Query results as text: an aligned table for people, CSV and JSON for scripts."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from forensics.report.render import jsonout

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
        s = _cell(value).replace("\r\n", "⏎").replace("\n", "⏎")
        return s if len(s) <= max_cell else s[: max_cell - 1] + "…"

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
    return "\n".join(lines) + "\n"


def csv_text(columns: list[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(
            ["" if v is None else json.dumps(v) if isinstance(v, list | dict) else v for v in row]
        )
    return buf.getvalue()


def json_text(columns: list[str], rows: Sequence[Sequence[Any]]) -> str:
    records = [dict(zip(columns, row, strict=True)) for row in rows]
    return jsonout.dumps(records, allow_nan=True, default=str) + "\n"
