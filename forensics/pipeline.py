"""The pipeline as functions: files -> turns -> findings -> causes. The CLI only wires it up."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from forensics import diagnose as diagnose_mod
from forensics import engine, enrich, ingest, schema
from forensics.config import Settings
from forensics.ingest.files import InputError
from forensics.redact import redact_name, redact_table, redact_text
from forensics.result import ScanResult


def scan(
    paths: list[str],
    rules_dirs: list[Path] | None = None,
    settings: Settings | None = None,
    *,
    exclude: list[Path] | None = None,
) -> ScanResult:
    """Scan files, directories or globs; raises files.InputError / engine.RuleError /
    config.ConfigError on misuse. settings: disabled rules, severity overrides, ignore-paths,
    size limits; exclude: the scan's own outputs, skipped when a directory walk meets them."""
    settings = settings or Settings()
    rules = settings.apply(engine.load_rules(rules_dirs))
    data = redacted(
        ingest.ingest(
            paths,
            exclude=exclude,
            limits=settings.limits,
            ignore=settings.ignores if settings.ignore_paths else None,
        )
    )
    if settings.ignore_paths and not data.files and data.skipped:
        raise InputError(f"every input file is excluded by ignore-paths ({settings.where()})")
    turns = enrich.enrich(data.turns)
    trajectories = pl.from_arrow(data.trajectories)
    rejects = pl.from_arrow(data.rejects)
    checked = engine.check(turns, trajectories, rules)  # type: ignore[arg-type]
    diagnosis = diagnose_mod.diagnose(
        checked.findings,
        turns,
        trajectories,  # type: ignore[arg-type]
        rules,
        engine.default_rules_dir(),
    )
    return ScanResult(
        turns=turns,
        trajectories=trajectories,  # type: ignore[arg-type]
        findings=checked.findings,
        rejects=rejects,  # type: ignore[arg-type]
        files=data.files,
        skipped=data.skipped,
        rules=rules,
        not_checked=checked.not_checked,
        diagnosis=diagnosis,
    )


def redacted(data: ingest.Ingested) -> ingest.Ingested:
    """The one redaction pass, between ingest and enrichment: every column the schema marks
    (Column.redact) of every table, and the file list. Nothing downstream sees a secret."""

    def table(t: pa.Table) -> pa.Table:
        return redact_table(t, schema.redacted_columns(t.schema))

    files = [
        replace(
            f,
            path=redact_name(f.path),
            reason=redact_text(f.reason) or f.reason,
            note=redact_text(f.note),
        )
        for f in data.files
    ]
    skipped = [(redact_name(p), redact_text(r) or r) for p, r in data.skipped]
    return ingest.Ingested(
        table(data.turns), table(data.trajectories), table(data.rejects), files, skipped
    )


def connect(
    paths: list[str],
    rules_dirs: list[Path] | None = None,
    settings: Settings | None = None,
) -> duckdb.DuckDBPyConnection:
    """Scan and return a DuckDB connection over every table and view, for notebooks."""
    return scan(paths, rules_dirs, settings).connection()
