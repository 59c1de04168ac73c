"""The rule engine: loads the rule pack (TOML files), runs each rule's SQL in DuckDB.

A rule returns (trajectory_id, turn_index, message, evidence) and optionally `data`, a struct
or map of the values it computed (counts, limits, the error it quotes) that diagnosis reads
instead of parsing the message; the engine stores it as the JSON text column `details`. The
engine adds everything that locates the finding (task, trial, role, actor, source file and
line) and its stable id.

Rule files are read strictly (what a file may hold is forensics/check/rulefile.py): an unknown
key is an error naming the file and the key, so a misspelt `[doc]` or `serverity` fails when
the pack loads instead of being ignored.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast, get_args

import duckdb
import polars as pl
import pyarrow as pa

from forensics import interrupts, schema
from forensics.check import fingerprint, provider_errors, rulefile, turnstore
from forensics.check import params as params_mod
from forensics.check.params import Param, ParamError
from forensics.content import content_dir
from forensics.schema import DOC_SECTIONS

# stable: measured on the accuracy corpus. preview: runs and reports like any rule, but has no
# labelled corpus cases yet, so it is exempt from the accuracy bounds (forensics/tools/accuracy.py).
STATUSES = get_args(rulefile.Status)
CAUSES_FILE = "causes.toml"
RESULT_COLUMNS = ["trajectory_id", "turn_index", "message", "evidence"]


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
    sql: str  # as written: {name} placeholders for the parameters
    path: str
    status: str = "stable"
    brief: str = ""  # the catalogue one-liner (docs/rules.md); the summary when empty
    params: dict[str, Param] = field(default_factory=dict)
    # The rule directories loaded together with this rule, in order. Diagnosis merges their
    # causes.toml files in this order; it is handed only the pack's own directory.
    pack_dirs: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def preview(self) -> bool:
        return self.status == "preview"

    @property
    def query(self) -> str:
        """The SQL that runs: each {name} replaced by its parameter's value as a literal."""
        return params_mod.render(self.sql, self.params)

    def with_params(self, values: dict[str, Any], where: str) -> Rule:
        """This rule with some parameters set (validated; raises ParamError naming `where`)."""
        return replace(self, params=params_mod.override(self.params, values, where))

    def checkable(self, present: set[str]) -> bool:
        # No requirement: the rule reads only what every source has (trajectories, roles).
        return not self.requires or any(all(c in present for c in group) for group in self.requires)

    def missing(self, present: set[str]) -> list[str]:
        """What is absent, one entry per way the rule could have run ("a+b" for a pair)."""
        return ["+".join(c for c in group if c not in present) for group in self.requires]


def default_rules_dir() -> Path:
    """rules/ of a source checkout, else the copy shipped inside the wheel."""
    found = content_dir("rules")
    if found is not None:
        return found
    raise RuleError("the rule pack is missing from this installation")


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RuleError(f"{path}: {exc}") from None


def load_rule(path: Path) -> Rule:
    try:
        spec = rulefile.convert(read_toml(path), rulefile.RuleFile, str(path))
        declared = params_mod.declare(spec.params, str(path))
        params_mod.check_sql(spec.query.sql, declared, str(path))
    except (rulefile.RuleFileError, ParamError) as exc:
        raise RuleError(str(exc)) from None
    known = set(schema.TURNS.names)
    for group in spec.requires:
        if unknown := [c for c in group if c not in known]:
            raise RuleError(f"{path}: requires unknown column(s) {', '.join(unknown)}")
    return Rule(
        id=spec.id,
        title=spec.title,
        severity=spec.severity,
        confidence=spec.confidence,
        cause=spec.cause,
        summary=spec.summary,
        requires=spec.requires,
        docs={k: getattr(spec.docs, k).strip() for k in DOC_SECTIONS},
        sql=spec.query.sql,
        path=str(path),
        status=spec.status,
        brief=spec.brief,
        params=declared,
    )


def load_rules(extra_dirs: list[Path] | None = None) -> list[Rule]:
    """The default pack plus user directories; a user rule with a pack id replaces it."""
    directories = [default_rules_dir(), *(extra_dirs or [])]
    rules: dict[str, Rule] = {}
    for directory in directories:
        if not directory.is_dir():
            raise RuleError(f"{directory}: not a directory of rules")
        for path in sorted(directory.glob("*.toml")):
            if path.name == CAUSES_FILE:
                continue
            rule = load_rule(path)
            rules[rule.id] = replace(rule, pack_dirs=tuple(str(d) for d in directories))
    return [rules[k] for k in sorted(rules)]


