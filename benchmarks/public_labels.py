"""Accuracy against public labels (issue 22 item 4): `forensics eval` on local copies of the
public failure datasets, with the issue's "done when" measures, one block for the README.

    python benchmarks/public_labels.py [--agentrx DIR] [--whowhen DIR] [--trail DIR]
                                       [--tau2 PATH ...] [--json OUT] [--markdown | --readme]

Each DIR is a local checkout of the dataset's repository (microsoft/AgentRx,
ag2ai/Agents_Failure_Attribution, patronus-ai/trail-benchmark or its copy JuneHou/CausalError);
each tau2 PATH a checkout of sierra-research/tau2-bench at a commit that still holds the
leaderboard trajectories (they left main in March 2026), a results file or a directory of them.
Nothing is downloaded and nothing of the data is committed. For each dataset given: its
annotations are converted (forensics.tools.public_labels), the labelled files scanned, and the
labels scored through the dataset's shipped crosswalk (forensics/data/crosswalks/) with the
disputes file of benchmarks/disputes/<dataset>.jsonl when there is one, exactly as

    python -m forensics.tools.public_labels DATASET DIR -o DIR/labels.jsonl
    forensics eval DIR/labels.jsonl --crosswalk WALK [--disputes FILE]

would. The commit of each copy (`git rev-parse HEAD` in it) is printed with its figures. Beside
them, the issue's "done when" measures: the share of each copy's trace files read without
rejects (benchmarks/public_datasets.py), TRAIL's traces with a system-execution label that get
an infra finding and its error-free traces that get none, AgentRx's System Failure found at its
step, and the model-labelled trajectories the tool classes infra.
--markdown prints the README block, --readme rewrites it between the `public-labels` markers of
README.md.

What a published LLM debugger scores on the same data is a different measure (it labels every
category, forensics claims only those its rules cover, mostly the infrastructure's): the block
shows those numbers beside these, marked as such, from the papers (PUBLISHED below).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

import public_datasets as pd  # noqa: E402  (a sibling script: the read-without-rejects measure)

from forensics.tools import evaluate as ev  # noqa: E402
from forensics.tools import public_labels as pl  # noqa: E402

README = ROOT / "README.md"
DISPUTES = ROOT / "benchmarks" / "disputes"
MARK_START = "<!-- public-labels:start -->"
MARK_END = "<!-- public-labels:end -->"

# The datasets' names in public_datasets.py (its read-without-rejects measure) and the repository
# each copy is of.
READ_NAME = {
    "agentrx": "AgentRx",
    "whowhen": "Who&When",
    "trail": "TRAIL",
    "tau2": "tau2 leaderboard",
}
TITLE = {
    "agentrx-tau": "AgentRx, tau-bench retail",
    "agentrx-magentic": "AgentRx, Magentic-One",
    "whowhen": "Who&When",
    "trail": "TRAIL",
    "tau2": "tau2-bench leaderboard",
}

# What LLM debuggers score on the same data, as their papers publish it: a different scope (they
# name every failure's category and place; forensics claims only the categories its rules
# cover), shown beside the tool's figures, never compared cell by cell.
PUBLISHED = [
    (
        "TRAIL",
        "best model (Gemini-2.5-Pro) 11% on TRAIL: each error's category and span, joint",
        "Deshpande et al., TRAIL: Trace Reasoning and Agentic Issue Localization, "
        "arXiv:2505.08638, abstract",
    ),
    (
        "Who&When",
        "best method 53.5% agent-level, 14.2% step-level accuracy (the decisive agent and step "
        "of every failed run)",
        "Zhang et al., Which Agent Causes Task Failures and When?, ICML 2025, arXiv:2505.00212, "
        "abstract",
    ),
]


@dataclass
class Scored:
    """One dataset copy scored, with what the done-when measures need."""

    key: str
    dataset: str
    commit: str
    result: ev.Result
    pack: ev.Pack
    disputes: list[ev.Dispute] = field(default_factory=list)
    disputes_file: str | None = None


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
    scored = score_copy(dataset, dataset, source, pack)
    return scored.result, scored.commit


def score_copy(key: str, dataset: str, source: Path, pack: ev.Pack) -> Scored:
    walk = ev.load_crosswalk(ev.crosswalk_path(pl.CROSSWALK[dataset]))
    labels_data = pl.convert(dataset, source, walk)
    root = source if source.is_dir() else source.parent
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{dataset}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in labels_data), encoding="utf-8")
        labels = ev.load_labels(path, root)
    disputes_file = DISPUTES / f"{dataset}.jsonl"
    has_disputes = disputes_file.is_file()
    disputes = ev.load_disputes(disputes_file if has_disputes else None, root)
    files = ev.files_named(labels)
    missing = [f for f in files if not Path(f).is_file()]
    observed = ev.scan_files([f for f in files if f not in missing])
    result = ev.evaluate(
        labels, observed, walk, pack, disputes, labels_path=dataset, missing_files=missing
    )
    shown = disputes_file.relative_to(ROOT).as_posix() if has_disputes else None
    return Scored(key, dataset, commit_of(source), result, pack, disputes, shown)


# --- the done-when measures --------------------------------------------------------------------


def _kept_attribution(scored: Scored) -> dict[str, str | None]:
    """Each label's attribution once the disputes are applied (None: the label is dropped)."""
    walk = scored.result.crosswalk
    by_label = {d.label: d for d in scored.disputes if d.side == "label"}
    out: dict[str, str | None] = {}
    for lab in scored.result.labels:
        d = by_label.get(lab.id)
        if d is None or d.verdict == "tool-wrong":
            out[lab.id] = ev.label_attribution(lab, walk)
        elif d.verdict == "relabel":
            cat = walk.category(d.category) if d.category else None
            out[lab.id] = d.attribution or (cat.attribution if cat else None)
        else:
            out[lab.id] = None
    return out


