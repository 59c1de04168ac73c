"""Scan throughput on large synthetic agent-loop captures, against DuckDB's bare read_json.

    python benchmarks/capture_throughput.py [--sizes 50,100,200,500] [--repeat 3] [--light]

For each size, benchmarks/make_capture.py writes a capture (kept in --dir and reused), then two
fresh processes run, one after the other (--repeat times; the fastest run of each counts, so a
busy machine disturbs the figures less):
  - `forensics scan FILE --no-report --json OUT`, end to end (ingest, enrich, rules, diagnosis,
    JSON and terminal output), timed around the work, after the imports;
  - DuckDB `CREATE TABLE t AS SELECT * FROM read_json(FILE)` with 2 threads: the bare read
    the issue compares against.
Each process reports its wall time, CPU time and peak RSS (ru_maxrss). The table shows MB/s,
turns/s, peak RSS and scan time / DuckDB time (wall); the last column (seconds per MB) shows
whether time grows linearly with input.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_capture  # noqa: E402

FORENSICS = """
import json, resource, sys, time
from forensics.cli import cli
path, out = sys.argv[1], sys.argv[2]
start, cpu = time.perf_counter(), time.process_time()
try:
    cli.main(["scan", path, "--no-report", "--json", out], standalone_mode=False)
except SystemExit:
    pass
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
summary = json.load(open(out))["summary"]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "cpu": cpu, "turns": summary["turns"], "rss_kb": rss,
                  "trajectories": summary["trajectories"], "findings": summary["findings"],
                  "rejects": summary["rejects"]}))
"""

DUCKDB = """
import json, resource, sys, time
import duckdb
con = duckdb.connect()
con.execute("SET threads = 2")
start, cpu = time.perf_counter(), time.process_time()
con.execute(
    "CREATE TABLE t AS SELECT * FROM read_json(?, format = 'newline_delimited')", [sys.argv[1]]
)
rows = con.execute("SELECT count(*) FROM t").fetchone()[0]
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "cpu": cpu, "rows": rows, "rss_kb": rss}))
"""


def _run(code: str, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fastest(runs: list[dict]) -> dict:
    return min(runs, key=lambda r: r["seconds"])


def measure(path: Path, repeat: int = 1) -> dict:
    scans, ducks = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            scans.append(_run(FORENSICS, str(path), str(Path(tmp) / "result.json")))
        ducks.append(_run(DUCKDB, str(path)))
    scan, duck = _fastest(scans), _fastest(ducks)
    mb = path.stat().st_size / 1e6
    return {
        "mb": mb,
        "scan_s": scan["seconds"],
        "scan_cpu_s": scan["cpu"],
        "duckdb_s": duck["seconds"],
        "duckdb_cpu_s": duck["cpu"],
        "mb_per_s": mb / scan["seconds"],
        "turns": scan["turns"],
        "turns_per_s": scan["turns"] / scan["seconds"],
        "scan_rss_mb": max(r["rss_kb"] for r in scans) / 1024,
        "duckdb_rss_mb": max(r["rss_kb"] for r in ducks) / 1024,
        "ratio": scan["seconds"] / duck["seconds"],
        "s_per_mb": scan["seconds"] / mb,
        "records": duck["rows"],
        "trajectories": scan["trajectories"],
        "findings": scan["findings"],
        "rejects": scan["rejects"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50,100,200,500", help="capture sizes in MB")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "forensics-bench")
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement; fastest wins")
    parser.add_argument("--light", action="store_true", help="captures with four tiny tools")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    header = (
        f"{'MB':>6} {'records':>8} {'turns':>8} {'scan s':>7} {'cpu s':>6} {'MB/s':>6} "
        f"{'turns/s':>8} {'scan RSS MB':>11} {'duckdb s':>8} {'cpu s':>6} {'duckdb RSS MB':>13} "
        f"{'ratio':>6} {'s/MB':>6}"
    )
    print(header)
    for size in (float(s) for s in args.sizes.split(",")):
        path = args.dir / f"capture-{size:g}mb{'-light' if args.light else ''}.jsonl"
        if not path.exists():
            make_capture.write(path, size, light=args.light)
        m = measure(path, args.repeat)
        print(
            f"{m['mb']:6.0f} {m['records']:8d} {m['turns']:8d} {m['scan_s']:7.1f} "
            f"{m['scan_cpu_s']:6.1f} {m['mb_per_s']:6.1f} {m['turns_per_s']:8.0f} "
            f"{m['scan_rss_mb']:11.0f} {m['duckdb_s']:8.1f} {m['duckdb_cpu_s']:6.1f} "
            f"{m['duckdb_rss_mb']:13.0f} {m['ratio']:6.2f} {m['s_per_mb']:6.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
