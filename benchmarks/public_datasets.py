"""How many trace files of the public agent-failure datasets are read without rejects (issue 22:
the target is 95% of the files in each dataset's repository).

    python benchmarks/public_datasets.py [--trail DIR] [--who-when DIR] [--agentrx DIR]
                                         [--tau2 DIR] [--json OUT] [-v]

Each DIR is a local copy (a checkout or an export) of the dataset's repository:

- --trail: patronus-ai/trail-benchmark (or the fork JuneHou/CausalError, which keeps its first
  release): the traces are benchmarking/data/GAIA/*.json and benchmarking/data/SWE Bench/*.json;
- --who-when: ag2ai/Agents_Failure_Attribution: Who&When/Algorithm-Generated/*.json and
  Who&When/Hand-Crafted/*.json;
- --agentrx: microsoft/AgentRx: data/magentic_dataset/*.json (not steps_by_id.json, a table of
  step counts), data/magentic_dataset_whowhen/*.json, trajectories/magentic-one/trajectories/
  *.json, trajectories/tau-retail/*.json and data/tau_retail/*.json;
- --tau2: sierra-research/tau2-bench leaderboard trajectories: every
  web/leaderboard/public/submissions/*/trajectories/*.json below DIR (they left main in March
  2026: export them from the history), or, when DIR has no such path, every *.json below it.

When DIR does not have the repository's layout, every *.json below it counts. Every file is
read alone, in-process, as `forensics scan FILE` reads it (no fusion). A file counts as read
when a format reads it and it leaves no reject; the others are listed with their first reason
(-v lists the files read too, with their format).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from forensics import ingest  # noqa: E402

# dataset -> (globs of its trace files relative to the copy's root, file names that are not
# traces); the first glob that finds anything decides that the copy has the repository layout.
LAYOUTS: dict[str, tuple[list[str], set[str]]] = {
    "TRAIL": (["benchmarking/data/GAIA/*.json", "benchmarking/data/SWE Bench/*.json"], set()),
    "Who&When": (["Who&When/Algorithm-Generated/*.json", "Who&When/Hand-Crafted/*.json"], set()),
    "AgentRx": (
        [
            "data/magentic_dataset/*.json",
            "data/magentic_dataset_whowhen/*.json",
            "trajectories/magentic-one/trajectories/*.json",
            "trajectories/tau-retail/*.json",
            "data/tau_retail/*.json",
        ],
        {"steps_by_id.json"},
    ),
    "tau2 leaderboard": (["web/leaderboard/public/submissions/*/trajectories/*.json"], set()),
}


@dataclass
class FileResult:
    path: str
    format: str | None
    trajectories: int
    turns: int
    rejects: int
    reason: str | None  # the first reject's reason, for a file not read cleanly

    @property
    def read(self) -> bool:
        return self.format is not None and self.rejects == 0


@dataclass
class DatasetResult:
    name: str
    root: str
    files: list[FileResult] = field(default_factory=list)

    @property
    def read(self) -> int:
        return sum(f.read for f in self.files)


def trace_files(name: str, root: Path) -> list[Path]:
    globs, not_traces = LAYOUTS[name]
    found = sorted({p for g in globs for p in root.glob(g) if p.is_file()})
    if not found:
        found = sorted(p for p in root.rglob("*.json") if p.is_file())
    return [p for p in found if p.name not in not_traces]


def read_file(path: Path) -> FileResult:
    result = ingest.ingest([str(path)], fuse=False)
    report = result.files[0] if result.files else None
    rejects = result.rejects.to_pylist()
    fmt = report.format if report is not None and not report.skipped else None
    reason = None
    if rejects:
        line = rejects[0]["source_line"]
        reason = f"{'line ' + str(line) + ': ' if line else ''}{rejects[0]['reason']}"
    elif fmt is None and report is not None:
        reason = report.reason
    return FileResult(
        str(path),
        fmt,
        result.trajectories.num_rows,
        result.turns.num_rows,
        len(rejects),
        reason,
    )


def measure(name: str, root: Path) -> DatasetResult:
    out = DatasetResult(name, str(root))
    for path in trace_files(name, root):
        out.files.append(read_file(path))
    return out


def show(results: list[DatasetResult], verbose: bool) -> None:
    for ds in results:
        total = len(ds.files)
        share = f"{100 * ds.read / total:.1f}%" if total else "n/a"
        formats = Counter(f.format or "unread" for f in ds.files)
        trajectories = sum(f.trajectories for f in ds.files)
        turns = sum(f.turns for f in ds.files)
        print(f"{ds.name}: {ds.read}/{total} files read without rejects ({share}) — {ds.root}")
        print(f"  {trajectories:,} trajectories, {turns:,} turns; formats: {dict(formats)}")
        for f in ds.files:
            if not f.read:
                print(f"  NOT READ {f.path}: {f.reason}")
            elif verbose:
                print(f"  read {f.path}: {f.format}, {f.trajectories} trajectories")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--trail", type=Path)
    parser.add_argument("--who-when", type=Path)
    parser.add_argument("--agentrx", type=Path)
    parser.add_argument("--tau2", type=Path)
    parser.add_argument("--json", type=Path, help="write the per-file results here")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    copies = {
        "TRAIL": args.trail,
        "Who&When": args.who_when,
        "AgentRx": args.agentrx,
        "tau2 leaderboard": args.tau2,
    }
    if not any(copies.values()):
        parser.error("name at least one local copy (--trail, --who-when, --agentrx, --tau2)")
    results = []
    for name, root in copies.items():
        if root is None:
            continue
        if not root.is_dir():
            parser.error(f"{name}: {root} is not a directory")
        results.append(measure(name, root))
    show(results, args.verbose)
    if args.json:
        doc = [
            {
                "dataset": ds.name,
                "root": ds.root,
                "read": ds.read,
                "total": len(ds.files),
                "files": [asdict(f) | {"read": f.read} for f in ds.files],
            }
            for ds in results
        ]
        args.json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
