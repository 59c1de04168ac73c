"""CPU of enrichment and of each rule's query, in process, on one input (issue 23 item 2).

    python benchmarks/enrich_rules.py FILE [--rounds 3] [--rules] [--digest]

The input is read once (ingest and the redaction pass, not timed); then, each round:
  - `enrich.enrich` over the whole turn table;
  - every rule's query over a native DuckDB table of the enriched turns
    (`CREATE TABLE turns AS SELECT * FROM` the Arrow frame), one query at a time, the result
    fetched as Arrow as the engine fetches it.
Times are process CPU (time.process_time: user + system of this process, every thread), so a
machine shared with other work slows them less than wall time; the minimum and the median over
the rounds are printed. `--rules` lists each rule's CPU, slowest first. `--digest` prints a hash
of the enriched table and of each rule's rows, to compare two trees on the same input.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any, cast

import duckdb
import polars as pl

from forensics import pipeline
from forensics.check import engine, enrich, provider_errors


def _cpu(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = work()
    return time.process_time() - start, out


def _digest(frame: pl.DataFrame) -> str:
    # The rows as JSON lines in a fixed order: equal digests are equal tables, nulls and all
    # (Arrow IPC bytes also depend on how the buffers happen to be laid out).
    data = frame.sort(frame.columns, nulls_last=True).write_ndjson()
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _fetch(con: duckdb.DuckDBPyConnection, query: str) -> Any:
    # fetched as Arrow, as the engine fetches a rule's rows
    return con.sql(query).to_arrow_table()


def _connection(turns: pl.DataFrame, trajectories: pl.DataFrame) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for macro in provider_errors.sql_macros():
        con.execute(macro)
    arrow = turns.to_arrow(compat_level=pl.CompatLevel.newest())  # noqa: F841 (read by name)
    con.execute("create table turns as select * from arrow")
    tables = trajectories.to_arrow()  # noqa: F841
    con.execute("create table trajectories as select * from tables")
    return con


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rules", action="store_true", help="each rule's CPU, slowest first")
    parser.add_argument("--digest", action="store_true", help="hashes of the results")
    args = parser.parse_args()

    settings = pipeline.load_settings(False)
    data = pipeline.read(pipeline.expand([args.file], settings), settings)
    raw = pipeline.frame(data.turns)
    trajectories = pipeline.frame(data.trajectories)
    del data
    rules = engine.load_rules()
    print(f"{args.file}: {raw.height} turns, {len(rules)} rules, {args.rounds} rounds")

    enrich_cpu: list[float] = []
    rule_cpu: dict[str, list[float]] = {r.id: [] for r in rules}
    turns = raw
    for _ in range(args.rounds):
        seconds, turns = _cpu(lambda: enrich.enrich(raw, []))
        enrich_cpu.append(seconds)
    con = _connection(turns, trajectories)
    found: dict[str, pl.DataFrame] = {}
    for _ in range(args.rounds):
        for rule in rules:
            seconds, table = _cpu(partial(_fetch, con, rule.query))
            rule_cpu[rule.id].append(seconds)
            found[rule.id] = cast(pl.DataFrame, pl.from_arrow(table))
    con.close()

    def line(name: str, values: list[float]) -> str:
        return f"{name:32} min {min(values):7.3f} s  median {statistics.median(values):7.3f} s"

    print(line("enrich", enrich_cpu))
    totals = [sum(rule_cpu[r.id][i] for r in rules) for i in range(args.rounds)]
    print(line("rule queries (native table)", totals))
    if args.rules:
        for rid in sorted(rule_cpu, key=lambda k: -min(rule_cpu[k])):
            print("  " + line(rid, rule_cpu[rid]) + f"  rows {found[rid].height}")
    if args.digest:
        print(f"enriched turns {_digest(turns)}")
        for rid in sorted(found):
            print(f"  {rid:32} {_digest(found[rid])}")


if __name__ == "__main__":
    main()
