"""The sharded scan gives the one-process --json, byte for byte, for any cut of the file list.

tests/pipeline/test_distributed.py checks this on 3 and 7 shards so that the suite stays fast;
this script is the wide comparison: the same mixed inputs (sample_logs/ and the capture, tau2
and tau-bench fixtures of tests/data/: many formats, several runs, episodes that fusion must
read together) cut into many shards, each shard read on its own and the results merged. It
prints, per shard count, the shards run, the seconds and whether the --json is the same, and
exits 1 on any difference.

    python benchmarks/distributed.py                      # 40 shards, one after the other
    python benchmarks/distributed.py --shards 3 7 40 100 --workers 2
    python benchmarks/distributed.py --shards 40 PATH ...  # other inputs
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from forensics import distributed, pipeline
from forensics.report.render import jsonout

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
# The inputs of tests/pipeline/test_distributed.py.
MIXED = [DATA / "capture", DATA / "tau2", DATA / "realdata", ROOT / "sample_logs"]


def _counting(workers: int, calls: list[int]) -> distributed.Runner:
    """Local processes (in this process for 1 worker), counting the shards of each call."""
    inner = distributed.processes(workers)

    def run(shards, out, rules_dirs, settings):  # type: ignore[no-untyped-def]
        calls.append(len(shards))
        return inner(shards, out, rules_dirs, settings)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=MIXED)
    parser.add_argument("--shards", nargs="+", type=int, default=[40])
    parser.add_argument(
        "--workers", type=int, default=1, help="local processes (1: shards in this process)"
    )
    args = parser.parse_args()
    paths = [str(p) for p in args.paths]
    started = time.perf_counter()
    expected = jsonout.render(pipeline.scan(paths).report())
    print(f"one process: {time.perf_counter() - started:.1f} s", flush=True)
    different = []
    for shards in args.shards:
        calls: list[int] = []
        runner = _counting(args.workers, calls)
        started = time.perf_counter()
        got = jsonout.render(distributed.scan(paths, runner=runner, shards=shards).report())
        same = got == expected
        if not same:
            different.append(shards)
        print(
            f"{shards:>4} shards: {' + '.join(map(str, calls))} run, "
            f"{time.perf_counter() - started:.1f} s, --json {'same' if same else 'DIFFERENT'}",
            flush=True,
        )
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
