"""Peak memory of writing a large scan to DuckDB / Parquet (forensics.store), against a naive
whole-table conversion. Each measurement runs in its own process; peak RSS (ru_maxrss) after
building the scan is subtracted from peak RSS after the write.

    python benchmarks/store_memory.py [copies]     # default 2000 copies of the sample scan

The scan is the sample data replicated with distinct run and trajectory ids (2,000 copies:
about 376,000 turns, 10,000 runs), so the writes see realistic columns at scale.
"""

from __future__ import annotations

import dataclasses
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(copies: int):
    import polars as pl

    import forensics

    base = forensics.scan(
        [str(ROOT / "sample_logs" / "output2.txt"), str(ROOT / "sample_logs" / "tau_bench_*.json")]
    )

    def grow(frame: pl.DataFrame) -> pl.DataFrame:
        parts = []
        for i in range(copies):
            cols = [
                (pl.col(c) + f"@{i}").alias(c)
                for c in ("run_id", "trajectory_id", "turn_key", "finding_id")
                if c in frame.columns
            ]
            parts.append(frame.with_columns(cols))
        return pl.concat(parts)

    return dataclasses.replace(
        base,
        turns=grow(base.turns),
        trajectories=grow(base.trajectories),
        findings=grow(base.findings),
    )


def measure(mode: str, copies: int) -> None:
    import duckdb
    import pyarrow.parquet as pq

    from forensics import store
    from forensics.diagnosis.result import tables

    result = build(copies)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "duckdb":
            store.write_duckdb(result, Path(tmp) / "x.duckdb")
        elif mode == "parquet":
            store.write_parquet(result, Path(tmp) / "pq")
        elif mode == "naive-duckdb":  # whole frames to Arrow at once, then one CREATE TABLE
            con = duckdb.connect(str(Path(tmp) / "x.duckdb"))
            for name, frame in tables(result).items():
                con.register("t", frame.to_arrow())
                con.execute(f"create table {name} as select * from t")
            con.close()
        elif mode == "naive-parquet":
            for name, frame in tables(result).items():
                pq.write_table(frame.to_arrow(), Path(tmp) / f"{name}.parquet")
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    runs = result.trajectories["run_id"].n_unique()
    print(
        f"{mode:<14} turns={result.turns.height:,} runs={runs:,}"
        f"  scan held: {before / 1024:,.0f} MiB  extra peak for the write: "
        f"{(after - before) / 1024:,.0f} MiB  time {seconds:.1f}s"
    )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        measure(sys.argv[2], int(sys.argv[3]))
    else:
        copies = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
        for mode in ("duckdb", "naive-duckdb", "parquet", "naive-parquet"):
            subprocess.run([sys.executable, __file__, "--one", mode, str(copies)], check=True)
