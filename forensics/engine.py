"""The rule engine: loads the rule pack (TOML files), runs each rule's SQL in DuckDB.

A rule returns (trajectory_id, turn_index, message, evidence); the engine adds everything that
locates the finding (task, trial, role, actor, source file and line) and its stable id.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from forensics import schema
from forensics.schema import CONFIDENCES, DOC_SECTIONS, SEVERITIES


class RuleError(Exception):
    """A rule file that can not be loaded or run (a usage error: exit code 2)."""


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: str
    confidence: str
    cause: str
    summary: str
    requires: list[list[str]]
    docs: dict[str, str]
    sql: str
    path: str

    def checkable(self, present: set[str]) -> bool:
        # No requirement: the rule reads only what every source has (trajectories, roles).
        return not self.requires or any(all(c in present for c in group) for group in self.requires)

    def missing(self, present: set[str]) -> list[str]:
        """What is absent, one entry per way the rule could have run ("a+b" for a pair)."""
        return ["+".join(c for c in group if c not in present) for group in self.requires]


def default_rules_dir() -> Path:
    """rules/ of a source checkout, else the copy shipped inside the wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "rules", here / "_data" / "rules"):
        if candidate.is_dir():
            return candidate
    raise RuleError("the rule pack is missing from this installation")


def load_rule(path: Path) -> Rule:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RuleError(f"{path}: {exc}") from None
    try:
        rule = Rule(
            id=data["id"],
            title=data["title"],
            severity=data["severity"],
            confidence=data["confidence"],
            cause=data["cause"],
            summary=data["summary"],
            requires=data.get("requires", []),
            docs={k: data.get("docs", {}).get(k, "").strip() for k in DOC_SECTIONS},
            sql=data["query"]["sql"],
            path=str(path),
        )
    except KeyError as exc:
        raise RuleError(f"{path}: missing key {exc}") from None
    if rule.severity not in SEVERITIES:
        raise RuleError(f"{path}: severity must be one of {', '.join(SEVERITIES)}")
    if rule.confidence not in CONFIDENCES:
        raise RuleError(f"{path}: confidence must be hard or heuristic")
    known = set(schema.TURNS.names)
    for group in rule.requires:
        if unknown := [c for c in group if c not in known]:
            raise RuleError(f"{path}: requires unknown column(s) {', '.join(unknown)}")
    return rule


def load_rules(extra_dirs: list[Path] | None = None) -> list[Rule]:
    """The default pack plus user directories; a user rule with a pack id replaces it."""
    rules: dict[str, Rule] = {}
    for directory in [default_rules_dir(), *(extra_dirs or [])]:
        if not directory.is_dir():
            raise RuleError(f"{directory}: not a directory of rules")
        for path in sorted(directory.glob("*.toml")):
            if path.name == "causes.toml":
                continue
            rule = load_rule(path)
            rules[rule.id] = rule
    return [rules[k] for k in sorted(rules)]


@dataclass
class Checked:
    findings: pl.DataFrame
    # source_path -> rule id -> missing columns, for rules that could not run on that file
    not_checked: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def _present_columns(turns: pl.DataFrame) -> dict[str, set[str]]:
    """Per source file, the columns that hold at least one value."""
    if turns.is_empty():
        return {}
    cols = [c for c in schema.TURNS.names if c != "source_path"]
    agg = turns.group_by("source_path").agg([pl.col(c).is_not_null().any().alias(c) for c in cols])
    return {
        row["source_path"]: {c for c in cols if row[c]} | {"source_path"}
        for row in agg.iter_rows(named=True)
    }


def _fingerprint(rule: str, trajectory_id: str, turn_index: int | None, message: str) -> str:
    key = f"{rule}\x00{trajectory_id}\x00{turn_index}\x00{message}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def check(turns: pl.DataFrame, trajectories: pl.DataFrame, rules: list[Rule]) -> Checked:
    """Run every rule over the tables; findings sorted by file, line, rule."""
    present = _present_columns(turns)
    not_checked: dict[str, dict[str, list[str]]] = {}
    for path, cols in sorted(present.items()):
        for rule in rules:
            if not rule.checkable(cols):
                not_checked.setdefault(path, {})[rule.id] = rule.missing(cols)

    con = duckdb.connect()
    con.register("turns", turns.to_arrow())
    con.register("trajectories", trajectories.to_arrow())
    frames = []
    for rule in rules:
        try:
            table = con.sql(rule.sql).to_arrow_table()
        except duckdb.Error as exc:
            raise RuleError(f"{rule.path}: query failed: {exc}") from None
        missing = {"trajectory_id", "turn_index", "message", "evidence"} - set(table.column_names)
        if missing:
            raise RuleError(f"{rule.path}: query must return {', '.join(sorted(missing))}")
        frame = pl.from_arrow(table.select(["trajectory_id", "turn_index", "message", "evidence"]))
        frames.append(
            frame.with_columns(
                pl.lit(rule.id).alias("rule"),
                pl.lit(rule.severity).alias("severity"),
                pl.lit(rule.confidence).alias("confidence"),
                pl.lit(rule.cause).alias("cause"),
                pl.col("turn_index").cast(pl.Int64),
                pl.col("message").cast(pl.String),
                pl.col("evidence").cast(pl.String),
            )
        )
    con.close()
    empty = pl.from_arrow(pa.Table.from_pylist([], schema=schema.FINDINGS))
    if not frames:
        return Checked(empty, not_checked)  # type: ignore[arg-type]
    found = pl.concat(frames, how="vertical_relaxed")
    located = found.join(
        turns.select(
            "trajectory_id",
            "turn_index",
            "run_id",
            "task_id",
            "trial",
            "role",
            "actor",
            "source_path",
            "source_line",
        ),
        on=["trajectory_id", "turn_index"],
        how="left",
    )
    # A finding about a whole episode (turn_index NULL, e.g. an episode whose exception left no
    # turns) is located where the episode starts.
    episode = ["run_id", "task_id", "trial", "source_path", "source_line"]
    located = located.join(
        trajectories.select("trajectory_id", *episode),
        on="trajectory_id",
        how="left",
        suffix="_episode",
    ).with_columns(pl.coalesce(c, f"{c}_episode").alias(c) for c in episode)
    located = located.with_columns(
        pl.struct("rule", "trajectory_id", "turn_index", "message")
        .map_elements(
            lambda r: _fingerprint(r["rule"], r["trajectory_id"], r["turn_index"], r["message"]),
            return_dtype=pl.String,
        )
        .alias("finding_id")
    )
    findings = located.select(schema.FINDINGS.names).sort(
        ["source_path", "source_line", "rule", "turn_index"], nulls_last=True
    )
    return Checked(findings, not_checked)
