"""Large tau-bench inputs for the memory and speed figures, grown from the samples.

    python benchmarks/make_tau.py results OUT.json --mb 200
    python benchmarks/make_tau.py console OUT.log --mb 200

`results`: a tau-bench results array whose records are those of
sample_logs/tau_bench_results_frustrated.json and _control.json, repeated with new task ids.
`console`: sample_logs/output2.txt (a console log of a tau-bench run) repeated. Both are
written as they are generated; same size, same bytes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


def results(out: Path, mb: float) -> None:
    records = []
    for name in ("tau_bench_results_frustrated.json", "tau_bench_results_control.json"):
        records += json.loads((SAMPLES / name).read_text())
    target = int(mb * 1e6)
    written = 0
    with out.open("w") as f:
        f.write("[\n")
        i = 0
        while written < target:
            record = dict(records[i % len(records)], task_id=i)
            text = json.dumps(record, indent=2)
            f.write((",\n" if i else "") + text)
            written += len(text) + 2
            i += 1
        f.write("\n]\n")


def console(out: Path, mb: float) -> None:
    text = (SAMPLES / "output2.txt").read_text()
    target = int(mb * 1e6)
    with out.open("w") as f:
        for _ in range(max(1, target // len(text))):
            f.write(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=["results", "console"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=200)
    args = parser.parse_args()
    (results if args.kind == "results" else console)(args.out, args.mb)


if __name__ == "__main__":
    main()
