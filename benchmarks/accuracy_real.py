"""Precision and recall on the real corpus (tests/data/corpus/): the measure issue 21 asks for.

    python benchmarks/accuracy_real.py [--json OUT] [--markdown | --readme] [-j N]
                                       [--only SUBSTR] [--scan-cache FILE] [-v]

Every corpus file is scanned alone, in-process (read, enrich, check: what `forensics scan FILE`
does before diagnosis), and its findings are compared with the labels that were written blind
(tests/data/corpus/labels/*.jsonl). A finding and a labelled incident match when all of these
hold:

- the same file;
- the right kind: the finding's rule is the label's kind, or both point at the same root cause
  (`cause` of rules/*.toml), or tests/data/corpus/kinds.toml lists the rule for that kind (the
  crosswalk: `other:*` kinds and near-synonyms, each with its reason), or the kind is
  `other:<rule id>`;
- the same episode when both sides name one (LABEL_EPISODES maps the labellers' naming to the
  tool's task and trial ids; a cassette's interaction index is matched by place, below);
- the right place: the label's line falls inside the record of the turn the finding points at
  (from that turn's first line to the next turn's, give or take TOLERANCE lines), or within
  TOLERANCE lines of the finding's line. A label without a line, a finding without one, and the
  rules and kinds kinds.toml marks episode-level (a step limit, a loop over many turns, a run
  cut off) match anywhere in the same episode.

One finding may match several labels (a loop labelled at each turn) and one label several
findings. Precision counts findings that match a label; recall counts labels that some finding
matches. A label whose kind no rule of the pack covers (an `other:*` kind without a crosswalk
entry) is "not covered": left out of the per-rule recall, counted as a miss in the end-to-end
recall over every incident. Labels of confidence `low` are counted with and without: without
them, such a label leaves the recall and a finding that matches only low labels leaves the
precision. Findings of preview rules are reported apart from the gating ones.

tests/data/corpus/adjudication.jsonl holds a verdict on each disagreement (a finding no label
matches, an incident no finding matches), written after reading the file at that place; the
labels are never edited. The adjudicated figures apply them: `tool-wrong` keeps the disagreement
(a false positive or a real miss), `label-wrong` turns a finding into a correct one (and its
incident into a found one) or drops a mistaken label, `out-of-scope` drops the label or finding
from the measure (a model error the tool rightly leaves alone), `ambiguous` drops it too and is
counted. An adjudication that no longer meets a disagreement is listed as stale.

Attribution: for matched pairs, the class of the finding's cause (rules/causes.toml: infra or
model) against the labeller's attribution (infra, model, simulator, unclear).

--markdown prints the README's accuracy block; --readme rewrites it in README.md between the
`accuracy-real` markers. --scan-cache FILE keeps the scan's findings in FILE (JSON) and reuses
them when the file is there, to rescore after editing labels, the crosswalk or adjudications.

`forensics eval` (docs/eval.md) is the same measure for labels of any origin, through a
crosswalk file; this benchmark shares its pack description and counts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap
import time
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# The rule pack's description and the counts are forensics eval's (forensics/tools/evaluate.py),
# which scores any labelled set the same way; this benchmark keeps what is particular to the
# real corpus: its label files, the labellers' episode naming, the line spans, the README block.
from forensics.tools.evaluate import Counts, Pack, load_pack

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
README = ROOT / "README.md"
# How far (in lines) a label may sit outside the record of the turn a finding points at: a
# labeller quotes the line of the field (a finish reason, an id) and the reader points at the
# line where the message's record starts, which the span already covers; the slack absorbs a
# quote taken from the line just before or after the record.
TOLERANCE = 3
VERDICTS = ("tool-wrong", "label-wrong", "out-of-scope", "ambiguous")
# What the figures depend on: a change here that is not committed marks the commit `+changes`.
DECIDING = ("forensics", "rules", "benchmarks/accuracy_real.py", "tests/data/corpus")
MARK_START = "<!-- accuracy-real:start -->"
MARK_END = "<!-- accuracy-real:end -->"

# The labellers' episode naming (LABELLING.md: "the task / sample / trajectory / conversation id
# as the file names it, or the cassette interaction index"), mapped to the tool's ids: each
# pattern gives the task id and, when the label names one, the trial.
LABEL_EPISODES: list[tuple[re.Pattern[str], str, str | None]] = [
    # atropos: the group is the task (the reader's group-N, N its line), the rollout the trial
    (re.compile(r"group line (\d+), rollout (\d+)"), r"group-\1", r"\2"),
    # tau-bench results: "task 29"
    (re.compile(r"task (\S+)"), r"\1", None),
    # tau2: "task_name (sim <simulation id>)"
    (re.compile(r"(\S+) \((?:sim|simulation|sample|trajectory) [^)]*\)"), r"\1", None),
]


# --- inputs ----------------------------------------------------------------------------------


@dataclass
class Label:
    file: str
    labeller: str
    index: int  # position in the file's incidents list: with file and labeller, its identity
    kind: str
    attribution: str
    episode: Any
    line: int | None
    locator: str
    evidence: str
    confidence: str

    @property
    def key(self) -> str:
        return f"{self.file}#{self.labeller}/{self.index}"


@dataclass
class Finding:
    file: str
    rule: str
    cause: str
    trajectory_id: str
    task_id: str | None
    trial: int | None
    turn_index: int | None
    source_line: int | None
    span: tuple[int, int] | None  # lines of the record of the finding's turn
    message: str

    @property
    def key(self) -> str:
        return f"{self.file}#{self.rule}@{self.trajectory_id}/{self.turn_index}"


@dataclass
class Crosswalk:
    rules: dict[str, list[str]]  # label kind -> rule ids that report it
    episode_rules: set[str]
    episode_kinds: set[str]


@dataclass
class Corpus:
    files: dict[str, dict[str, Any]]  # file -> sources.toml entry
    records: dict[str, dict[str, Any]]  # file -> its label line
    labels: list[Label]
    crosswalk: Crosswalk
    adjudications: list[dict[str, Any]]


class CorpusError(Exception):
    """A labels, crosswalk or adjudication line that can not be used (names file and line)."""


def load_labels(corpus: Path = CORPUS) -> tuple[dict[str, dict[str, Any]], list[Label]]:
    records: dict[str, dict[str, Any]] = {}
    labels: list[Label] = []
    for path in sorted((corpus / "labels").glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path.relative_to(corpus)}:{n}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{where}: not JSON ({exc})") from None
            if rec.get("file") in records:
                raise CorpusError(f"{where}: {rec['file']} is labelled twice")
            records[rec["file"]] = rec
            for i, inc in enumerate(rec.get("incidents") or []):
                line_no = inc.get("line")
                labels.append(
                    Label(
                        file=rec["file"],
                        labeller=rec["labeller"],
                        index=i,
                        kind=inc["kind"],
                        attribution=inc.get("attribution") or "unclear",
                        episode=inc.get("episode"),
                        line=line_no if isinstance(line_no, int) else None,
                        locator=inc.get("locator") or "",
                        evidence=inc.get("evidence") or "",
                        confidence=inc.get("confidence") or "high",
                    )
                )
    return records, labels


def load_crosswalk(path: Path) -> Crosswalk:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    rules: dict[str, list[str]] = {}
    for entry in data.get("kind", []):
        if not entry.get("reason"):
            raise CorpusError(f"{path.name}: kind {entry.get('kind')!r} has no reason")
        rules.setdefault(entry["kind"], []).extend(entry["rules"])
    place = data.get("place", {})
    return Crosswalk(
        rules=rules,
        episode_rules=set(place.get("episode_rules", [])),
        episode_kinds=set(place.get("episode_kinds", [])),
    )


def load_adjudications(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            adj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path.name}:{n}: not JSON ({exc})") from None
        if adj.get("verdict") not in VERDICTS or adj.get("side") not in ("finding", "label"):
            raise CorpusError(f"{path.name}:{n}: side finding|label and a verdict in {VERDICTS}")
        adj["_line"] = n
        out.append(adj)
    return out


def load_corpus(corpus: Path = CORPUS) -> Corpus:
    sources = tomllib.loads((corpus / "sources.toml").read_text(encoding="utf-8"))["file"]
    records, labels = load_labels(corpus)
    return Corpus(
        files={e["path"]: e for e in sources},
        records=records,
        labels=labels,
        crosswalk=load_crosswalk(corpus / "kinds.toml"),
        adjudications=load_adjudications(corpus / "adjudication.jsonl"),
    )


# --- scanning --------------------------------------------------------------------------------

_WORKER_RULES: Any = None


def _spans(lines: Iterable[int | None]) -> list[int]:
    return sorted({n for n in lines if n is not None})


def _span(line: int | None, starts: list[int]) -> tuple[int, int] | None:
    if line is None:
        return None
    later = [n for n in starts if n > line]
    return (line, later[0] - 1 if later else 1 << 31)


def scan_file(rel: str, corpus: Path = CORPUS) -> dict[str, Any]:
    """One corpus file scanned alone: its findings, with the line span of each finding's turn."""
    global _WORKER_RULES
    from forensics import pipeline
    from forensics.config import Settings

    settings = Settings()
    if _WORKER_RULES is None:
        _WORKER_RULES = pipeline.load_rules(None, settings)
    started = time.perf_counter()
    checked = pipeline.check(
        pipeline.read(pipeline.expand([str(corpus / rel)], settings), settings), _WORKER_RULES
    )
    starts = _spans(
        [*checked.turns["source_line"].to_list(), *checked.trajectories["source_line"].to_list()]
    )
    findings = [
        Finding(
            file=rel,
            rule=row["rule"],
            cause=row["cause"],
            trajectory_id=row["trajectory_id"],
            task_id=row["task_id"],
            trial=row["trial"],
            turn_index=row["turn_index"],
            source_line=row["source_line"],
            span=_span(row["source_line"], starts),
            message=row["message"],
        )
        for row in checked.findings.iter_rows(named=True)
    ]
    return {
        "file": rel,
        "findings": findings,
        "turns": checked.turns.height,
        "trajectories": checked.trajectories.height,
        "rejects": checked.rejects.height,
        "seconds": time.perf_counter() - started,
    }