def trail_traces(scored: Scored) -> dict[str, dict[str, list[int]]]:
    """TRAIL's traces by the labels' attribution (one trace a file): of those with a system
    execution label (infra) and the error-free ones (none), how many hold a finding of the infra
    class anywhere; raw and with the disputes applied."""
    res = scored.result
    infra_files = {
        f.file for f in res.observed.findings if scored.pack.cause_class.get(f.cause) == "infra"
    }
    out: dict[str, dict[str, list[int]]] = {}
    for name, attribution in (
        ("raw", {lab.id: ev.label_attribution(lab, res.crosswalk) for lab in res.labels}),
        ("disputed", _kept_attribution(scored)),
    ):
        kinds: dict[str, set[str]] = {}
        for lab in res.labels:
            a = attribution[lab.id]
            if lab.category is None and lab.attribution == "none":
                kinds.setdefault(lab.file, set()).add("none")
            elif a is not None:
                kinds.setdefault(lab.file, set()).add(a)
        counts = {"infra": [0, 0], "none": [0, 0]}
        for file, said in kinds.items():
            kind = "infra" if "infra" in said else "none" if said == {"none"} else None
            if kind is not None:
                counts[kind][1] += 1
                counts[kind][0] += file in infra_files
        out[name] = counts
    return out


