"""Turn and trajectory tables built from a few literal turns, for tests of rules and causes."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa

from forensics import schema
from forensics.check.enrich import enrich


def tables(
    episodes: dict[str, list[dict[str, Any]]], labels: dict[str, str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(enriched turns, trajectories): one trajectory per key, reward 0, run "run"; a turn is
    a partial row of schema.RAW_TURNS; labels apply to every trajectory."""
    rows, trajectories = [], []
    for tid, turns in episodes.items():
        for index, turn in enumerate(turns):
            row: dict[str, Any] = dict.fromkeys(schema.RAW_TURNS.names)
            row.update(tool_calls=[], source_path="t.jsonl", source_line=index + 1)
            row.update(turn, trajectory_id=tid, turn_index=index, run_id="run", task_id=tid)
            rows.append(row)
        trajectories.append(
            {
                "trajectory_id": tid,
                "run_id": "run",
                "task_id": tid,
                "reward": 0.0,
                "labels": [{"key": k, "value": v} for k, v in sorted((labels or {}).items())],
            }
        )
    turns_table = enrich(pa.Table.from_pylist(rows, schema=schema.RAW_TURNS))
    episodes_table = pl.from_arrow(pa.Table.from_pylist(trajectories, schema=schema.TRAJECTORIES))
    return turns_table, episodes_table  # type: ignore[return-value]
