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
from forensics.check import engine
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
    turns: pl.DataFrame
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

    def __repr__(self) -> str:
        counts = f"files={len(self.files)}, trajectories={self.trajectories.height}, "
        counts += f"turns={self.turns.height}, findings={self.findings.height}, "
        return f"{type(self).__name__}({counts}rejects={self.rejects.height})"

    def connection(self) -> duckdb.DuckDBPyConnection:
        """In-memory DuckDB with every table of schema.TABLES and the views of VIEWS."""
        if self._con is None:
            self._con = duckdb.connect()
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
    turns = result.turns.group_by("run_id").agg(pl.len().cast(pl.Int64).alias("turns"))
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


def tables(result: ScanResult) -> dict[str, pl.DataFrame]:
    """Every table of schema.TABLES for this scan, in that order."""
    frames = {
        "turns": result.turns,
        "trajectories": trajectories_frame(result),
        "findings": result.findings,
        "rejects": result.rejects,
        "causes": causes_frame(result),
        "runs": runs_frame(result),
    }
    return {name: frames[name] for name in schema.TABLES}


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def create_views(con: duckdb.DuckDBPyConnection, temporary: bool) -> None:
    kind = "temp view" if temporary else "view"
    for name, (doc, select) in VIEWS.items():
        con.execute(f"create or replace {kind} {name} as {select}")
        if not temporary:
            con.execute(f"comment on view {name} is {sql_string(doc)}")


def register(con: duckdb.DuckDBPyConnection, result: ScanResult) -> None:
    """Every table and view of the scan, in memory, on con."""
    for name, frame in tables(result).items():
        con.register(name, frame.select(schema.TABLES[name].names).to_arrow())
    create_views(con, temporary=True)
