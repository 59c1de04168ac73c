"""Two source trees of forensics on the same inputs, whole processes, interleaved rounds.

    python benchmarks/versions.py --base /tmp/base-tree INPUT... [--rounds 3] [-- SCAN ARGS]

For each input, each round runs `forensics scan INPUT --no-report --json OUT` once with the
base tree and once with this tree (PYTHONPATH decides which), alternating which goes first, and
once DuckDB's bare `read_json` of the input when it is JSONL. Each process is measured from
outside with /usr/bin/time (wall, user+sys CPU, peak RSS). The --json outputs of the two trees
must be byte-identical; the table shows medians and the ratios this/base and this/DuckDB.
A busy machine moves every figure, so only ratios from the same interleaved run are compared.
Extra scan arguments after `--` (say `-- --workers 2`) apply to this tree only (with --base
set to this tree too, that compares one process with the sharded scan).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SCAN = (
    "import sys\n"
    "from forensics.cli import main\n"
    "sys.argv = ['forensics', 'scan', *sys.argv[1:]]\n"
    "if __name__ == '__main__':\n"
    "    main()\n"
)
DUCKDB = (
    "import sys, duckdb\n"
    "con = duckdb.connect()\n"
    "con.execute('SET threads = 2')\n"
    "con.execute(\"CREATE TABLE t AS SELECT * FROM read_json(?, format = 'newline_delimited')\","
    " [sys.argv[1]])\n"
)


def timed(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        cmd = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", out.name, *argv]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1):
            raise SystemExit(f"failed: {' '.join(argv)}\n{done.stderr[-2000:]}")
        wall, user, system, rss = out.read().split()[-4:]
    return {"wall": float(wall), "cpu": float(user) + float(system), "rss_mb": int(rss) / 1024}


def scan(tree: Path, path: Path, result: Path, extra: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # -P: the working directory (maybe a checkout) must not come before the tree on sys.path.
    code = ["-P", "-c", SCAN, str(path), "--no-report", "--json", str(result), *extra]
    return timed([sys.executable, *code], env)


def _mb(path: Path) -> float:
    found = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in found) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="source tree to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("inputs", nargs="+", type=Path)
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    print(
        f"{'input':<28} {'MB':>6} {'base s':>7} {'this s':>7} {'base cpu':>8} {'this cpu':>8} "
        f"{'base RSS':>8} {'this RSS':>8} {'cpu this/base':>13} {'duckdb s':>8} "
        f"{'this/duckdb':>11} same"
    )
    for path in args.inputs:
        runs: dict[str, list[dict[str, float]]] = {"base": [], "this": [], "duckdb": []}
        same = True
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                order = [("base", args.base), ("this", HERE)]
                for name, tree in order if r % 2 == 0 else order[::-1]:
                    flags = extra if name == "this" else []
                    runs[name].append(scan(tree, path, Path(tmp) / f"{name}.json", flags))
                if path.suffix == ".jsonl":
                    runs["duckdb"].append(timed([sys.executable, "-c", DUCKDB, str(path)], {}))
                same &= (Path(tmp) / "base.json").read_bytes() == (
                    Path(tmp) / "this.json"
                ).read_bytes()

        def med(name: str, key: str, runs: dict = runs) -> float:
            values = [m[key] for m in runs[name]]
            return statistics.median(values) if values else float("nan")

        duck = med("duckdb", "wall")
        print(
            f"{path.name[:28]:<28} {_mb(path):6.0f} {med('base', 'wall'):7.2f} "
            f"{med('this', 'wall'):7.2f} {med('base', 'cpu'):8.2f} {med('this', 'cpu'):8.2f} "
            f"{med('base', 'rss_mb'):8.0f} {med('this', 'rss_mb'):8.0f} "
            f"{med('this', 'cpu') / med('base', 'cpu'):13.2f} {duck:8.2f} "
            f"{med('this', 'wall') / duck:11.2f} {'yes' if same else 'NO'}",
            flush=True,
        )


if __name__ == "__main__":
    main()