def scan_corpus(files: Sequence[str], jobs: int, corpus: Path = CORPUS) -> dict[str, Any]:
    if jobs <= 1:
        return {rel: scan_file(rel, corpus) for rel in files}
    with ProcessPoolExecutor(jobs) as pool:
        return dict(zip(files, pool.map(scan_file, files, [corpus] * len(files)), strict=True))


# --- matching --------------------------------------------------------------------------------


def episode_of(label: Label) -> tuple[str | None, int | None]:
    """The (task id, trial) a label names; (None, None) when it names none or only a cassette
    interaction (matched by its line instead)."""
    ep = label.episode
    if ep is None or isinstance(ep, int) or (isinstance(ep, str) and not ep.strip()):
        return None, None
    text = str(ep).strip()
    for pattern, task, trial in LABEL_EPISODES:
        if m := pattern.fullmatch(text):
            return m.expand(task), int(m.expand(trial)) if trial else None
    return text, None


def same_episode(label: Label, finding: Finding) -> bool:
    task, trial = episode_of(label)
    if task is None:
        return True
    if trial is not None and finding.trial != trial:
        return False
    return finding.task_id == task or f"/task-{task}/" in finding.trajectory_id


def right_kind(label: Label, finding: Finding, pack: Pack, crosswalk: Crosswalk) -> bool:
    rule = finding.rule
    if rule == label.kind or label.kind == f"other:{rule}":
        return True
    if label.kind in pack.cause and pack.cause[label.kind] == finding.cause:
        return True
    return rule in crosswalk.rules.get(label.kind, ())


