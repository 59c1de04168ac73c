"""The scan as SQL tables: a DuckDB file (--db), Parquet files (--parquet), or an in-memory
connection for notebooks, with the same tables (schema.TABLES) and views (VIEWS) everywhere.

Writes stream: each table goes out in slices of BATCH_ROWS rows, converted to Arrow one slice
at a time, so a large scan is not copied whole a second time on its way to disk.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from forensics import atomic, schema
from forensics.check.turnstore import TurnStore
from forensics.diagnosis.result import ScanResult, create_views, sql_string, tables

BATCH_ROWS = 8192
# Below this many runs one Parquet file per table is simplest to read; above it, one file per
# run lets readers prune runs they do not want.
PARTITION_MIN_RUNS = 20
PARTITIONED_TABLES = ("turns", "trajectories", "findings")
# DuckDB otherwise buffers up to 80% of RAM before writing; with a cap it spills to disk. At 376k
# turns (benchmarks/store_memory.py) the extra peak of a --db write drops from 840 to about 550 MiB.
DUCKDB_MEMORY_LIMIT = "512MB"


class StoreError(Exception):
    """A database or query the user named that can not be used (exit code 2)."""


class QueryError(StoreError):
    """The SQL failed: DuckDB's message, whose lines (the query with a caret under the error,
    candidate names) are meant to be read as lines."""


def _slices(frame: pl.DataFrame, target: pa.Schema, rows: int) -> Iterator[pa.Table]:
    frame = frame.select(target.names)
    for offset in range(0, frame.height, rows):
        yield frame.slice(offset, rows).to_arrow().cast(target)


def _stored(
    store: TurnStore, target: pa.Schema, rows: int, run: tuple[str | None] | None = None
) -> Iterator[pa.Table]:
    """The turns a scan keeps in its store (those of one run), read a slice at a time."""
    columns = [f'"{name}"' for name in target.names]
    if run is None:
        batches = store.chunks(columns, rows)
    elif run[0] is None:
        batches = store.chunks(columns, rows, "run_id is null")
    else:
        batches = store.chunks(columns, rows, "run_id = ?", [run[0]])
    for batch in batches:
        yield pa.Table.from_batches([batch]).cast(target)


def _table_slices(
    result: ScanResult, name: str, frame: pl.DataFrame, rows: int
) -> Iterator[pa.Table]:
    target = schema.TABLES[name]
    if name == "turns" and isinstance(result.turn_source, TurnStore):
        return _stored(result.turn_source, target, rows)
    return _slices(frame, target, rows)


def _reader(slices: Iterator[pa.Table], target: pa.Schema) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(target, (b for t in slices for b in t.to_batches()))


def write_duckdb(result: ScanResult, path: Path, rows: int = BATCH_ROWS) -> None:
    """A DuckDB file with every table (columns commented with their schema docs) and view.

    Built under a unique name next to the target and moved into place, so a failed or
    interrupted write never leaves a half database where the last good one was, and two scans
    writing the same target never write into one file.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)) / path.name
    except OSError as exc:
        raise StoreError(f"{path}: cannot write the database: {exc}") from None
    try:
        con = duckdb.connect(str(tmp))
        try:
            con.execute(f"set memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
            for name, frame in _tables(result).items():
                target = schema.TABLES[name]
                con.register("_incoming", _reader(_table_slices(result, name, frame, rows), target))
                con.execute(f"create table {name} as select * from _incoming")
                con.unregister("_incoming")
                for field in target:
                    doc = field.metadata[b"doc"].decode()
                    con.execute(f'comment on column {name}."{field.name}" is {sql_string(doc)}')
            create_views(con, temporary=False)
        finally:
            con.close()
        os.replace(tmp, path)
    except (OSError, duckdb.Error) as exc:
        raise StoreError(f"{path}: cannot write the database: {exc}") from None
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


def write_parquet(
    result: ScanResult, directory: Path, rows: int = BATCH_ROWS, partition: bool | None = None
) -> list[Path]:
    """One Parquet file per table (DIR/turns.parquet, …); with many runs (partition=None:
    at least PARTITION_MIN_RUNS), turns, trajectories and findings get one file per run under
    DIR/<table>/run=<run_id>/part-0.parquet, run_id kept inside each file. Returns the files."""
    try:
        return _write_parquet(result, directory, rows, partition)
    except OSError as exc:
        raise StoreError(f"{directory}: cannot write Parquet: {exc}") from None


def _write_parquet(
    result: ScanResult, directory: Path, rows: int, partition: bool | None
) -> list[Path]:
    frames = _tables(result)
    if partition is None:
        partition = frames["trajectories"]["run_id"].n_unique() >= PARTITION_MIN_RUNS
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, frame in frames.items():
        target = schema.TABLES[name]
        single, parted = directory / f"{name}.parquet", directory / name
        single.unlink(missing_ok=True)
        if parted.is_dir():
            shutil.rmtree(parted)
        if not (partition and name in PARTITIONED_TABLES):
            _write_file(single, _table_slices(result, name, frame, rows), target)
            written.append(single)
            continue
        if name == "turns" and isinstance(result.turn_source, TurnStore):
            runs = result.turn_source.sql("select distinct run_id from turn_rows order by run_id")
            for (run_id,) in runs.iter_rows():
                part = parted / f"run={quote(run_id or '__null__', safe='')}" / "part-0.parquet"
                part.parent.mkdir(parents=True, exist_ok=True)
                _write_file(part, _stored(result.turn_source, target, rows, (run_id,)), target)
                written.append(part)
            continue
        groups = (
            frame.select("run_id")
            .with_row_index("row")
            .group_by("run_id")
            .agg(pl.col("row").sort())  # each run's rows in scan order
            .sort("run_id", nulls_last=True)
        )
        for run_id, index in groups.iter_rows():
            part = parted / f"run={quote(run_id or '__null__', safe='')}" / "part-0.parquet"
            part.parent.mkdir(parents=True, exist_ok=True)
            _write_file(part, _slices(frame[index], target, rows), target)
            written.append(part)
    return written


def _tables(result: ScanResult) -> dict[str, pl.DataFrame]:
    """The tables to write; a scan's stored turns stay there (an empty frame in their place)."""
    stored = isinstance(result.turn_source, TurnStore)
    frames = tables(result, turns=not stored)
    return {name: frames.get(name, pl.DataFrame()) for name in schema.TABLES}


def _write_file(path: Path, slices: Iterator[pa.Table], target: pa.Schema) -> None:
    """One Parquet file, written under a unique name and renamed into place."""
    tmp = atomic.temporary(path)  # the umask's mode, as the text outputs
    try:
        with pq.ParquetWriter(str(tmp), target, compression="zstd") as writer:
            for table in slices:
                writer.write_table(table)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


# A DuckDB database file starts with a checksum, then its magic bytes (storage format, every
# version so far): anything else would be opened by duckdb.connect as something else or fail
# with a message about read-only in-memory databases.
_DUCKDB_MAGIC = (8, b"DUCK")


def _is_duckdb(path: Path) -> bool:
    offset, magic = _DUCKDB_MAGIC
    try:
        with path.open("rb") as f:
            return f.read(offset + len(magic))[offset:] == magic
    except OSError:
        return True  # let connect say what is wrong with it


def _looks_like(path: Path) -> str:
    """What a file that is not a database seems to be, for the error naming it."""
    try:
        with path.open("rb") as f:
            head = f.read(512).lstrip()
    except OSError:
        return ""
    if head[:1] in (b"{", b"["):
        return " (it looks like JSON: a --json result is read by forensics diff, not query)"
    if head.startswith(b"PAR1"):
        return " (it looks like Parquet: DuckDB reads it with read_parquet in any SQL client)"
    return ""


def query(db: Path, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run SQL read-only against a database written by --db: column names and rows."""
    if not db.is_file():
        raise StoreError(f"{db}: no such database (write one with forensics scan --db FILE)")
    if not _is_duckdb(db):
        raise StoreError(
            f"{db}: not a DuckDB database{_looks_like(db)}; query reads the file that "
            "`forensics scan --db FILE` writes"
        )
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:
        raise StoreError(f"{db}: {exc}") from None
    try:
        relation = con.sql(sql)
        if relation is None:  # a statement without a result
            return [], []
        return list(relation.columns), relation.fetchall()
    except duckdb.Error as exc:
        raise QueryError(f"query failed: {exc}") from None
    finally:
        con.close()
