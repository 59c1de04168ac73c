"""Per-file overhead: N small files against the same bytes in one file per format.

    python benchmarks/many_files.py [--counts 500 2000] [--rounds 3] [--base TREE]

The units are small real JSONL artifacts from tests/data (an agent-loop capture, Gemini REST
responses, Gemini SDK dumps, LiteLLM logs), copied round-robin into N files; the single-file
case concatenates the same N copies per unit (one file per unit, four files), so both scans
read the same records. Each scan is a whole process (`forensics scan DIR --no-report --json
OUT`, measured from outside with /usr/bin/time); per-file overhead = (CPU_N - CPU_1) / N,
median of the rounds. With --base, the same runs for another source tree too, interleaved,
and the --json outputs of the two trees compared byte for byte. A tiny single file (one unit)
gives the fixed cost of a scan; N run directories, each a capture and its run-metadata
sidecar, the cost of labelling runs (no per-file figure: the content differs).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from versions import HERE, scan

UNITS = [
    HERE / "tests/data/capture/vllm_agent_loop.jsonl",
    HERE / "tests/data/gemini/rest_responses.jsonl",
    HERE / "tests/data/gemini/sdk_dumps.jsonl",
    HERE / "tests/data/capture/litellm_logs.jsonl",
]


def _inputs(root: Path, n: int) -> tuple[Path, Path]:
    """root/many-N (N files) and root/one-N (the same copies, one file per unit)."""
    many, one = root / f"many-{n}", root / f"one-{n}"
    many.mkdir()
    one.mkdir()
    texts = [u.read_bytes() for u in UNITS]
    for i in range(n):
        k = i % len(UNITS)
        sub = many / f"d{i // 100:03d}"  # runs come in directories of a hundred or so
        sub.mkdir(exist_ok=True)
        (sub / f"{i:05d}-{UNITS[k].name}").write_bytes(texts[k])
    for k, unit in enumerate(UNITS):
        copies = len(range(k, n, len(UNITS)))
        body = texts[k] if texts[k].endswith(b"\n") else texts[k] + b"\n"
        (one / unit.name).write_bytes(body * copies)
    return many, one


def _runs_with_sidecars(root: Path, n: int) -> Path:
    """root/sidecars-N: N run directories, each a capture and a run-metadata sidecar."""
    top = root / f"sidecars-{n}"
    for i in range(n):
        run = top / f"run{i:05d}"
        run.mkdir(parents=True)
        shutil.copy(UNITS[0], run / UNITS[0].name)
        (run / "variant_summary.json").write_text(
            f'{{"variant": "v{i % 3}", "status": "completed"}}\n', encoding="utf-8"
        )
    return top


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", type=Path, help="another source tree to compare with")
    args = parser.parse_args()
    trees = [("this", HERE)] + ([("base", args.base)] if args.base else [])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tiny = root / "tiny"
        tiny.mkdir()
        shutil.copy(UNITS[0], tiny / UNITS[0].name)
        cases = [("tiny (1 file)", tiny, None)]
        for n in args.counts:
            many, one = _inputs(root, n)
            cases += [(f"{n} files", many, n), (f"{n} as {len(UNITS)} files", one, None)]
        n = min(args.counts)
        cases.append((f"{n} runs + sidecars", _runs_with_sidecars(root, n), None))
        cpu: dict[tuple[str, str], float] = {}
        print(f"{'case':<20} " + " ".join(f"{t + ' cpu':>9} {t + ' RSS':>9}" for t, _ in trees)
              + (" same" if args.base else ""))  # fmt: skip
        for label, path, _ in cases:
            runs: dict[str, list[dict[str, float]]] = {t: [] for t, _ in trees}
            same = True
            for r in range(args.rounds):
                order = trees if r % 2 == 0 else trees[::-1]
                for name, tree in order:
                    runs[name].append(scan(tree, path, root / f"{name}.json", []))
                if args.base:
                    same &= (root / "this.json").read_bytes() == (root / "base.json").read_bytes()
            row = f"{label:<20} "
            for name, _ in trees:
                cpu[(label, name)] = statistics.median(m["cpu"] for m in runs[name])
                rss = statistics.median(m["rss_mb"] for m in runs[name])
                row += f"{cpu[(label, name)]:9.2f} {rss:9.0f} "
            print(row + (("yes" if same else "NO") if args.base else ""), flush=True)
        for n in args.counts:
            for name, _ in trees:
                many, one = cpu[(f"{n} files", name)], cpu[(f"{n} as {len(UNITS)} files", name)]
                per_file = (many - one) / (n - len(UNITS)) * 1000
                print(f"{name}: per-file overhead at {n} files: {per_file:.2f} ms")


if __name__ == "__main__":
    main()