def right_place(label: Label, finding: Finding, crosswalk: Crosswalk) -> bool:
    if finding.rule in crosswalk.episode_rules or label.kind in crosswalk.episode_kinds:
        return True
    if label.line is None or finding.source_line is None:
        return True
    lo, hi = finding.span or (finding.source_line, finding.source_line)
    return lo - TOLERANCE <= label.line <= hi + TOLERANCE


def matches(label: Label, finding: Finding, pack: Pack, crosswalk: Crosswalk) -> bool:
    return (
        label.file == finding.file
        and right_kind(label, finding, pack, crosswalk)
        and same_episode(label, finding)
        and right_place(label, finding, crosswalk)
    )


def covering_rules(kind: str, pack: Pack, crosswalk: Crosswalk) -> list[str]:
    """The rules of the pack that report a label kind (empty: the kind is not covered)."""
    out: list[str] = []
    if kind in pack.cause:
        out.append(kind)
        out += sorted(r for r, c in pack.cause.items() if c == pack.cause[kind] and r != kind)
    elif kind.startswith("other:") and kind[6:] in pack.cause:
        out.append(kind[6:])
    out += [r for r in crosswalk.rules.get(kind, []) if r in pack.cause and r not in out]
    return out


# --- scoring ---------------------------------------------------------------------------------


