"""Accuracy against public labels (issue 22 item 4): `forensics eval` on local copies of the
public failure datasets, one table per dataset for the README.

    python benchmarks/public_labels.py [--agentrx DIR] [--whowhen DIR] [--trail DIR]
                                       [--tau2 PATH ...] [--json OUT] [--markdown | --readme]

Each DIR is a local checkout of the dataset's repository (microsoft/AgentRx,
ag2ai/Agents_Failure_Attribution, patronus-ai/trail-benchmark or its copy JuneHou/CausalError);
each tau2 PATH a results file or a directory of them. Nothing is downloaded and nothing of the
data is committed. For each dataset given: its annotations are converted
(forensics.tools.public_labels), the labelled files scanned, and the labels scored through the
dataset's shipped crosswalk (forensics/data/crosswalks/) with the disputes file of
benchmarks/disputes/<dataset>.jsonl when there is one, exactly as

    python -m forensics.tools.public_labels DATASET DIR -o DIR/labels.jsonl
    forensics eval DIR/labels.jsonl --crosswalk WALK [--disputes FILE]

would. The commit of each copy (`git rev-parse HEAD` in it) is printed with its figures.
--readme rewrites the block between the `public-labels` markers of README.md.

What a published LLM debugger scores on the same data is a different measure (it labels every
category, forensics claims only those its rules cover, mostly the infrastructure's): the README
shows those numbers beside these, marked as such, from the papers, not from this script.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from forensics.tools import evaluate as ev
from forensics.tools import public_labels as pl

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DISPUTES = ROOT / "benchmarks" / "disputes"
MARK_START = "<!-- public-labels:start -->"
MARK_END = "<!-- public-labels:end -->"


def commit_of(path: Path) -> str:
    where = path if path.is_dir() else path.parent
    try:
        return subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def score(dataset: str, source: Path, pack: ev.Pack) -> tuple[ev.Result, str]:
    """Convert, scan and score one dataset copy; returns the result and the data's commit."""
    walk = ev.load_crosswalk(ev.crosswalk_path(pl.CROSSWALK[dataset]))
    labels_data = pl.convert(dataset, source, walk)
    root = source if source.is_dir() else source.parent
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{dataset}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in labels_data), encoding="utf-8")
        labels = ev.load_labels(path, root)
    disputes_file = DISPUTES / f"{dataset}.jsonl"
    disputes = ev.load_disputes(disputes_file if disputes_file.is_file() else None, root)
    files = ev.files_named(labels)
    missing = [f for f in files if not Path(f).is_file()]
    observed = ev.scan_files([f for f in files if f not in missing])
    result = ev.evaluate(
        labels, observed, walk, pack, disputes, labels_path=dataset, missing_files=missing
    )
    return result, commit_of(source)


def block(results: dict[str, tuple[ev.Result, str]]) -> str:
    parts = []
    for dataset, (result, commit) in results.items():
        parts.append(ev.markdown(result).replace("## ", f"### `{dataset}` (data at {commit}): ", 1))
    return "\n".join(parts)


def write_readme(text: str, readme: Path = README) -> None:
    doc = readme.read_text(encoding="utf-8")
    start, end = doc.find(MARK_START), doc.find(MARK_END)
    if start < 0 or end < start:
        raise SystemExit(f"{readme}: no {MARK_START} … {MARK_END} block to rewrite")
    readme.write_text(
        doc[: start + len(MARK_START)] + "\n" + text + "\n" + doc[end:], encoding="utf-8"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/public_labels.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--agentrx", type=Path, help="checkout of microsoft/AgentRx")
    parser.add_argument("--whowhen", type=Path, help="checkout of Agents_Failure_Attribution")
    parser.add_argument("--trail", type=Path, help="checkout of trail-benchmark (or its copy)")
    parser.add_argument("--tau2", type=Path, action="append", default=[], help="results files")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the figures as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the README block")
    parser.add_argument("--readme", action="store_true", help="rewrite the README block")
    args = parser.parse_args(argv)
    jobs: list[tuple[str, Path]] = []
    if args.agentrx:
        jobs += [("agentrx-tau", args.agentrx), ("agentrx-magentic", args.agentrx)]
    if args.whowhen:
        jobs.append(("whowhen", args.whowhen))
    if args.trail:
        jobs.append(("trail", args.trail))
    jobs += [("tau2", p) for p in args.tau2]
    if not jobs:
        parser.error("name at least one local copy")
    pack = ev.load_pack()
    results: dict[str, tuple[ev.Result, str]] = {}
    try:
        for dataset, source in jobs:
            key = dataset if dataset != "tau2" else f"tau2:{source.name}"
            results[key] = score(dataset, source, pack)
    except (pl.SourceError, ev.EvalError) as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.json:
        doc: dict[str, Any] = {
            k: ev.as_json(r) | {"data_commit": c} for k, (r, c) in results.items()
        }
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    text = block(results)
    if args.readme:
        write_readme(text)
    if args.markdown:
        print(text)
    else:
        for key, (result, commit) in results.items():
            print(f"== {key} (data at {commit})")
            print(ev.text(result))
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
