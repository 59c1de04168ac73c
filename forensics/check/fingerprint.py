"""A finding's fingerprint: what it says about the benchmark, not how its message reads.

One definition for the baseline gate (`finding_id`, SARIF's partialFingerprints) and for
`forensics diff`: a finding is the same finding when the same rule fires on the same turn of
the same episode. The episode is its task and trial (the trajectory id when the artifact names
no task), so a rerun written to a file of another name (tau-bench puts the date in it), or the
same results scanned from another checkout, keep their fingerprints. The message is left out:
it quotes sizes and counts ("2212 chars of reasoning"), and one word more in a turn must not
turn a known finding into a new one and a fixed one.

Findings with the same key in one scan (the same task and trial in two runs scanned together,
or a rule that fires twice on one turn) are numbered in scan order: the n-th of them hashes n
too. A baseline is matched as counts per key, so which of two runs gets which number does not
matter: one fixed there is one fixed, whichever it was.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import polars as pl

# (task or trajectory id, trial; -1 when none)
Episode = tuple[str, int]
# (rule, task or trajectory id, trial, turn; -1 for none)
Key = tuple[str, str, int, int]

# The trial a trajectory id names (records._trajectory_id: <run>/task-<t>/trial-<n>[#k]), for
# baseline entries written before they recorded the trial.
_TRIAL = re.compile(r"/trial-(-?\d+)(?:#\d+)?$")


def episode(row: Mapping[str, Any]) -> Episode:
    """(task, trial) of a finding or a trajectory row: the task id, else the trajectory id."""
    task = row.get("task_id")
    if task is None:
        task = row.get("trajectory_id")
    trial = row.get("trial")
    if "trial" not in row and (m := _TRIAL.search(str(row.get("trajectory_id") or ""))):
        trial = int(m.group(1))  # a baseline entry of an older forensics
    return (str(task), trial if isinstance(trial, int) else -1)


def key(row: Mapping[str, Any]) -> Key:
    """(rule, task, trial, turn) of a finding: what diff matches and the fingerprint hashes."""
    task, trial = episode(row)
    turn = row.get("turn_index")
    return (str(row["rule"]), task, trial, turn if isinstance(turn, int) else -1)


def fingerprint(k: Key, occurrence: int = 1) -> str:
    """The finding id of the occurrence-th finding (1-based, in scan order) with key k."""
    rule, task, trial, turn = k
    text = f"{rule}\x00{task}\x00{trial}\x00{turn}"
    if occurrence > 1:
        text += f"\x00{occurrence}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def numbered(keys: list[Key]) -> list[str]:
    """The fingerprints of findings with these keys, in this order: the n-th of a key is n."""
    seen: dict[Key, int] = {}
    out = []
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
        out.append(fingerprint(k, seen[k]))
    return out


# The order findings are numbered in: the scan's own order, then the message for findings of
# one rule on one line (a rule's rows come out of DuckDB in no set order).
_ORDER = ["source_path", "source_line", "rule", "turn_index", "message"]


def assign(findings: pl.DataFrame) -> pl.DataFrame:
    """findings with finding_id set from their keys, in place of any it had (a distributed
    scan numbers its merged findings again, as one process numbers them)."""
    ordered = findings.select(*_ORDER, "task_id", "trajectory_id", "trial").with_row_index("_row")
    ordered = ordered.sort([*_ORDER, "_row"], nulls_last=True)
    ids: list[str | None] = [None] * findings.height
    for row, fid in zip(
        ordered["_row"].to_list(),
        numbered([key(r) for r in ordered.iter_rows(named=True)]),
        strict=True,
    ):
        ids[row] = fid
    return findings.with_columns(pl.Series("finding_id", ids, pl.String))