@dataclass
class Figures:
    """One set of figures: raw, or adjudicated; with or without the low-confidence labels."""

    overall: Counts = field(default_factory=Counts)  # gating findings, covered labels
    end_to_end: Counts = field(default_factory=Counts)  # gating findings, every label
    preview: Counts = field(default_factory=Counts)
    per_rule: dict[str, Counts] = field(default_factory=dict)
    per_format: dict[str, Counts] = field(default_factory=dict)  # labels: every label
    not_covered: Counter[str] = field(default_factory=Counter)
    healthy: int = 0
    healthy_alarmed: list[str] = field(default_factory=list)
    healthy_alarmed_preview: list[str] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.as_dict(),
            "end_to_end": self.end_to_end.as_dict(),
            "preview": self.preview.as_dict(),
            "per_rule": {k: v.as_dict() for k, v in sorted(self.per_rule.items())},
            "per_format": {k: v.as_dict() for k, v in sorted(self.per_format.items())},
            "not_covered": dict(sorted(self.not_covered.items())),
            "healthy_controls": self.healthy,
            "healthy_with_findings": self.healthy_alarmed,
            "healthy_with_preview_findings": self.healthy_alarmed_preview,
            "dropped_by_adjudication": dict(sorted(self.dropped.items())),
        }


@dataclass
class Result:
    corpus: Corpus
    pack: Pack
    scans: dict[str, dict[str, Any]]
    findings: list[Finding]
    pairs: set[tuple[str, str]]  # (finding key, label key)
    unmatched_findings: list[Finding]
    unmatched_labels: list[Label]
    adjudicated: dict[str, dict[str, Any]]  # disagreement key -> its adjudication
    stale: list[dict[str, Any]]
    figures: dict[str, Figures]  # raw, raw-no-low, adjudicated, adjudicated-no-low
    attribution: Counter[tuple[str, str]]


def _adjudication_key(adj: dict[str, Any]) -> str:
    if adj["side"] == "label":
        return f"{adj['file']}#{adj['labeller']}/{adj['incident']}"
    return f"{adj['file']}#{adj['rule']}@{adj['episode']}/{adj['turn']}"


def evaluate(corpus: Corpus, pack: Pack, scans: dict[str, dict[str, Any]]) -> Result:
    findings = [f for rel in sorted(scans) for f in scans[rel]["findings"]]
    labels = [lab for lab in corpus.labels if lab.file in scans]
    by_file: dict[str, list[Label]] = defaultdict(list)
    for lab in labels:
        by_file[lab.file].append(lab)
    pairs = {
        (f.key, lab.key)
        for f in findings
        for lab in by_file[f.file]
        if matches(lab, f, pack, corpus.crosswalk)
    }
    matched_f = {fk for fk, _ in pairs}
    matched_l = {lk for _, lk in pairs}
    unmatched_findings = [f for f in findings if f.key not in matched_f]
    unmatched_labels = [lab for lab in labels if lab.key not in matched_l]
    disagreements = {f.key for f in unmatched_findings} | {lab.key for lab in unmatched_labels}
    adjudicated: dict[str, dict[str, Any]] = {}
    stale = []
    for adj in corpus.adjudications:
        if adj["file"] not in scans:
            continue
        key = _adjudication_key(adj)
        if key in disagreements:
            adjudicated[key] = adj
        else:
            stale.append(adj)
    figures = {
        name: _figures(
            corpus, pack, scans, findings, labels, pairs, adjudicated if adj else {}, low
        )
        for name, adj, low in (
            ("raw", False, True),
            ("raw_without_low", False, False),
            ("adjudicated", True, True),
            ("adjudicated_without_low", True, False),
        )
    }
    label_of = {lab.key: lab for lab in labels}
    finding_of = {f.key: f for f in findings}
    attribution: Counter[tuple[str, str]] = Counter()
    for lk in sorted(matched_l):
        classes = {
            pack.cause_class.get(finding_of[fk].cause, "unclassified") for fk, k in pairs if k == lk
        }
        for cls in classes:
            attribution[(cls, label_of[lk].attribution)] += 1
    return Result(
        corpus=corpus,
        pack=pack,
        scans=scans,
        findings=findings,
        pairs=pairs,
        unmatched_findings=unmatched_findings,
        unmatched_labels=unmatched_labels,
        adjudicated=adjudicated,
        stale=stale,
        figures=figures,
        attribution=attribution,
    )


