"""Ingest: files in, tables out. Each file's format is detected from its first bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from forensics.ingest import files, tau_log, tau_results
from forensics.ingest.records import Collector


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    sniff: Callable[[str], str | None]  # head of the file -> why it matches, or None
    ingest: Callable[[Path, Collector], int]


def _sniff_tau_results(head: str) -> str | None:
    if tau_results.looks_like(head):
        return "JSON array whose first element has task_id and traj (tau-bench results)"
    return None


def _sniff_text(head: str) -> str | None:
    return "text: scanned line by line for JSON / Python-repr objects and tau-bench markers"


# First match wins; the text scanner takes whatever else is text and reports it if it finds
# nothing.
FORMATS: list[Format] = [
    Format(
        tau_results.FORMAT,
        "tau-bench results / checkpoint JSON",
        _sniff_tau_results,
        tau_results.ingest,
    ),
    Format(tau_log.FORMAT, "text log with embedded messages", _sniff_text, tau_log.ingest),
]


@dataclass
class FileReport:
    path: str
    format: str | None
    reason: str
    records: int


@dataclass
class Ingested:
    turns: pa.Table
    trajectories: pa.Table
    rejects: pa.Table
    files: list[FileReport]


def detect(head: bytes) -> tuple[Format | None, str]:
    """The format of a file from its first bytes, and the reason for the verdict."""
    if not head.strip():
        return None, "empty file"
    if b"\x00" in head:
        return None, "binary file (NUL bytes), not a log or JSON"
    text = head.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(8, len(text) // 100):
        return None, "binary file (mostly invalid UTF-8), not a log or JSON"
    for fmt in FORMATS:
        if (why := fmt.sniff(text)) is not None:
            return fmt, why
    return None, "unknown format"


def ingest(paths: list[str]) -> Ingested:
    """Read every file named by paths (files, directories, globs) into the tables."""
    collector = Collector()
    reports: list[FileReport] = []
    for path in files.expand(paths):
        try:
            fmt, why = detect(files.head(path))
        except OSError as exc:
            fmt, why = None, f"cannot read: {exc.strerror or exc}"
        if fmt is None:
            collector.reject(str(path), None, why)
            reports.append(FileReport(str(path), None, why, 0))
            continue
        try:
            records = fmt.ingest(path, collector)
        except (OSError, EOFError) as exc:  # e.g. a truncated .gz
            collector.reject(str(path), None, f"read error: {exc}", source_format=fmt.name)
            records = 0
        if records == 0 and not any(r["source_path"] == str(path) for r in collector.reject_rows):
            collector.reject(
                str(path), None, "no recognizable records (unknown format)", "", fmt.name
            )
        reports.append(FileReport(str(path), fmt.name, why, records))
    turns, trajectories, rejects = collector.tables()
    return Ingested(turns, trajectories, rejects, reports)
