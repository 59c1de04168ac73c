"""The issue-14 figures: whole processes on the reference workload and on tau-bench inputs.

    python benchmarks/reference.py [--sizes 50,200,500,1000] [--tau 200] [--rounds 3]
                                   [--dir /tmp/forensics-reference]

Capture rows use issue 14's reference workload, `gen_capture.py OUT MB` (agent loops, every
request repeating the growing history and 8 tool schemas). That generator is not part of this
repository: it is looked for in the folder FORENSICS_BENCH names, else in `../shared/bench/`
next to the checkout (where the project's machines keep it). Without it the capture rows use the
project's own generator, `benchmarks/make_capture.py OUT --mb MB` (agent loops of the same kind,
14 tool schemas), and the table names the generator each row used: figures from the two are not
comparable. Tau rows use `benchmarks/make_tau.py` (a console log and a results file grown from
sample_logs/). Inputs are written once into --dir and reused.

Each round runs, one after the other, as separate processes measured from outside by
/usr/bin/time (wall, user+sys CPU, peak RSS, start-up and imports included):
  - `forensics scan FILE --no-report --json OUT`, end to end;
  - for captures, DuckDB `CREATE TABLE t AS SELECT * FROM read_json(FILE)` with 2 threads
    (every column materialised), and a line loop that parses each line with orjson (the
    standard library's json when orjson is not installed; the table says which).
The package is byte-compiled first, as a pip install leaves it (a sandbox that sets
PYTHONDONTWRITEBYTECODE would otherwise recompile it in every process). Medians over the rounds
are printed as a Markdown table. Rounds interleave the programs, so a
busy machine slows all of them alike; the ratios are what to compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The reference workload's generator, outside the repository (see the docstring).
GEN_CAPTURE = Path(os.environ.get("FORENSICS_BENCH", ROOT.parent / "shared" / "bench")) / (
    "gen_capture.py"
)

DUCKDB = """
import sys, duckdb
con = duckdb.connect()
con.execute("SET threads = 2")
con.execute("CREATE TABLE t AS SELECT * FROM read_json(?, format = 'newline_delimited')",
            [sys.argv[1]])
"""

LINE_LOOP = """
import sys
try:
    from orjson import loads
except ImportError:
    from json import loads
with open(sys.argv[1], "rb") as f:
    for line in f:
        loads(line)
"""


def _have_orjson() -> bool:
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


def _timed(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one process, measured by /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as times:
        done = subprocess.run(
            ["/usr/bin/time", "-o", times.name, "-f", "%e %U %S %M", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        last = times.read().strip().splitlines()[-1]
    # scan exits 1 when it finds something; anything else is a failure of the benchmark
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv[:4]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    wall, user, system, rss_kb = last.split()
    return float(wall), float(user) + float(system), int(rss_kb) / 1024


def _scan(path: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "forensics",
        "scan",
        str(path),
        "--no-report",
        "--json",
        str(out),
        "-q",
    ]


def _median(runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    return tuple(statistics.median(r[i] for r in runs) for i in range(3))  # type: ignore[return-value]


def _input(directory: Path, kind: str, mb: float) -> Path:
    if kind == "capture":
        if GEN_CAPTURE.is_file():
            path = directory / f"capture-{mb:g}mb.jsonl"
            argv = [sys.executable, str(GEN_CAPTURE), str(path), f"{mb:g}"]
        else:
            path = directory / f"make-capture-{mb:g}mb.jsonl"
            argv = [sys.executable, str(HERE / "make_capture.py"), str(path), "--mb", f"{mb:g}"]
    else:
        path = directory / f"tau-{kind}-{mb:g}mb.{'log' if kind == 'console' else 'json'}"
        argv = [sys.executable, str(HERE / "make_tau.py"), kind, str(path), "--mb", f"{mb:g}"]
    if not path.exists():
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50,200,500,1000", help="capture sizes in MB")
    parser.add_argument("--tau", default="200", help="console log / results sizes in MB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--dir", type=Path, default=Path(tempfile.gettempdir()) / "forensics-reference"
    )
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "forensics")], check=True)
    out = args.dir / "scan.json"
    loop = "orjson" if _have_orjson() else "json"
    generator = GEN_CAPTURE.name if GEN_CAPTURE.is_file() else "make_capture.py"
    if not GEN_CAPTURE.is_file():
        print(
            f"{GEN_CAPTURE} not found (set FORENSICS_BENCH): capture rows use "
            "benchmarks/make_capture.py, not the reference workload",
            file=sys.stderr,
        )

    print(
        f"| input | MB | scan s | scan CPU s | MB/s | peak RSS | DuckDB s | {loop} loop s "
        f"| scan / DuckDB | scan / {loop} loop |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in (float(s) for s in args.sizes.split(",") if s):
        path = _input(args.dir, "capture", size)
        mb = path.stat().st_size / 1e6
        scans, ducks, loops = [], [], []
        for _ in range(args.rounds):
            scans.append(_timed(_scan(path, out)))
            ducks.append(_timed([sys.executable, "-c", DUCKDB, str(path)]))
            loops.append(_timed([sys.executable, "-c", LINE_LOOP, str(path)]))
        scan, duck, line = _median(scans), _median(ducks), _median(loops)
        print(
            f"| capture ({generator}) | {mb:.0f} | {scan[0]:.1f} | {scan[1]:.1f} "
            f"| {mb / scan[0]:.1f} | {scan[2]:,.0f} MB | {duck[0]:.1f} | {line[0]:.1f} "
            f"| {scan[0] / duck[0]:.1f}x | {scan[0] / line[0]:.1f}x |",
            flush=True,
        )
    for kind in ("console", "results"):
        for size in (float(s) for s in args.tau.split(",") if s):
            path = _input(args.dir, kind, size)
            mb = path.stat().st_size / 1e6
            scan = _median([_timed(_scan(path, out)) for _ in range(args.rounds)])
            print(
                f"| tau-bench {kind} (make_tau.py) | {mb:.0f} | {scan[0]:.1f} | {scan[1]:.1f} "
                f"| {mb / scan[0]:.1f} | {scan[2]:,.0f} MB | | | | |",
                flush=True,
            )


if __name__ == "__main__":
    main()