def _figures(
    corpus: Corpus,
    pack: Pack,
    scans: dict[str, dict[str, Any]],
    findings: list[Finding],
    labels: list[Label],
    pairs: set[tuple[str, str]],
    adjudicated: dict[str, dict[str, Any]],
    with_low: bool,
) -> Figures:
    fig = Figures()
    low = {lab.key for lab in labels if lab.confidence == "low"}
    matched: dict[str, set[str]] = defaultdict(set)  # finding key -> label keys
    for fk, lk in pairs:
        matched[fk].add(lk)
    found_labels = {lk for _, lk in pairs}
    fmt = {rel: corpus.files.get(rel, {}).get("format", rel.split("/")[1]) for rel in scans}

    def verdict(key: str) -> str | None:
        adj = adjudicated.get(key)
        return adj["verdict"] if adj else None

    # findings
    extra_found: list[Finding] = []  # findings whose incident the labels missed (label-wrong)
    for f in findings:
        preview = f.rule in pack.preview
        links = matched.get(f.key, set())
        if links and not with_low and links <= low:
            fig.dropped["finding matching only low labels"] += 1
            continue
        v = None if links else verdict(f.key)
        if v in ("out-of-scope", "ambiguous"):
            fig.dropped[f"finding {v}"] += 1
            continue
        correct = bool(links) or v == "label-wrong"
        if v == "label-wrong" and not preview:
            extra_found.append(f)
        buckets = [fig.preview] if preview else [fig.overall, fig.end_to_end]
        if not preview:
            buckets += [
                fig.per_rule.setdefault(f.rule, Counts()),
                fig.per_format.setdefault(fmt[f.file], Counts()),
            ]
        else:
            buckets.append(fig.per_rule.setdefault(f.rule, Counts()))
        for c in buckets:
            c.findings += 1
            c.correct += correct
    # labels
    for lab in labels:
        if not with_low and lab.key in low:
            fig.dropped["low-confidence label"] += 1
            continue
        v = None if lab.key in found_labels else verdict(lab.key)
        if v in ("label-wrong", "out-of-scope", "ambiguous"):
            fig.dropped[f"label {v}"] += 1
            continue
        found = lab.key in found_labels
        covering = covering_rules(lab.kind, pack, corpus.crosswalk)
        buckets = [fig.end_to_end, fig.per_format.setdefault(fmt[lab.file], Counts())]
        if covering:
            buckets += [fig.overall, fig.per_rule.setdefault(covering[0], Counts())]
        else:
            fig.not_covered[lab.kind] += 1
        for c in buckets:
            c.labels += 1
            c.found += found
    for f in extra_found:
        for c in (
            fig.overall,
            fig.end_to_end,
            fig.per_rule.setdefault(f.rule, Counts()),
            fig.per_format.setdefault(fmt[f.file], Counts()),
        ):
            c.labels += 1
            c.found += 1
    # healthy controls
    for rel in sorted(scans):
        rec = corpus.records.get(rel)
        if not rec or not rec.get("healthy"):
            continue
        fig.healthy += 1
        alarms = [
            f
            for f in scans[rel]["findings"]
            if verdict(f.key) not in ("label-wrong", "out-of-scope", "ambiguous")
        ]
        if any(f.rule not in pack.preview for f in alarms):
            fig.healthy_alarmed.append(rel)
        elif alarms:
            fig.healthy_alarmed_preview.append(rel)
    return fig


# --- output ----------------------------------------------------------------------------------


