"""The pipeline as functions: files -> turns -> findings -> causes. The CLI only wires it up."""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from forensics import diagnose as diagnose_mod
from forensics import engine, enrich, ingest
from forensics.config import Settings
from forensics.ingest.files import InputError
from forensics.redact import redact_expr, redact_text


@dataclass
class ScanResult:
    turns: pl.DataFrame
    trajectories: pl.DataFrame
    findings: pl.DataFrame
    rejects: pl.DataFrame
    files: list[ingest.FileReport]
    rules: list[engine.Rule]
    not_checked: dict[str, dict[str, list[str]]]
    diagnosis: diagnose_mod.Diagnosis
    _con: duckdb.DuckDBPyConnection | None = field(default=None, init=False, repr=False)

    def connection(self) -> duckdb.DuckDBPyConnection:
        """In-memory DuckDB with every table of schema.TABLES and the views of store.VIEWS."""
        if self._con is None:
            from forensics import store  # store builds on ScanResult: imported late, no cycle

            self._con = duckdb.connect()
            store.register(self._con, self)
        return self._con

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        """Query the tables and views with DuckDB: `.pl()` or `.fetchall()` on the result.

        One connection per scan, kept open, so relations stay valid after this returns.
        """
        return self.connection().sql(query)


def scan(
    paths: list[str],
    rules_dirs: list[Path] | None = None,
    settings: Settings | None = None,
) -> ScanResult:
    """Scan files, directories or globs; raises files.InputError / engine.RuleError /
    config.ConfigError on misuse. settings: disabled rules, severity overrides, ignore-paths."""
    settings = settings or Settings()
    rules = settings.apply(engine.load_rules(rules_dirs))
    if settings.ignore_paths:
        kept = [p for p in ingest.files.expand(paths) if not settings.ignores(p)]
        if not kept:
            raise InputError(f"every input file is excluded by ignore-paths ({settings.where()})")
        # escaped so a file name with [ or * is read as itself, not re-globbed
        paths = [glob.escape(str(p)) for p in kept]
    data = ingest.ingest(paths)
    turns = enrich.enrich(data.turns)
    trajectories = pl.from_arrow(data.trajectories).with_columns(
        pl.col("labels").list.eval(
            pl.element().struct.with_fields(redact_expr(pl.element().struct.field("value")))
        ),
        redact_expr(pl.col("error")),
    )
    rejects = pl.from_arrow(data.rejects).with_columns(redact_expr(pl.col("excerpt")))
    checked = engine.check(turns, trajectories, rules)  # type: ignore[arg-type]
    diagnosis = diagnose_mod.diagnose(
        checked.findings,
        turns,
        trajectories,  # type: ignore[arg-type]
        rules,
        engine.default_rules_dir(),
    )
    for report in data.files:
        report.reason = redact_text(report.reason) or report.reason
    return ScanResult(
        turns=turns,
        trajectories=trajectories,  # type: ignore[arg-type]
        findings=checked.findings,
        rejects=rejects,  # type: ignore[arg-type]
        files=data.files,
        rules=rules,
        not_checked=checked.not_checked,
        diagnosis=diagnosis,
    )


def connect(
    paths: list[str],
    rules_dirs: list[Path] | None = None,
    settings: Settings | None = None,
) -> duckdb.DuckDBPyConnection:
    """Scan and return a DuckDB connection over every table and view, for notebooks."""
    return scan(paths, rules_dirs, settings).connection()