def repository_files(name: str, root: Path) -> int | None:
    """How many trace files the repository holds at the copy's commit (a copy may lack some:
    large files left out of a mirror); None when the copy is not a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-tree", "-r", "--name-only", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return None
    globs, not_traces = pd.LAYOUTS[name]
    return sum(
        1
        for path in listed
        if Path(path).name not in not_traces
        and any(fnmatch.fnmatchcase(path, g) and path.count("/") == g.count("/") for g in globs)
    )


def _model_as_infra(fig: ev.Figures) -> tuple[int, int]:
    model = sum(n for (theirs, _), n in fig.attribution.items() if theirs == "model")
    return fig.attribution[("model", "infra")], model


def _system_failure(scored: Scored) -> tuple[int, int] | None:
    cell = scored.result.disputed.per_category.get("System Failure")
    return (cell["exact"].found, cell["exact"].labels) if cell else None


def _pct(num: int, den: int) -> str:
    return f"{num}/{den} ({100 * num / den:.0f}%)" if den else "0/0"


# --- the README block ----------------------------------------------------------------------------


def _cell(c: ev.Counts, what: str) -> str:
    if what == "precision":
        return f"{ev._r(c.precision)} ({c.correct}/{c.findings})"
    return f"{ev._r(c.recall)} ({c.found}/{c.labels})"


def dataset_block(scored: Scored) -> list[str]:
    res, fig = scored.result, scored.result.disputed
    size = ev._size(res)
    title = TITLE.get(scored.dataset, scored.key)
    source = res.crosswalk.dataset.get("source", "")
    summary = (
        f"{size['labels']} labels ({size['trajectory_labels']} of whole trajectories) in "
        f"{size['files']} files; {size['findings_judged']} findings judged"
        + (
            f"; {size['labels_of_missing_files']} labels of {size['missing_files']} labelled "
            "files absent from the copy left out"
            if res.missing_files
            else ""
        )
        + (
            f"; {len(res.disputes)} disputes applied (`{scored.disputes_file}`)"
            if res.disputes
            else ""
        )
        + "."
    )
    lines = [
        f"#### {title} ({source}, data at `{scored.commit}`)",
        "",
        textwrap.fill(summary, 100),
        "",
        "| category (covered) | rules | n | precision exact | precision tolerant | "
        "recall exact | recall tolerant | recall trajectory |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    not_covered = 0
    for name, covered, levels in ev._category_rows(res, fig):
        e, t, j = levels["exact"], levels["tolerant"], levels["trajectory"]
        if covered == "none":
            not_covered += e.labels
            continue
        if e.labels == 0 and e.findings == 0:
            continue
        lines.append(
            f"| {name} | {covered} | {e.labels} | {_cell(e, 'precision')} | "
            f"{_cell(t, 'precision')} | {_cell(e, 'recall')} | {_cell(t, 'recall')} | "
            f"{_cell(j, 'recall')} |"
        )
    lines.append(
        f"| all covered | | {fig.overall['exact'].labels} | "
        f"{_cell(fig.overall['exact'], 'precision')} | "
        f"{_cell(fig.overall['tolerant'], 'precision')} | "
        f"{_cell(fig.overall['exact'], 'recall')} | {_cell(fig.overall['tolerant'], 'recall')} | "
        f"{_cell(fig.overall['trajectory'], 'recall')} |"
    )
    lines += ["", f"Labels of categories no rule covers: {not_covered}."]
    if res.disputes:
        o = res.raw.overall
        lines += [
            "",
            textwrap.fill(
                "Without the disputes (raw), all covered: precision "
                f"{_cell(o['exact'], 'precision')} exact, {_cell(o['tolerant'], 'precision')} "
                f"tolerant; recall {_cell(o['exact'], 'recall')} exact, "
                f"{_cell(o['tolerant'], 'recall')} tolerant, {_cell(o['trajectory'], 'recall')} "
                "in the trajectory.",
                100,
            ),
        ]
    raw_conf, conf = res.raw.attribution, fig.attribution
    keys = set(raw_conf) | set(conf)
    rows = [a for a in ev.ATTRIBUTIONS if any(k[0] == a for k in keys)]
    cols = [c for c in ev.FAULT_CLASSES if any(k[1] == c for k in keys)]
    if rows:
        lines += [
            "",
            "Trajectories, the labels' attribution (rows) against the tool's fault class "
            "(columns)"
            + (", disputes applied (raw in brackets where it differs)" if res.disputes else "")
            + ":",
            "",
            "| labels \\ tool | " + " | ".join(cols) + " |",
            "|---|" + "---:|" * len(cols),
        ]
        for a in rows:
            cells = []
            for c in cols:
                now, was = conf[(a, c)], raw_conf[(a, c)]
                cells.append(str(now) if now == was else f"{now} [{was}]")
            lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return lines


def done_when(
    scored: list[Scored], read: dict[str, pd.DatasetResult]
) -> tuple[list[str], dict[str, Any]]:
    lines = [
        "| target (issue 22, done when) | measured | met |",
        "|---|---|---|",
    ]
    doc: dict[str, Any] = {}
    for name, ds in read.items():
        total = len(ds.files)
        ok = total > 0 and ds.read / total >= 0.95
        in_repo = repository_files(ds.name, Path(ds.root))
        doc[f"read:{name}"] = {"read": ds.read, "files": total, "in_repository": in_repo}
        measured = f"{_pct(ds.read, total)} of the files in the copy"
        if in_repo is not None and in_repo > total:
            measured += (
                f"; the repository holds {in_repo} at that commit, {in_repo - total} of them not "
                "in the copy"
            )
        met = "yes" if ok else "no"
        if ok and in_repo is not None and in_repo > total:
            met = "yes, of the files in the copy"
        lines.append(f"| ≥ 95% of {name}'s trace files read without rejects | {measured} | {met} |")
    for s in scored:
        if s.dataset == "trail":
            t = trail_traces(s)
            doc["trail_traces"] = t
            for name in ("raw", "disputed"):
                hit, n = t[name]["infra"]
                lines.append(
                    f"| TRAIL: traces with a system-execution label get an infra finding (≥ 80%), "
                    f"{name} labels | {_pct(hit, n)} | {'yes' if n and hit / n >= 0.8 else 'no'} |"
                )
            hit, n = t["raw"]["none"]
            lines.append(
                f"| TRAIL: error-free traces get no infra finding | {hit} of {n} get one | "
                f"{'yes' if hit == 0 else 'no'} |"
            )
        if (sf := _system_failure(s)) is not None and s.dataset.startswith("agentrx"):
            doc[f"system_failure:{s.key}"] = sf
            lines.append(
                f"| {TITLE[s.dataset]}: System Failure found at its step | {sf[0]} of {sf[1]} | "
                f"{'yes' if sf[1] and sf[0] == sf[1] else 'no'} |"
            )
    for s in scored:
        raw, n = _model_as_infra(s.result.raw)
        now, _ = _model_as_infra(s.result.disputed)
        doc[f"model_as_infra:{s.key}"] = {"raw": raw, "disputed": now, "model_labelled": n}
        if n == 0:
            continue
        shown = f"{now} of {n}" + (f" ({raw} before the disputes)" if raw != now else "")
        lines.append(
            f"| {TITLE.get(s.dataset, s.key)}: no model-labelled trajectory classed infra | "
            f"{shown} | {'yes' if now == 0 else 'no'} |"
        )
    return lines, doc


def block(results: list[Scored], read: dict[str, pd.DatasetResult] | None = None) -> str:
    parts = [
        "Reproduce (each path a local checkout of the dataset's repository; nothing is "
        "downloaded):",
        "",
        "<!-- not run: needs local copies of the four datasets (not in this repository) -->",
        "```sh",
        "python benchmarks/public_labels.py --agentrx AGENTRX --whowhen WHOWHEN --trail TRAIL \\",
        "    --tau2 TAU2 --markdown",
        "```",
        "",
        "The figures of one dataset are `forensics eval`'s, e.g. for TRAIL:",
        "",
        "<!-- not run: needs a local copy of TRAIL (not in this repository) -->",
        "```sh",
        "python -m forensics.tools.public_labels trail TRAIL -o TRAIL/labels.jsonl",
        "forensics eval TRAIL/labels.jsonl --crosswalk trail \\",
        "    --disputes benchmarks/disputes/trail.jsonl",
        "```",
        "",
        textwrap.fill(
            "Published LLM debuggers on the same data (a different scope: they name the category "
            "and place of every failure, model and infrastructure alike; forensics claims only "
            "the categories its rules cover, mostly the infrastructure's, and its precision "
            "there):",
            100,
        ),
        "",
        "| dataset | published | source |",
        "|---|---|---|",
    ]
    parts += [f"| {d} | {what} | {src} |" for d, what, src in PUBLISHED]
    if read is not None:
        rows, _ = done_when(results, read)
        parts += ["", "##### Done when", "", *rows]
    for s in results:
        parts += ["", *dataset_block(s)]
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
    copies: list[tuple[str, Path]] = []
    if args.agentrx:
        jobs += [("agentrx-tau", args.agentrx), ("agentrx-magentic", args.agentrx)]
        copies.append(("agentrx", args.agentrx))
    if args.whowhen:
        jobs.append(("whowhen", args.whowhen))
        copies.append(("whowhen", args.whowhen))
    if args.trail:
        jobs.append(("trail", args.trail))
        copies.append(("trail", args.trail))
    jobs += [("tau2", p) for p in args.tau2]
    copies += [("tau2", p) for p in args.tau2 if p.is_dir()]
    if not jobs:
        parser.error("name at least one local copy")
    pack = ev.load_pack()
    results: list[Scored] = []
    try:
        for dataset, source in jobs:
            key = dataset if dataset != "tau2" else f"tau2:{source.name}"
            results.append(score_copy(key, dataset, source, pack))
    except (pl.SourceError, ev.EvalError) as exc:
        print(exc, file=sys.stderr)
        return 2
    read = {
        READ_NAME[name]
        + ("" if sum(n == name for n, _ in copies) == 1 else f" ({root.name})"): pd.measure(
            READ_NAME[name], root
        )
        for name, root in copies
    }
    rows, done = done_when(results, read)
    if args.json:
        doc: dict[str, Any] = {
            s.key: ev.as_json(s.result) | {"data_commit": s.commit} for s in results
        }
        doc["done_when"] = done
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    text = block(results, read)
    if args.readme:
        write_readme(text)
    if args.markdown:
        print(text)
    else:
        for s in results:
            print(f"== {s.key} (data at {s.commit})")
            print(ev.text(s.result))
            print()
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
