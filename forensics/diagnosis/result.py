"""The result of a scan and its tables: what every output stage reads.

`ScanResult` holds the four ingested and checked tables with the diagnosis; `tables()` derives
the causes and runs tables, and `register()` puts all of them, with the views, on a DuckDB
connection. The writers (store.py), the report model (report.py) and notebooks build on this
module; it imports nothing above the diagnosis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import duckdb
import polars as pl
import pyarrow as pa

from forensics import ingest, schema
from forensics.check import engine, turnstore
from forensics.check.turnstore import TurnStore
from forensics.diagnosis import diagnose as diagnose_mod

# name -> (description, select). Views over the tables, in every store.
VIEWS: dict[str, tuple[str, str]] = {
    "rule_rates": (
        "Per rule that fired, agent model and variant: the share of trajectories with the rule.",
        """
with t as (
  select trajectory_id,
         coalesce(agent_model, '(unknown)') as agent_model,
         coalesce(variant, '(none)') as variant
  from trajectories
),
groups as (select agent_model, variant, count(*) as trajectories from t group by all),
hits as (
  select distinct f.rule, t.agent_model, t.variant, f.trajectory_id
  from findings f join t using (trajectory_id)
)
select r.rule, g.agent_model, g.variant, g.trajectories,
       count(h.trajectory_id) as trajectories_with_rule,
       round(count(h.trajectory_id) / g.trajectories, 4) as rate
from (select distinct rule from findings) r
cross join groups g
left join hits h
  on h.rule = r.rule and h.agent_model = g.agent_model and h.variant = g.variant
group by r.rule, g.agent_model, g.variant, g.trajectories
order by r.rule, g.agent_model, g.variant
""",
    ),
    "trajectory_findings": (
        "One row per trajectory: reward and its findings (count, high or critical, rules).",
        """
select t.trajectory_id, t.run_id, t.task_id, t.trial, t.variant, t.agent_model, t.reward,
       t.turn_count,
       count(f.finding_id) as findings,
       count(f.finding_id) filter (where f.severity in ('high', 'critical')) as high_findings,
       coalesce(list_sort(list_distinct(list(f.rule) filter (where f.rule is not null))),
                []::varchar[]) as rules
from trajectories t left join findings f using (trajectory_id)
group by t.trajectory_id, t.run_id, t.task_id, t.trial, t.variant, t.agent_model, t.reward,
         t.turn_count
order by t.trajectory_id
""",
    ),
    "rule_pairs": (
        "Pairs of rules that fire in the same trajectory, and in how many trajectories.",
        """
with hits as (select distinct trajectory_id, rule from findings)
select a.rule as rule_a, b.rule as rule_b, count(*) as trajectories
from hits a join hits b on a.trajectory_id = b.trajectory_id and a.rule < b.rule
group by a.rule, b.rule
order by trajectories desc, rule_a, rule_b
""",
    ),
}


@dataclass
class ScanResult:
    # The turns as a frame, or the store a scan streamed them to (check.turnstore, spilling):
    # then `turns` reads them whole only when asked, and SQL reads them where they are.
    turn_source: pl.DataFrame | TurnStore
    trajectories: pl.DataFrame
    findings: pl.DataFrame
    rejects: pl.DataFrame
    files: list[ingest.FileReport]
    skipped: list[tuple[str, str]]
    rules: list[engine.Rule]
    not_checked: dict[str, dict[str, list[str]]]
    diagnosis: diagnose_mod.Diagnosis
    # The config file whose [tool.forensics] the scan applied, relative to the working
    # directory (Settings.shown_source); None when none was.
    config: str | None = None
    _con: duckdb.DuckDBPyConnection | None = field(default=None, init=False, repr=False)
    _turns: pl.DataFrame | None = field(default=None, init=False, repr=False)

    def __repr__(self) -> str:
        counts = f"files={len(self.files)}, trajectories={self.trajectories.height}, "
        counts += f"turns={self.turn_count}, findings={self.findings.height}, "
        return f"{type(self).__name__}({counts}rejects={self.rejects.height})"

    @property
    def turns(self) -> pl.DataFrame:
        """Every turn (schema.TURNS) as one frame. A scan keeps its turns in its store: the frame is
        read the first time it is asked for, and holds them all in memory; `sql()` does not."""
        if isinstance(self.turn_source, pl.DataFrame):
            return self.turn_source
        if self._turns is None:
            self._turns = self.turn_source.frame()
        return self._turns

    @property
    def turn_count(self) -> int:
        source = self.turn_source
        return source.height if isinstance(source, pl.DataFrame) else source.count()

    def turn_paths(self) -> list[str]:
        """The files that gave turns, sorted."""
        if isinstance(self.turn_source, pl.DataFrame):
            return sorted(self.turn_source["source_path"].drop_nulls().unique().to_list())
        got = self.turn_source.sql(
            f"select distinct source_path from {turnstore.TABLE} where source_path is not null"
        )
        return sorted(got["source_path"].to_list())

    def turns_of(self, keys: list[str]) -> pl.DataFrame:
        """The turns whose turn_key is one of keys, in scan order."""
        if isinstance(self.turn_source, pl.DataFrame):
            return self.turn_source.filter(pl.col("turn_key").is_in(keys))
        return self.turn_source.keyed(keys).drop(turnstore.ROW)

    def connection(self) -> duckdb.DuckDBPyConnection:
        """DuckDB with every table of schema.TABLES and the views of VIEWS (the turns read
        where the scan keeps them)."""
        if self._con is None:
            source = self.turn_source
            self._con = duckdb.connect() if isinstance(source, pl.DataFrame) else source.cursor()
            register(self._con, self)
        return self._con

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        """Query the tables and views with DuckDB: `.pl()` or `.fetchall()` on the result.

        One connection per scan, kept open, so relations stay valid after this returns.
        """
        return self.connection().sql(query)


def causes_frame(result: ScanResult) -> pl.DataFrame:
    rows = [
        {
            "rank": c.rank,
            "cause": c.id,
            "title": c.title,
            "severity": c.severity,
            "confidence": c.confidence,
            "trajectories": c.trajectories,
            "findings": c.turns,
            "reward_lost": c.reward_lost,
            "why_ranked": c.why_ranked,
            "rules": c.rules,
            "explains": c.explains,
            "fixes": c.fixes,
            "trajectory_ids": c.trajectory_ids,
            "evidence": c.evidence,
        }
        for c in result.diagnosis.causes
    ]
    # from_arrow gives a Series only for an Array: a Table is a DataFrame.
    return cast(pl.DataFrame, pl.from_arrow(pa.Table.from_pylist(rows, schema=schema.CAUSES)))


# Run metadata keys that name the benchmark domain, and that say when the run started.
_DOMAIN_KEYS = ("domain", "env", "environment")
_STARTED_KEYS = ("started", "timestamp", "start_time")
# tau-bench names its results file ..._MMDDHHMMSS.json (datetime.now().strftime("%m%d%H%M%S")).
_TAU_STAMP = r"_(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})\.json$"


def _label(keys: tuple[str, ...]) -> pl.Expr:
    """The first of keys present in a trajectory's labels."""
    found = [
        pl.col("labels")
        .list.eval(
            pl.element().filter(pl.element().struct.field("key") == key).struct.field("value")
        )
        .list.first()
        for key in keys
    ]
    return pl.coalesce(found)


