"""`forensics show`: one trajectory, turn by turn, with its findings where they fired.

The episode comes from a database a scan wrote (`--db`), which is instant and shows exactly
what that scan saw, or from scanning the given paths again. Which episode: its trajectory id,
a prefix of it that names one episode only, or its task id when one episode (or one per
trial, `TASK:TRIAL`) has it. This module decides which episode and lays it out as plain data
(`Episode`); render/episode.py only writes it for the terminal.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import polars as pl

from forensics.diagnosis.result import sql_string
from forensics.report.model import TURN_VIEW, report_order

TURN_COLUMNS = TURN_VIEW
EPISODE_COLUMNS = [
    "trajectory_id",
    "run_id",
    "task_id",
    "trial",
    "reward",
    "termination_reason",
    "variant",
    "agent_model",
    "user_model",
    "error",
    "source_path",
    "source_line",
]
FINDING_COLUMNS = ["rule", "severity", "turn_index", "message"]
MAX_CANDIDATES = 10


class ShowError(Exception):
    """The episode can not be found or named unambiguously; the message says what exists."""


def resolve(trajectories: pl.DataFrame, key: str, findings: pl.DataFrame | None = None) -> str:
    """The trajectory id KEY names: an id, the report's label of one (T1: the first in the
    report's order, which findings give), a unique id prefix, a task id or TASK:TRIAL."""
    ids = trajectories["trajectory_id"].to_list()
    if key in ids:
        return key
    order = report_order(ids, _counts(findings))
    if (label := re.fullmatch(r"[Tt](\d+)", key)) and 1 <= int(label[1]) <= len(order):
        return order[int(label[1]) - 1]
    by_prefix = [i for i in ids if i.startswith(key)]
    if len(by_prefix) == 1:
        return by_prefix[0]
    task, _, trial = key.rpartition(":") if ":" in key else (key, "", "")
    tasks = trajectories.filter(pl.col("task_id").cast(pl.String) == task)
    if trial.lstrip("-").isdigit():
        tasks = tasks.filter(pl.col("trial") == int(trial))
    elif ":" in key:  # not TASK:TRIAL after all: the whole key is the task id
        tasks = trajectories.filter(pl.col("task_id").cast(pl.String) == key)
    if tasks.height == 1:
        return tasks["trajectory_id"][0]
    candidates = sorted(by_prefix or tasks["trajectory_id"].to_list())
    if candidates:
        shown = ", ".join(candidates[:MAX_CANDIDATES])
        more = f" and {len(candidates) - MAX_CANDIDATES} more" if len(candidates) > 10 else ""
        raise ShowError(f"{key!r} names {len(candidates)} trajectories: {shown}{more}")
    labels = {tid: f"T{k}" for k, tid in enumerate(order, 1)}
    close = difflib.get_close_matches(key, ids, n=MAX_CANDIDATES, cutoff=0.5)
    listed = close or order[:MAX_CANDIDATES]
    shown = ", ".join(f"{labels[i]} {i}" for i in listed)
    which = "the closest" if close else "the first" if len(ids) > len(listed) else "they are"
    raise ShowError(
        f"no trajectory {key!r} among {len(ids):,}; {which}: {shown} (give an id, its T label "
        "in the report, a unique prefix of an id, a task id or TASK:TRIAL)"
    )


def _counts(findings: pl.DataFrame | None) -> dict[str, int]:
    if findings is None or findings.is_empty():
        return {}
    counted = findings.group_by("trajectory_id").len()
    return dict(zip(counted["trajectory_id"].to_list(), counted["len"].to_list(), strict=True))


def episode(row: dict[str, Any], turns: pl.DataFrame, findings: pl.DataFrame) -> dict[str, Any]:
    """The episode as the terminal shows it: its header, its turns in order, each with the
    findings on it; findings about the whole episode (no turn) apart."""
    on_turn: dict[int, list[dict[str, Any]]] = {}
    whole = []
    for f in findings.sort(["turn_index", "rule"], nulls_last=True).iter_rows(named=True):
        item = {"rule": f["rule"], "severity": f["severity"], "message": f["message"]}
        if f["turn_index"] is None:
            whole.append(item)
        else:
            on_turn.setdefault(f["turn_index"], []).append(item)
    rows = []
    for u in turns.sort("turn_index").iter_rows(named=True):
        u["findings"] = on_turn.get(u["turn_index"], [])
        u["tool_calls"] = [
            {"name": c["name"], "arguments": c["arguments"]} for c in u["tool_calls"] or []
        ]
        rows.append(u)
    return {
        "episode": {k: row.get(k) for k in EPISODE_COLUMNS},
        "turns": rows,
        "findings": findings.height,
        "episode_findings": whole,
    }


def from_scan(result: Any, key: str) -> dict[str, Any]:
    """The episode KEY names in a scan's result (forensics.scan(...))."""
    tid = resolve(result.trajectories, key, result.findings.select("trajectory_id"))
    row = result.trajectories.filter(pl.col("trajectory_id") == tid).row(0, named=True)
    turns = (
        result.sql(f"select * from turns where trajectory_id = {sql_string(tid)}")
        .pl()
        .select(TURN_COLUMNS)
    )
    found = result.findings.filter(pl.col("trajectory_id") == tid).select(FINDING_COLUMNS)
    return episode(row, turns, found)


def from_db(path: Path, key: str) -> dict[str, Any]:
    """The episode KEY names in a database written by `forensics scan --db`."""
    import duckdb

    if not path.is_file():
        raise ShowError(f"{path}: no such database (write one with forensics scan --db FILE)")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise ShowError(f"{path}: {exc}") from None
    try:
        trajectories = con.sql(f"select {', '.join(EPISODE_COLUMNS)} from trajectories").pl()
        tid = resolve(trajectories, key, con.sql("select trajectory_id from findings").pl())
        row = trajectories.filter(pl.col("trajectory_id") == tid).row(0, named=True)
        turns = _frame(con, TURN_COLUMNS, "turns", tid)
        found = _frame(con, FINDING_COLUMNS, "findings", tid)
    except duckdb.Error as exc:
        raise ShowError(f"{path}: not a database written by forensics scan --db ({exc})") from None
    finally:
        con.close()
    return episode(row, turns, found)


def _frame(con: Any, columns: list[str], table: str, tid: str) -> pl.DataFrame:
    sql = f"select {', '.join(columns)} from {table} where trajectory_id = ?"
    return con.sql(sql, params=[tid]).pl()
