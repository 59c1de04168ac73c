"""Measured accuracy of the rule pack: precision and recall per rule on a labelled corpus.

    python -m forensics.tools.accuracy [CORPUS.jsonl] [--rules DIR] [--check]

A corpus is JSONL, one trajectory per line (tests/data/accuracy/corpus.jsonl.gz is the one the
test suite holds the pack to; tests/data/accuracy/README.md says how it was built):

    {"case": "name", "turns": [partial rows of schema.RAW_TURNS, in turn order],
     "trajectory": {columns of schema.TRAJECTORIES: reward, termination_reason, source_format,
                    labels as a mapping, …},
     "expect": [["rule-id", turn_index], …],     # every finding the pack must produce
     "format": "hermes"}                          # optional: the parser the markup finding names

Every case runs through enrich and the engine with the full pack, each its own trajectory. A
finding listed in `expect` is a true positive, one that is not is a false positive, a listed one
the pack misses is a false negative. `--check` exits 1 when a hard rule's precision is below 1.0
or a heuristic's below 0.9 (the bounds the README promises).

A rule with `status = "preview"` runs with the pack but is not scored: it has no labelled cases
yet, so it is left out of the table and the bounds, and its findings on the corpus are only
counted (`Report.preview`). Every other rule must be measured on at least MIN_LABELLED
labelled findings (`unmeasured()`; tests/check/test_accuracy.py holds the pack to it).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import polars as pl
import pyarrow as pa

from forensics import schema
from forensics.check import engine
from forensics.check.enrich import enrich
from forensics.content import CHECKOUT
from forensics.ingest.records import normalise_finish_reason
from forensics.report.render.safe import one_line

PRECISION_FLOOR = {"hard": 1.0, "heuristic": 0.9}
# The rules whose findings name a tool-call markup format (the `format` a plant expects).
MARKUP_RULES = ("tool-markup-leak", "tool-call-in-reasoning")
MIN_LABELLED = 8
DEFAULT_CORPUS = CHECKOUT / "tests/data/accuracy/corpus.jsonl.gz"
_CASE_COLUMNS = {"source_path", "source_line", "run_id", "trajectory_id", "task_id", "trial"}


class CorpusError(Exception):
    """A corpus line that is not a case (names the file and line)."""


@dataclass
class Corpus:
    path: str
    cases: list[dict[str, Any]]
    turns: pa.Table
    trajectories: pa.Table
    expected: set[tuple[str, str, int]]  # (trajectory_id, rule, turn_index)
    formats: dict[tuple[str, int], str]  # (trajectory_id, turn_index) -> parser to name


def _trajectory_id(name: str) -> str:
    return f"accuracy/{name}"


def load_corpus(path: Path) -> Corpus:
    rows: list[dict[str, Any]] = []
    episodes: list[dict[str, Any]] = []
    expected: set[tuple[str, str, int]] = set()
    formats: dict[tuple[str, int], str] = {}
    cases = []
    raw_columns = set(schema.RAW_TURNS.names)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    for line_no, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
            name, turns = case["case"], case["turns"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise CorpusError(f"{path}:{line_no}: not a corpus case ({exc})") from None
        cases.append(case)
        tid = _trajectory_id(name)
        episode = dict(case.get("trajectory") or {})
        labels = episode.pop("labels", None) or {}
        source_format = episode.pop("source_format", None) or "accuracy_corpus"
        for index, turn in enumerate(turns):
            if unknown := set(turn) - raw_columns:
                raise CorpusError(f"{path}:{line_no}: turn {index}: unknown columns {unknown}")
            row: dict[str, Any] = dict.fromkeys(schema.RAW_TURNS.names)
            row.update(turn)
            row.update(
                source_path=str(path),
                source_line=line_no,
                source_format=source_format,
                run_id="accuracy",
                trajectory_id=tid,
                task_id=name,
                trial=0,
                turn_index=index,
            )
            if turn.get("finish_reason") is None:
                row["finish_reason"] = normalise_finish_reason(turn.get("finish_reason_raw"))
            rows.append(row)
        known = set(schema.TRAJECTORIES.names) - _CASE_COLUMNS
        episodes.append(
            {k: v for k, v in episode.items() if k in known}
            | {
                "trajectory_id": tid,
                "run_id": "accuracy",
                "source_path": str(path),
                "source_line": line_no,
                "source_format": source_format,
                "task_id": name,
                "trial": 0,
                "labels": [{"key": k, "value": str(v)} for k, v in sorted(labels.items())],
                "turn_count": len(turns),
                "agent_turn_count": sum(t.get("actor") == "agent" for t in turns),
            }
        )
        for rule, turn_index in case.get("expect") or []:
            expected.add((tid, rule, turn_index))
            if rule in MARKUP_RULES and case.get("format"):
                formats[(tid, turn_index)] = case["format"]
    return Corpus(
        path=str(path),
        cases=cases,
        turns=pa.Table.from_pylist(rows, schema=schema.RAW_TURNS),
        trajectories=pa.Table.from_pylist(episodes, schema=schema.TRAJECTORIES),
        expected=expected,
        formats=formats,
    )


@dataclass
class RuleScore:
    rule: str
    confidence: str
    labelled: int
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def meets_floor(self) -> bool:
        return self.precision is None or self.precision >= PRECISION_FLOOR[self.confidence]


@dataclass
class Report:
    corpus: str
    cases: int
    turns: int
    scores: list[RuleScore]
    false_positives: list[dict[str, Any]] = field(default_factory=list)
    false_negatives: list[tuple[str, str, int]] = field(default_factory=list)
    formats_right: int = 0
    formats_checked: int = 0
    format_errors: list[str] = field(default_factory=list)
    # preview rule id -> its findings on the corpus (not scored: no labelled cases yet)
    preview: dict[str, int] = field(default_factory=dict)


def evaluate(corpus: Corpus, rules: list[engine.Rule] | None = None) -> Report:
    rules = rules if rules is not None else engine.load_rules()
    turns = enrich(corpus.turns)
    # from_arrow gives a Series only for an Array: a Table is a DataFrame.
    trajectories = cast(pl.DataFrame, pl.from_arrow(corpus.trajectories))
    checked = engine.check(turns, trajectories, rules)
    found = {
        (r["trajectory_id"], r["rule"], r["turn_index"]): r
        for r in checked.findings.iter_rows(named=True)
    }
    scores = {
        r.id: RuleScore(r.id, r.confidence, sum(1 for e in corpus.expected if e[1] == r.id))
        for r in rules
        if not r.preview
    }
    report = Report(corpus.path, len(corpus.cases), turns.height, [])
    report.preview = {r.id: 0 for r in rules if r.preview}
    for key, row in sorted(found.items()):
        if key[1] in report.preview:
            report.preview[key[1]] += 1
        score = scores.get(key[1])
        if score is None:
            continue
        if key in corpus.expected:
            score.tp += 1
        else:
            score.fp += 1
            report.false_positives.append(row)
    for key in sorted(corpus.expected - set(found)):
        if key[1] in scores:
            scores[key[1]].fn += 1
            report.false_negatives.append(key)
    detected = {
        (r["trajectory_id"], r["turn_index"]): r["tool_markup_format"]
        for r in turns.filter(pl.col("tool_markup_format").is_not_null())
        .select("trajectory_id", "turn_index", "tool_markup_format")
        .iter_rows(named=True)
    }
    for (tid, turn_index), parser in sorted(corpus.formats.items()):
        # tool-call-in-reasoning names the markup it found in the reasoning the same way
        if not {(tid, r, turn_index) for r in MARKUP_RULES} & set(found):
            continue
        report.formats_checked += 1
        if detected.get((tid, turn_index)) == parser:
            report.formats_right += 1
        else:
            got = detected.get((tid, turn_index))
            report.format_errors.append(f"{tid} turn {turn_index}: want {parser}, named {got}")
    report.scores = [scores[r.id] for r in rules if r.id in scores]
    return report


def unmeasured(report: Report, minimum: int = MIN_LABELLED) -> dict[str, int]:
    """Scored (non-preview) rules with fewer than `minimum` labelled findings in the corpus."""
    return {s.rule: s.labelled for s in report.scores if s.labelled < minimum}


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def table(report: Report) -> str:
    """The accuracy table as Markdown (the README publishes it verbatim)."""
    lines = [
        "| rule | confidence | labelled | TP | FP | FN | precision | recall |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in report.scores:
        lines.append(
            f"| `{s.rule}` | {s.confidence} | {s.labelled} | {s.tp} | {s.fp} | {s.fn} | "
            f"{_ratio(s.precision)} | {_ratio(s.recall)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m forensics.tools.accuracy", description=__doc__)
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rules", type=Path, action="append", help="extra rule directory")
    parser.add_argument("--check", action="store_true", help="exit 1 below the precision bounds")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every miss")
    args = parser.parse_args(argv)
    if not args.corpus.is_file():
        print(f"no corpus at {args.corpus}", file=sys.stderr)
        return 2
    try:
        report = evaluate(load_corpus(args.corpus), engine.load_rules(args.rules))
    except (CorpusError, engine.RuleError) as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"{report.corpus}: {report.cases} trajectories, {report.turns} turns\n")
    print(table(report))
    print(
        f"\ntool-markup-leak names the right parser in {report.formats_right} of "
        f"{report.formats_checked} planted formats"
    )
    misses = [
        f"FP {r['rule']} {r['trajectory_id']} turn {r['turn_index']}: {r['message']}"
        for r in report.false_positives
    ]
    misses += [f"FN {rule} {tid} turn {turn}" for tid, rule, turn in report.false_negatives]
    misses += [f"FORMAT {e}" for e in report.format_errors]
    for line in misses if args.verbose else misses[:20]:
        print(one_line(line))  # finding messages quote the corpus's text
    if len(misses) > 20 and not args.verbose:
        print(f"… {len(misses) - 20} more (-v lists them all)")
    if report.preview:
        shown = ", ".join(f"{rule} ({n} findings)" for rule, n in sorted(report.preview.items()))
        print(f"\npreview rules, not measured: {shown}")
    below = [s.rule for s in report.scores if not s.meets_floor]
    if below:
        print(f"\nbelow the precision bound: {', '.join(below)}")
    return 1 if args.check and below else 0


if __name__ == "__main__":
    sys.exit(main())