def runs_frame(result: ScanResult) -> pl.DataFrame:
    trajectories = result.trajectories.with_columns(
        domain=_label(_DOMAIN_KEYS),
        started=_label(_STARTED_KEYS),
        stamp_from=pl.coalesce(_label(("results_file",)), pl.col("source_path")),
    ).with_columns(
        started=pl.coalesce(
            "started",
            pl.col("stamp_from")
            .str.extract_groups(_TAU_STAMP)
            .struct.with_fields(
                pl.format(
                    "{}-{} {}:{}:{}",
                    *(pl.field(str(i)) for i in range(1, 6)),
                ).alias("stamp")
            )
            .struct.field("stamp"),
        )
    )
    traj = (
        trajectories.sort(["run_id", "source_path", "source_line"], nulls_last=True)
        .group_by("run_id", maintain_order=True)
        .agg(
            pl.col("source_path").first(),
            pl.col("source_format").first(),
            pl.col("agent_model").drop_nulls().first(),
            pl.col("user_model").drop_nulls().first(),
            pl.col("variant").drop_nulls().first(),
            pl.col("domain").drop_nulls().first(),
            pl.col("started").drop_nulls().min(),
            pl.col("sources").list.explode(keep_nulls=False, empty_as_null=False).unique().sort(),
            pl.len().cast(pl.Int64).alias("trajectories"),
            pl.col("reward").mean().alias("mean_reward"),
        )
    )
    if isinstance(result.turn_source, pl.DataFrame):
        turns = result.turns.group_by("run_id").agg(pl.len().cast(pl.Int64).alias("turns"))
    else:
        turns = result.turn_source.sql(
            f"select run_id, count(*)::bigint as turns from {turnstore.TABLE} group by run_id"
        )
    found = result.findings.group_by("run_id").agg(
        pl.len().cast(pl.Int64).alias("findings"),
        pl.col("trajectory_id").n_unique().cast(pl.Int64).alias("trajectories_with_findings"),
    )
    runs = (
        traj.join(turns, on="run_id", how="left", nulls_equal=True)
        .join(found, on="run_id", how="left", nulls_equal=True)
        .with_columns(
            pl.col("turns", "findings", "trajectories_with_findings").fill_null(0),
        )
    )
    return runs.select(schema.RUNS.names)


def trajectories_frame(result: ScanResult) -> pl.DataFrame:
    """The trajectories with what diagnosis decided about each (fault_class)."""
    split = result.diagnosis.score
    classes = split.episode_class if split else {}
    fault = pl.col("trajectory_id").replace_strict(classes, default=None, return_dtype=pl.String)
    return result.trajectories.with_columns(fault.alias("fault_class"))


def tables(result: ScanResult, *, turns: bool = True) -> dict[str, pl.DataFrame]:
    """Every table of schema.TABLES for this scan, in that order (without turns: the others)."""
    frames = {
        "turns": result.turns if turns else pl.DataFrame(),
        "trajectories": trajectories_frame(result),
        "findings": result.findings,
        "rejects": result.rejects,
        "causes": causes_frame(result),
        "runs": runs_frame(result),
    }
    return {name: frames[name] for name in schema.TABLES if turns or name != "turns"}


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def create_views(con: duckdb.DuckDBPyConnection, temporary: bool) -> None:
    kind = "temp view" if temporary else "view"
    for name, (doc, select) in VIEWS.items():
        con.execute(f"create or replace {kind} {name} as {select}")
        if not temporary:
            con.execute(f"comment on view {name} is {sql_string(doc)}")


def register(con: duckdb.DuckDBPyConnection, result: ScanResult) -> None:
    """Every table and view of the scan on con: registered frames, and the turns a store keeps
    as a view of its table (con is then a cursor of the store)."""
    stored = not isinstance(result.turn_source, pl.DataFrame)
    for name, frame in tables(result, turns=not stored).items():
        con.register(name, frame.select(schema.TABLES[name].names).to_arrow())
    if stored:
        names = ", ".join(f'"{c}"' for c in schema.TURNS.names)
        con.execute(f"create temp view turns as select {names} from main.{turnstore.TABLE}")
    create_views(con, temporary=True)
