"""The pipeline as functions: files -> turns -> findings -> causes. The CLI only wires it up."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from forensics import diagnose as diagnose_mod
from forensics import engine, enrich, ingest
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

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        """Query the tables (turns, trajectories, findings, rejects) with DuckDB."""
        con = duckdb.connect()
        for name in ("turns", "trajectories", "findings", "rejects"):
            con.register(name, getattr(self, name).to_arrow())
        return con.sql(query)


def scan(paths: list[str], rules_dirs: list[Path] | None = None) -> ScanResult:
    """Scan files, directories or globs; raises files.InputError / engine.RuleError on misuse."""
    rules = engine.load_rules(rules_dirs)
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
