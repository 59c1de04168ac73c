"""The scan's turns out of Python: redacted and enriched batch by batch as the readers hand them
over, then kept in a DuckDB database held to a memory limit, which spills the table to a
temporary directory beyond it; the rules, diagnosis and the outputs read them there with SQL.
A scan's memory then follows the size of a batch, not of its input (issue 23): nothing holds
every turn in Python or Arrow at once.

A batch is whole episodes (the collector cuts only between episodes), so every derived column,
which compares a turn only with the turns of its own episode, comes out as it would over the
whole table. `_row` is each turn's position in the scan, the order every output keeps.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

import duckdb
import polars as pl
import pyarrow as pa

from forensics import interrupts, schema
from forensics.check import enrich
from forensics.redact import redact_table

T = TypeVar("T")
ROW = "_row"
TABLE = "turn_rows"
# Turns are enriched this many (or this many bytes) at a time: large enough that polars'
# per-call costs vanish, small enough that a batch and its intermediates (word lists, bigram
# hashes, rewritten texts: several times the batch) stay well under the memory budget.
BATCH_ROWS = 16_384
BATCH_BYTES = 12 << 20
# DuckDB's own buffers (the table's pages, the rules' joins and sorts) stay under this; beyond
# it DuckDB spills to the temporary directory instead of growing.
MEMORY_LIMIT_MB = 256
# A query that needs more at once (a window over a large partition, which DuckDB does not
# spill) is run again with twice the limit, and again, up to this share of the machine's
# memory: a large scan costs memory where it must, never its result.
MEMORY_CEILING = 0.5
_RAW = schema.RAW_TURNS.names
_COLUMNS = schema.TURNS.names


_SPILL: str | None = None  # this process's directory of the stores' spill directories


def _spill_directory() -> str:
    """A directory of its own for a store's spilled pages, in one per process that goes when
    the process exits: a store's database lives as long as a connection to it (a notebook's
    `forensics.connect(...)`), which may be longer than the store."""
    global _SPILL
    if _SPILL is None or not os.path.isdir(_SPILL):
        _SPILL = tempfile.mkdtemp(prefix="forensics-turns-")
        atexit.register(shutil.rmtree, _SPILL, True)
    return tempfile.mkdtemp(dir=_SPILL)


class TurnStore:
    """The enriched turns of one scan in a DuckDB table that spills to disk (`turn_rows`: the
    columns of schema.TURNS, then `_row`). The database goes with the last connection to it
    (DuckDB then deletes what it spilled); the spill directories when the process exits.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from forensics import schema
    >>> store = TurnStore()
    >>> store.height
    0
    >>> store.frame().columns == schema.TURNS.names
    True
    """

    def __init__(self) -> None:
        self.directory = _spill_directory()
        # In memory, spilling to the directory beyond the limit: a database file would add its
        # write-ahead log and checkpoints (fsyncs) for a table that lives one scan.
        self.con = duckdb.connect(":memory:")
        self._limit_mb = MEMORY_LIMIT_MB
        self.con.execute(f"set memory_limit = '{self._limit_mb}MB'")
        self.con.execute(f"set temp_directory = '{os.path.join(self.directory, 'spill')}'")
        # The table lives for one scan: compressing it costs more CPU (2.5x per insert,
        # measured) than the disk it saves is worth.
        self.con.execute("pragma force_compression = 'uncompressed'")
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self.height = 0  # rows written, the next turn's _row
        # Turns whose derived values could not be computed: rows of schema.REJECTS.
        self.failures: list[dict[str, Any]] = []
        empty = enrich.enrich(pa.Table.from_pylist([], schema=schema.RAW_TURNS))
        self._insert(empty, pl.Series(ROW, [], pl.Int64), create=True)

    def retrying(self, run: Callable[[], T]) -> T:
        """run(), again with a higher memory limit each time DuckDB runs out (see
        MEMORY_CEILING); past the ceiling its OutOfMemoryException is run's failure."""
        while True:
            try:
                return run()
            except duckdb.OutOfMemoryException:
                ceiling = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                ceiling_mb = int(ceiling * MEMORY_CEILING) >> 20
                if self._limit_mb >= ceiling_mb:
                    raise
                self._limit_mb = min(self._limit_mb * 2, ceiling_mb)
                self.con.execute(f"set memory_limit = '{self._limit_mb}MB'")

    def close(self) -> None:
        """Close the store's connection and remove its spill directory now."""
        self.con.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    # Writing -----------------------------------------------------------------------------

    def write(self, batch: pa.RecordBatch) -> None:
        """A batch of raw turns (schema.RAW_TURNS) of whole episodes: the collector's sink."""
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._pending_bytes += batch.nbytes
        if self._pending_rows >= BATCH_ROWS or self._pending_bytes >= BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Redact, enrich and store what is pending."""
        if not self._pending:
            return
        raw = pa.Table.from_batches(self._pending, schema=schema.RAW_TURNS)
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        turns = enrich.enrich(_redacted(raw), self.failures)
        del raw
        rows = pl.int_range(self.height, self.height + turns.height, dtype=pl.Int64, eager=True)
        self._insert(turns, rows.alias(ROW))

    def _insert(self, turns: pl.DataFrame, rows: pl.Series, *, create: bool = False) -> None:
        # The newest Arrow layout keeps polars' string views: DuckDB reads them as they are.
        data = (
            turns.select(_COLUMNS).with_columns(rows).to_arrow(compat_level=pl.CompatLevel.newest())
        )
        self.con.register("_incoming", data)
        try:
            if create:
                self.con.execute(f"create table {TABLE} as select * from _incoming")
            else:
                self.con.execute(f"insert into {TABLE} select * from _incoming")
        finally:
            self.con.unregister("_incoming")
        self.height += turns.height

    # Reading -----------------------------------------------------------------------------

    def sql(
        self,
        query: str,
        params: Sequence[object] | None = None,
        tables: dict[str, pa.Table] | None = None,
    ) -> pl.DataFrame:
        """A query's result as a frame, on a cursor of its own with `tables` registered."""
        cursor = self.con.cursor()
        try:
            for name, table in (tables or {}).items():
                cursor.register(name, table)
            with interrupts.watched():
                got = self.retrying(lambda: cursor.sql(query, params=params).to_arrow_table())
        finally:
            cursor.close()
        return cast(pl.DataFrame, pl.from_arrow(got))

    def frame(self) -> pl.DataFrame:
        """Every turn, in scan order, as one frame (schema.TURNS): as large as the scan."""
        every = self.sql(f"select * exclude ({ROW}) from {TABLE} order by {ROW}")
        return cast(pl.DataFrame, pl.from_arrow(every.to_arrow().cast(schema.TURNS)))

    def chunks(
        self,
        columns: Sequence[str],
        rows: int = BATCH_ROWS,
        where: str = "true",
        params: Sequence[object] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The turns' columns (those `where` keeps) in scan order, `rows` at a time."""
        cursor = self.con.cursor()
        try:
            query = cursor.sql(
                f"select {', '.join(columns)} from {TABLE} where {where} order by {ROW}",
                params=params,
            )
            yield from query.to_arrow_reader(rows)
        finally:
            cursor.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A connection of its own to the store's database (its temp objects its own)."""
        return self.con.cursor()

    def keyed(self, keys: Sequence[str | None]) -> pl.DataFrame:
        """The turns whose turn_key is one of keys, in scan order, `_row` first."""
        named = sorted({k for k in keys if k is not None})  # an episode's finding: no turn
        wanted = pa.table({"turn_key": pa.array(named, pa.string())})
        return self.sql(
            f"select {ROW}, * exclude ({ROW}) from {TABLE} "
            f"where turn_key in (select turn_key from _wanted) order by {ROW}",
            tables={"_wanted": wanted},
        )

    def of_trajectories(self, ids: Sequence[str], columns: Sequence[str]) -> pl.DataFrame:
        """The turns of some trajectories, in scan order, with `_row`."""
        wanted = pa.table({"trajectory_id": pa.array(list(ids), pa.string())})
        return self.sql(
            f"select {', '.join([*columns, ROW])} from {TABLE} "
            f"where trajectory_id in (select trajectory_id from _wanted) order by {ROW}",
            tables={"_wanted": wanted},
        )

    def replace(self, ids: Sequence[str], raw: pl.DataFrame) -> None:
        """The turns of trajectories `ids` replaced by `raw` (raw columns and their `_row`),
        enriched again: fusion completes episodes after their turns were stored."""
        turns = enrich.enrich(raw.select(_RAW).to_arrow().cast(schema.RAW_TURNS), [])
        wanted = pa.table({"trajectory_id": pa.array(list(ids), pa.string())})
        self.con.register("_wanted", wanted)
        try:
            self.con.execute(
                f"delete from {TABLE} where trajectory_id in (select trajectory_id from _wanted)"
            )
        finally:
            self.con.unregister("_wanted")
        self._insert(turns, raw.get_column(ROW))
        # Plain scans then return the turns in scan order again, as they did before.
        self.con.execute(f"create or replace table {TABLE} as select * from {TABLE} order by {ROW}")
        self.height = self.count()

    def count(self) -> int:
        got = self.con.cursor().execute(f"select count(*) from {TABLE}").fetchone()
        return int(got[0]) if got else 0


def _redacted(raw: pa.Table) -> pa.Table:
    """The one redaction pass over turns (pipeline.redacted does the other tables)."""
    return redact_table(raw, schema.redacted_columns(raw.schema))