def _run(
    con: duckdb.DuckDBPyConnection, rule: Rule, store: turnstore.TurnStore | None = None
) -> pl.DataFrame:
    """One rule's findings: its result columns, `details` JSON text, and the rule's labels.
    Over a store's turns, a query that runs out of memory runs again with more (retrying)."""

    def found() -> pa.Table:
        relation = con.sql(rule.query)
        columns = dict(zip(relation.columns, relation.types, strict=True))
        missing = set(RESULT_COLUMNS) - set(columns)
        if missing:
            raise RuleError(f"{rule.path}: query must return {', '.join(sorted(missing))}")
        table = relation.project(", ".join([*RESULT_COLUMNS, _details(rule, columns)]))
        return table.to_arrow_table()

    try:
        got = found() if store is None else store.retrying(found)
        frame = cast(pl.DataFrame, pl.from_arrow(got))
    except duckdb.InterruptException as exc:
        raise KeyboardInterrupt from exc
    except duckdb.Error as exc:
        # DuckDB reports a Ctrl-C it met in Python as an error of the query: the interrupt.
        interrupts.raise_if_interrupted(exc)
        raise RuleError(f"{rule.path}: query failed: {exc}") from None
    except Exception as exc:  # RuntimeError("Query interrupted") while fetching
        interrupts.raise_if_interrupted(exc)
        raise
    return frame.with_columns(
        pl.lit(rule.id).alias("rule"),
        pl.lit(rule.severity).alias("severity"),
        pl.lit(rule.confidence).alias("confidence"),
        pl.lit(rule.cause).alias("cause"),
        pl.col("turn_index").cast(pl.Int64),
        pl.col("message").cast(pl.String),
        pl.col("evidence").cast(pl.String),
        pl.col("details").cast(pl.String),
    )


def _details(rule: Rule, columns: dict[str, Any]) -> str:
    """The projection that turns the optional `data` column into JSON object text."""
    if "data" not in columns:
        return "null::varchar as details"
    kind = str(columns["data"]).upper()
    if kind.startswith(("STRUCT", "MAP")):
        return "to_json(data)::varchar as details"
    if kind == "JSON":
        return "data::varchar as details"
    raise RuleError(
        f"{rule.path}: the data column must be a struct ({{'attempts': attempts}}), a map or "
        f"JSON, not {kind}"
    )


def _located(
    con: duckdb.DuckDBPyConnection, turns: pl.DataFrame | turnstore.TurnStore, found: pl.DataFrame
) -> pl.DataFrame:
    """Where each turn the findings name was read: of a store, only those turns are fetched."""
    if isinstance(turns, pl.DataFrame):
        return turns.select("trajectory_id", "turn_index", *_LOCATION)
    con.register("_named", found.select("trajectory_id", "turn_index").unique().to_arrow())
    got = con.sql(
        f"select trajectory_id, turn_index, {', '.join(_LOCATION)} from {turnstore.TABLE} "
        "semi join _named using (trajectory_id, turn_index) "
        f"order by {turnstore.ROW}"
    ).to_arrow_table()
    return cast(pl.DataFrame, pl.from_arrow(got))


@dataclass
class Checked:
    findings: pl.DataFrame
    # source_path -> rule id -> missing columns, for rules that could not run on that file
    not_checked: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def _present_columns(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    """Per source file, the columns that hold at least one value."""
    cols = [c for c in schema.TURNS.names if c != "source_path"]
    held = ", ".join(f'bool_or("{c}" is not null)' for c in cols)
    rows = con.execute(f"select source_path, {held} from turns group by source_path").fetchall()
    return {
        row[0]: {c for c, has in zip(cols, row[1:], strict=True) if has} | {"source_path"}
        for row in rows
    }


_LOCATION = ["run_id", "task_id", "trial", "role", "actor", "source_path", "source_line"]


def check(
    turns: pl.DataFrame | turnstore.TurnStore, trajectories: pl.DataFrame, rules: list[Rule]
) -> Checked:
    """Run every rule over the tables; findings sorted by file, line, rule. The turns are a
    frame, or a store whose on-disk table the rules read as it is."""
    if isinstance(turns, turnstore.TurnStore):
        con = turns.con.cursor()
        con.execute(
            f"create temp view turns as select * exclude ({turnstore.ROW}) from {turnstore.TABLE}"
        )
    else:
        con = duckdb.connect()
        # The newest Arrow layout keeps polars' string views: DuckDB reads them as they are,
        # where the default layout would copy every text column of the turns.
        con.register("turns", turns.to_arrow(compat_level=pl.CompatLevel.newest()))
    # Vocabulary the rules share (provider_errors.py: how each provider words an overflow).
    for macro in provider_errors.sql_macros():
        con.execute(macro)
    con.register("trajectories", trajectories.to_arrow())
    try:
        return _checked(con, turns, trajectories, rules)
    finally:
        con.close()


def _checked(
    con: duckdb.DuckDBPyConnection,
    turns: pl.DataFrame | turnstore.TurnStore,
    trajectories: pl.DataFrame,
    rules: list[Rule],
) -> Checked:
    present = _present_columns(con)
    not_checked: dict[str, dict[str, list[str]]] = {}
    for path, cols in sorted(present.items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
        for rule in rules:
            if not rule.checkable(cols):
                not_checked.setdefault(path, {})[rule.id] = rule.missing(cols)
    frames = []
    with interrupts.watched():
        store = turns if isinstance(turns, turnstore.TurnStore) else None
        for rule in rules:
            frames.append(_run(con, rule, store))
    empty = cast(pl.DataFrame, pl.from_arrow(pa.Table.from_pylist([], schema=schema.FINDINGS)))
    if not frames:
        return Checked(empty, not_checked)
    found = pl.concat(frames, how="vertical_relaxed")
    located = found.join(
        _located(con, turns, found), on=["trajectory_id", "turn_index"], how="left"
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
    findings = (
        fingerprint.assign(located)
        .select(schema.FINDINGS.names)
        .sort(["source_path", "source_line", "rule", "turn_index"], nulls_last=True)
    )
    return Checked(findings, not_checked)