def _r(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def commit() -> str:
    """The checkout's commit, with `+changes` when the files that decide the figures differ."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", *DECIDING],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def size(result: Result) -> dict[str, Any]:
    files = result.corpus.files
    scanned = sorted(result.scans)
    records = [result.corpus.records[f] for f in scanned if f in result.corpus.records]
    return {
        "files": len(scanned),
        "repositories": len({files[f]["repo"] for f in scanned if f in files}),
        "producers": len({files[f].get("producer") for f in scanned if f in files}),
        "formats": len({files[f]["format"] for f in scanned if f in files}),
        "labelled_files": len(records),
        "healthy_controls": sum(bool(r.get("healthy")) for r in records),
        "incidents": sum(len(r.get("incidents") or []) for r in records),
        "low_confidence": sum(
            lab.confidence == "low" for lab in result.corpus.labels if lab.file in result.scans
        ),
    }


def as_json(result: Result) -> dict[str, Any]:
    verdicts = Counter((adj["side"], adj["verdict"]) for adj in result.adjudicated.values())
    return {
        "commit": commit(),
        "corpus": size(result),
        "tolerance_lines": TOLERANCE,
        "figures": {k: v.as_dict() for k, v in result.figures.items()},
        "attribution": [
            {"tool_class": t, "label_attribution": a, "n": n}
            for (t, a), n in sorted(result.attribution.items())
        ],
        "disagreements": {
            "findings": [
                _finding_row(f, result.adjudicated.get(f.key)) for f in result.unmatched_findings
            ],
            "labels": [
                _label_row(lab, result.adjudicated.get(lab.key)) for lab in result.unmatched_labels
            ],
            "verdicts": {f"{s} {v}": n for (s, v), n in sorted(verdicts.items())},
            "unadjudicated": sum(
                k not in result.adjudicated
                for k in [f.key for f in result.unmatched_findings]
                + [lab.key for lab in result.unmatched_labels]
            ),
            "stale_adjudications": [a["_line"] for a in result.stale],
        },
        "seconds": round(sum(s["seconds"] for s in result.scans.values()), 1),
    }


def _finding_row(f: Finding, adj: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "file": f.file,
        "rule": f.rule,
        "episode": f.trajectory_id,
        "turn": f.turn_index,
        "line": f.source_line,
        "message": f.message,
        "verdict": adj["verdict"] if adj else None,
    }


def _label_row(lab: Label, adj: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "file": lab.file,
        "labeller": lab.labeller,
        "incident": lab.index,
        "kind": lab.kind,
        "episode": lab.episode,
        "line": lab.line,
        "confidence": lab.confidence,
        "verdict": adj["verdict"] if adj else None,
    }


def _rule_rows(result: Result, fig: Figures, preview: bool) -> list[str]:
    rows = []
    for rule, c in sorted(fig.per_rule.items()):
        if (rule in result.pack.preview) != preview:
            continue
        conf = result.pack.confidence.get(rule, "?")
        rows.append(
            f"| `{rule}` | {conf} | {c.findings} | {c.correct} | {_r(c.precision)} | "
            f"{c.labels} | {c.found} | {_r(c.recall)} |"
        )
    return rows


def _wrap(paragraph: str) -> str:
    # the README's prose is wrapped at 100 columns; a code span is never split
    return textwrap.fill(paragraph, 100, break_long_words=False, break_on_hyphens=False)


def markdown(result: Result) -> str:
    """The README's accuracy block: size, overall figures, per format, per rule."""
    s = size(result)
    raw, adj = result.figures["raw"], result.figures["adjudicated"]
    lines = [
        _wrap(
            f"Measured at commit `{commit()}` by `python benchmarks/accuracy_real.py --readme` on "
            f"the real corpus (`tests/data/corpus/`): {s['files']} files from "
            f"{s['repositories']} repositories in {s['formats']} formats, {s['incidents']} "
            f"incidents labelled blind, {s['healthy_controls']} healthy controls. Raw: every "
            "disagreement counts against the tool; adjudicated: after reading the file at each "
            "disagreement (`tests/data/corpus/adjudication.jsonl`)."
        ),
        "",
        "| | raw | adjudicated |",
        "|---|---:|---:|",
    ]

    def frac(c: Counts, recall: bool) -> str:
        num, den = (c.found, c.labels) if recall else (c.correct, c.findings)
        return f"{_r(num / den if den else None)} ({num}/{den})"

    for name, get, recall in (
        ("precision (gating rules)", lambda f: f.overall, False),
        ("recall, incidents a rule covers", lambda f: f.overall, True),
        ("recall end to end, every incident", lambda f: f.end_to_end, True),
    ):
        lines.append(f"| {name} | {frac(get(raw), recall)} | {frac(get(adj), recall)} |")
    lines.append(
        f"| healthy controls with a finding | {len(raw.healthy_alarmed)} of {raw.healthy} | "
        f"{len(adj.healthy_alarmed)} of {adj.healthy} |"
    )
    lines.append(
        f"| findings of preview rules (not gating), correct | {raw.preview.findings}, "
        f"{raw.preview.correct} | {adj.preview.findings}, {adj.preview.correct} |"
    )
    nolow = result.figures["adjudicated_without_low"]
    lines += [
        "",
        _wrap(
            f"Without the {s['low_confidence']} low-confidence labels (adjudicated): precision "
            f"{_r(nolow.overall.precision)}, recall {_r(nolow.overall.recall)} covered, "
            f"{_r(nolow.end_to_end.recall)} end to end. Not covered by any rule: "
            + (", ".join(f"`{k}` {n}" for k, n in sorted(adj.not_covered.items())) or "none")
            + "."
        ),
        "",
        _wrap(
            "Attribution of the incidents found (the class of the finding's cause against the "
            "labeller's): "
            + "; ".join(
                f"tool {cls}: "
                + ", ".join(
                    f"{n} {att}" for (c, att), n in sorted(result.attribution.items()) if c == cls
                )
                for cls in sorted({c for c, _ in result.attribution})
            )
            + "."
        ),
        "",
        "Per format (adjudicated; recall over every incident):",
        "",
        "| format | files | findings | correct | precision | incidents | found | recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    files_per_format = Counter(
        result.corpus.files.get(f, {}).get("format", "?") for f in result.scans
    )
    for fmt_name in sorted(files_per_format):
        c = adj.per_format.get(fmt_name, Counts())
        lines.append(
            f"| `{fmt_name}` | {files_per_format[fmt_name]} | {c.findings} | {c.correct} | "
            f"{_r(c.precision)} | {c.labels} | {c.found} | {_r(c.recall)} |"
        )
    lines += [
        "",
        "Per rule (adjudicated; incidents counted under the first rule that covers their kind):",
        "",
        "| rule | confidence | findings | correct | precision | incidents | found | recall |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *_rule_rows(result, adj, preview=False),
    ]
    preview_rows = _rule_rows(result, adj, preview=True)
    if preview_rows:
        lines += [
            "",
            "Preview rules (reported, not gating):",
            "",
            "| rule | confidence | findings | correct | precision | incidents | found | recall |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
            *preview_rows,
        ]
    return "\n".join(lines)


def text(result: Result, verbose: bool = False) -> str:
    s = size(result)
    out = [
        f"real corpus at {commit()}: {s['files']} files, {s['repositories']} repositories, "
        f"{s['formats']} formats, {s['incidents']} incidents ({s['low_confidence']} low), "
        f"{s['healthy_controls']} healthy controls; tolerance {TOLERANCE} lines",
        "",
    ]
    for name, fig in result.figures.items():
        o, e, p = fig.overall, fig.end_to_end, fig.preview
        out.append(
            f"{name:24} precision {_r(o.precision)} ({o.correct}/{o.findings})  "
            f"recall covered {_r(o.recall)} ({o.found}/{o.labels})  "
            f"end to end {_r(e.recall)} ({e.found}/{e.labels})  "
            f"healthy with findings {len(fig.healthy_alarmed)}/{fig.healthy}  "
            f"preview findings {p.findings} ({p.correct} correct)"
        )
    adj = result.figures["adjudicated"]
    raw = result.figures["raw"]
    out += ["", "per format (raw | adjudicated): findings correct P | incidents found R"]
    for fmt_name in sorted(set(raw.per_format) | set(adj.per_format)):
        a, b = raw.per_format.get(fmt_name, Counts()), adj.per_format.get(fmt_name, Counts())
        out.append(
            f"  {fmt_name:20} {a.findings:4} {a.correct:4} {_r(a.precision):>4} | "
            f"{a.labels:4} {a.found:4} {_r(a.recall):>4}   ||  "
            f"{b.findings:4} {b.correct:4} {_r(b.precision):>4} | "
            f"{b.labels:4} {b.found:4} {_r(b.recall):>4}"
        )
    out += ["", "per rule (raw | adjudicated): findings correct P | incidents found R"]
    for rule in sorted(set(raw.per_rule) | set(adj.per_rule)):
        a, b = raw.per_rule.get(rule, Counts()), adj.per_rule.get(rule, Counts())
        tag = " (preview)" if rule in result.pack.preview else ""
        out.append(
            f"  {rule + tag:32} {a.findings:4} {a.correct:4} {_r(a.precision):>4} | "
            f"{a.labels:4} {a.found:4} {_r(a.recall):>4}   ||  "
            f"{b.findings:4} {b.correct:4} {_r(b.precision):>4} | "
            f"{b.labels:4} {b.found:4} {_r(b.recall):>4}"
        )
    out += [
        "",
        "not covered by any rule (raw): "
        + ", ".join(f"{k} {n}" for k, n in sorted(raw.not_covered.items())),
    ]
    for name in ("raw", "adjudicated"):
        fig = result.figures[name]
        out.append(
            f"healthy controls with a gating finding ({name}): "
            + (", ".join(fig.healthy_alarmed) or "none")
        )
        if fig.healthy_alarmed_preview:
            out.append(f"  with a preview finding only: {', '.join(fig.healthy_alarmed_preview)}")
    out += ["", "attribution of matched incidents: tool's cause class x labeller's attribution"]
    attrs = sorted({a for _, a in result.attribution})
    out.append("  " + " " * 14 + "".join(f"{a:>12}" for a in attrs))
    for cls in sorted({t for t, _ in result.attribution}):
        out.append(f"  {cls:14}" + "".join(f"{result.attribution[(cls, a)]:12}" for a in attrs))
    verdicts = Counter((a["side"], a["verdict"]) for a in result.adjudicated.values())
    pending = [f.key for f in result.unmatched_findings if f.key not in result.adjudicated]
    pending += [lab.key for lab in result.unmatched_labels if lab.key not in result.adjudicated]
    out += [
        "",
        f"disagreements: {len(result.unmatched_findings)} unmatched findings, "
        f"{len(result.unmatched_labels)} unmatched incidents; adjudicated "
        + ", ".join(f"{s} {v} {n}" for (s, v), n in sorted(verdicts.items()))
        + f"; not adjudicated {len(pending)}; stale adjudications {len(result.stale)}",
    ]
    if verbose or pending:
        for f in result.unmatched_findings:
            v = result.adjudicated.get(f.key, {}).get("verdict", "-")
            if verbose or v == "-":
                out.append(
                    f"  FP? [{v}] {f.rule} {f.file} {f.trajectory_id} turn {f.turn_index} "
                    f"line {f.source_line}: {f.message[:100]}"
                )
        for lab in result.unmatched_labels:
            v = result.adjudicated.get(lab.key, {}).get("verdict", "-")
            if verbose or v == "-":
                out.append(
                    f"  FN? [{v}] {lab.kind} ({lab.confidence}) {lab.file} "
                    f"{lab.labeller}#{lab.index} episode {lab.episode!r} line {lab.line}: "
                    f"{lab.evidence[:80]}"
                )
    for adj in result.stale:
        out.append(f"  stale adjudication, line {adj['_line']}: {_adjudication_key(adj)}")
    out.append(f"\nscan time {sum(s['seconds'] for s in result.scans.values()):.1f} s")
    return "\n".join(out)


def write_readme(block: str, readme: Path = README) -> None:
    doc = readme.read_text(encoding="utf-8")
    start, end = doc.find(MARK_START), doc.find(MARK_END)
    if start < 0 or end < start:
        raise SystemExit(f"{readme}: no {MARK_START} … {MARK_END} block to rewrite")
    new = doc[: start + len(MARK_START)] + "\n" + block + "\n" + doc[end:]
    readme.write_text(new, encoding="utf-8")


def run(
    only: Sequence[str] = (),
    jobs: int = 1,
    cache: Path | None = None,
    corpus_dir: Path = CORPUS,
) -> Result:
    corpus = load_corpus(corpus_dir)
    pack = load_pack()
    files = sorted(corpus.files)
    if only:
        files = [f for f in files if any(s in f for s in only)]
    scans: dict[str, Any] | None = None
    if cache and cache.is_file():
        kept = json.loads(cache.read_text(encoding="utf-8"))
        if not set(files) - set(kept):
            scans = {f: _thaw(kept[f]) for f in files}
    if scans is None:
        scans = scan_corpus(files, jobs, corpus_dir)
        if cache:
            cache.write_text(json.dumps({f: _freeze(s) for f, s in scans.items()}), "utf-8")
    return evaluate(corpus, pack, scans)


def _freeze(scan: dict[str, Any]) -> dict[str, Any]:
    return scan | {"findings": [asdict(f) for f in scan["findings"]]}


def _thaw(scan: dict[str, Any]) -> dict[str, Any]:
    findings = [
        Finding(**(f | {"span": tuple(f["span"]) if f["span"] else None})) for f in scan["findings"]
    ]
    return scan | {"findings": findings}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/accuracy_real.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the figures as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the README block")
    parser.add_argument("--readme", action="store_true", help="rewrite the README block")
    parser.add_argument("-j", "--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--only", action="append", default=[], help="files whose path has this")
    parser.add_argument("--scan-cache", type=Path, help="reuse/keep the scan's findings here")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every disagreement")
    args = parser.parse_args(argv)
    try:
        result = run(args.only, args.jobs, args.scan_cache)
    except CorpusError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(as_json(result), indent=1) + "\n", encoding="utf-8")
    if args.readme:
        write_readme(markdown(result))
    if args.markdown:
        print(markdown(result))
    else:
        print(text(result, args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
