"""`forensics eval`: a scan's findings scored against labels, through a crosswalk.

The labels are anyone's: a team's own, or a public failure dataset's turned into the same shape
by forensics.tools.public_labels. docs/eval.md defines the three files:

- LABELS.jsonl, one label a line: `file`, `trajectory`, `location` (`step`, `turn`, `span` or
  `line`), `category`, `attribution` (infra, model or none); a line without a category labels
  the whole trajectory (its attribution; `none` for a run without failure, a control);
- a crosswalk (TOML): each dataset category with the rules that report it (`rules`, and/or
  `class`: any rule whose cause is of that class), its attribution and the reason for both;
- a disputes file (JSONL, optional): adjudicated labels and findings, each with a reason, applied
  apart from the labels, which are never edited.

The findings come from a scan of the files the labels name (fusion off: a label names one
file's episode) or from a saved `scan --json` report. A finding and a label match when they are
in the same file and trajectory, the finding's rule reports the label's category, and the place
agrees, at three levels: `exact` (the same step, turn or span; a line inside the finding's
record), `tolerant` (steps and turns within `tolerance` of each other, lines within
`line_tolerance` of the record, a span in the finding's ancestor chain or the other way round)
and `trajectory` (anywhere in the same trajectory). A label without a location, a category whose
place is the trajectory and a rule the crosswalk lists as episode-level match at every level
when the trajectory is the same.

The benchmark of the real corpus (benchmarks/accuracy_real.py) shares the pack's description
(`Pack`, `load_pack`), the counts (`Counts`) and the verdict vocabulary with this module.
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

LEVELS = ("exact", "tolerant", "trajectory")
LOCATION_KEYS = ("step", "turn", "span", "line")
ATTRIBUTIONS = ("infra", "model", "none")
# The verdicts of benchmarks/accuracy_real.py's adjudication, plus `relabel` (the label names
# the wrong category or attribution: it is scored as the dispute says, and listed).
LABEL_VERDICTS = ("label-wrong", "relabel", "out-of-scope", "ambiguous", "tool-wrong")
FINDING_VERDICTS = ("label-wrong", "out-of-scope", "ambiguous", "tool-wrong")
# What the tool's trajectories table says of an episode (schema.DIAGNOSED_TRAJECTORY_COLUMNS),
# plus `not read` for a labelled trajectory the scan does not hold.
FAULT_CLASSES = ("infra", "model", "unclassified", "unexplained", "none", "not read")
CROSSWALKS = Path(__file__).resolve().parent.parent / "data" / "crosswalks"
DEFAULT_TOLERANCE = 1
DEFAULT_LINE_TOLERANCE = 3


class EvalError(Exception):
    """A labels, crosswalk, disputes or report file that can not be used (names file, line)."""


# --- the rule pack -----------------------------------------------------------------------------


@dataclass
class Pack:
    """What the scorers need of the rule pack."""

    cause: dict[str, str]  # rule -> cause
    confidence: dict[str, str]  # rule -> hard / heuristic
    preview: set[str]
    cause_class: dict[str, str]  # cause -> infra / model

    def rule_class(self, rule: str) -> str:
        return self.cause_class.get(self.cause.get(rule, ""), "unclassified")


def load_pack(rules_dirs: Sequence[Path] | None = None) -> Pack:
    from forensics.check import engine

    rules = engine.load_rules(list(rules_dirs or []))
    classes: dict[str, str] = {}
    dirs = [engine.default_rules_dir(), *(rules_dirs or [])]
    for rules_dir in dirs:
        for path in [rules_dir / "causes.toml", *sorted((rules_dir / "causes").glob("*.toml"))]:
            if path.is_file():
                for cause in tomllib.loads(path.read_text(encoding="utf-8")).get("cause", []):
                    classes[cause["id"]] = cause.get("class", "unclassified")
    return Pack(
        cause={r.id: r.cause for r in rules},
        confidence={r.id: r.confidence for r in rules},
        preview={r.id for r in rules if r.preview},
        cause_class=classes,
    )


@dataclass
class Counts:
    findings: int = 0
    correct: int = 0
    labels: int = 0
    found: int = 0

    @property
    def precision(self) -> float | None:
        return self.correct / self.findings if self.findings else None

    @property
    def recall(self) -> float | None:
        return self.found / self.labels if self.labels else None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"precision": self.precision, "recall": self.recall}


# --- inputs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Label:
    id: str
    file: str  # resolved path
    trajectory: str | None  # None: every trajectory of the file
    trial: int | None
    where: str | None  # step / turn / span / line, None: the trajectory
    at: Any  # int for step, turn, line; str for span
    category: str | None  # None: a trajectory line (attribution only)
    attribution: str | None
    confidence: str
    note: str


@dataclass(frozen=True)
class Finding:
    id: str
    file: str
    rule: str
    cause: str
    trajectory_id: str
    task_id: str | None
    trial: int | None
    turn_index: int | None
    line: int | None
    record: tuple[int, int] | None  # lines of the finding's turn record, when the scan knows
    step: int | None  # the native step index when a reader keeps one apart from turn_index
    span_path: tuple[str, ...]  # span ids from the root to the finding's span, when known
    message: str


@dataclass
class Category:
    name: str
    rules: list[str]
    classes: list[str]
    attribution: str | None
    place: str  # "location" or "trajectory"
    reason: str
    aliases: list[str]


@dataclass
class Crosswalk:
    path: str
    dataset: dict[str, Any]
    categories: dict[str, Category]  # normalised name -> category, aliases included
    order: list[str]  # category names in file order (an unmatched finding's home: the first)
    episode_rules: set[str]

    def category(self, name: str | None) -> Category | None:
        return None if name is None else self.categories.get(_norm(name))

    def reports(self, category: Category, rule: str, pack: Pack) -> bool:
        return rule in category.rules or pack.rule_class(rule) in category.classes

    def home(self, rule: str, pack: Pack) -> str | None:
        """The row an unmatched finding of this rule counts against: the first category that
        lists the rule by name; a rule that categories take only by its class has a row of its
        own (`other infra findings`), so that no one category's precision carries it; None:
        no category reports the rule (the finding is outside the crosswalk, not judged)."""
        cats = [self.categories[_norm(n)] for n in self.order]
        for c in cats:
            if rule in c.rules:
                return c.name
        cls = pack.rule_class(rule)
        if any(cls in c.classes for c in cats):
            return other_row(cls)
        return None


def other_row(cls: str) -> str:
    return f"other {cls} findings"


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def load_crosswalk(path: Path) -> Crosswalk:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise EvalError(f"{path}: not a crosswalk ({exc})") from None
    categories: dict[str, Category] = {}
    order: list[str] = []
    for n, entry in enumerate(data.get("category", []), 1):
        where = f"{path.name}: category {n}"
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise EvalError(f"{where}: no name")
        if not str(entry.get("reason", "")).strip():
            raise EvalError(f"{where} ({name}): no reason (every choice says why)")
        attribution = entry.get("attribution")
        if attribution is not None and attribution not in ATTRIBUTIONS:
            raise EvalError(f"{where} ({name}): attribution is one of {', '.join(ATTRIBUTIONS)}")
        place = entry.get("place", "location")
        if place not in ("location", "trajectory"):
            raise EvalError(f"{where} ({name}): place is location or trajectory")
        cat = Category(
            name=name,
            rules=list(entry.get("rules", [])),
            classes=list(entry.get("class", []))
            if isinstance(entry.get("class"), list)
            else [entry["class"]]
            if entry.get("class")
            else [],
            attribution=attribution,
            place=place,
            reason=entry["reason"],
            aliases=list(entry.get("aliases", [])),
        )
        for key in [name, *cat.aliases]:
            if _norm(key) in categories:
                raise EvalError(f"{where}: {key!r} is named twice")
            categories[_norm(key)] = cat
        order.append(name)
    place = data.get("place", {})
    return Crosswalk(
        path=str(path),
        dataset=dict(data.get("dataset", {})),
        categories=categories,
        order=order,
        episode_rules=set(place.get("episode_rules", [])),
    )


def crosswalk_path(name: str) -> Path:
    """A crosswalk by file or by the name of one shipped (forensics/data/crosswalks/NAME.toml)."""
    path = Path(name)
    if path.is_file():
        return path
    shipped = CROSSWALKS / f"{name}.toml"
    if shipped.is_file():
        return shipped
    known = ", ".join(sorted(p.stem for p in CROSSWALKS.glob("*.toml")))
    raise EvalError(
        f"{name}: no such crosswalk file, and no shipped crosswalk of that name ({known})"
    )


def _jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalError(f"{path}: cannot read ({exc})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(rec, dict):
            raise EvalError(f"{path}:{n}: a label is a JSON object")
        yield n, rec


def resolve(file: str, root: Path) -> str:
    """A label's or finding's file as one string for both sides: absolute, normalised."""
    path = Path(file)
    return str((path if path.is_absolute() else root / path).resolve())


def load_labels(path: Path, root: Path | None = None) -> list[Label]:
    """LABELS.jsonl; files relative to `root` (default: the labels file's directory)."""
    base = root if root is not None else path.parent
    labels: list[Label] = []
    seen: set[str] = set()
    for n, rec in _jsonl(path):
        where = f"{path}:{n}"
        file = rec.get("file")
        if not isinstance(file, str) or not file:
            raise EvalError(f"{where}: no file")
        traj = rec.get("trajectory")
        if traj is not None and not isinstance(traj, (str, int)):
            raise EvalError(f"{where}: trajectory is a string, a number or null")
        trial = rec.get("trial")
        if trial is not None and not isinstance(trial, int):
            raise EvalError(f"{where}: trial is an integer")
        loc = rec.get("location")
        kind: str | None = None
        at: Any = None
        if loc is not None:
            keys = [k for k in LOCATION_KEYS if isinstance(loc, dict) and k in loc]
            if len(keys) != 1 or len(loc) != 1:
                raise EvalError(f"{where}: location is one of {{{', '.join(LOCATION_KEYS)}}}")
            kind, at = keys[0], loc[keys[0]]
            if kind == "span" and not (isinstance(at, str) and at):
                raise EvalError(f"{where}: a span location is a span id")
            if kind != "span" and not (isinstance(at, int) and not isinstance(at, bool)):
                raise EvalError(f"{where}: a {kind} location is an integer")
            if kind == "line" and at < 1:
                raise EvalError(f"{where}: lines are 1-based")
            if kind in ("step", "turn") and at < 0:
                raise EvalError(f"{where}: steps and turns are 0-based")
        category = rec.get("category")
        if category is not None and not (isinstance(category, str) and category.strip()):
            raise EvalError(f"{where}: category is a non-empty string or null")
        attribution = rec.get("attribution")
        if attribution is not None and attribution not in ATTRIBUTIONS:
            raise EvalError(f"{where}: attribution is one of {', '.join(ATTRIBUTIONS)} or null")
        if category is None and (loc is not None or attribution is None):
            raise EvalError(
                f"{where}: a line without a category labels a trajectory: an attribution and "
                "no location"
            )
        label_id = str(rec.get("id") or f"{path.name}:{n}")
        if label_id in seen:
            raise EvalError(f"{where}: label id {label_id!r} is used twice")
        seen.add(label_id)
        labels.append(
            Label(
                id=label_id,
                file=resolve(file, base),
                trajectory=None if traj is None else str(traj),
                trial=trial,
                where=kind,
                at=at,
                category=category,
                attribution=attribution,
                confidence=str(rec.get("confidence") or "high"),
                note=str(rec.get("note") or ""),
            )
        )
    return labels


@dataclass
class Dispute:
    line: int
    side: str  # label / finding
    verdict: str
    reason: str
    label: str | None = None  # label id
    finding: dict[str, Any] = field(default_factory=dict)  # file, rule, trajectory, turn
    category: str | None = None  # relabel: the category the label should have had
    attribution: str | None = None  # relabel: the attribution it should have had


def load_disputes(path: Path | None, root: Path) -> list[Dispute]:
    if path is None:
        return []
    out = []
    for n, rec in _jsonl(path):
        where = f"{path}:{n}"
        reason = str(rec.get("reason") or "").strip()
        if not reason:
            raise EvalError(f"{where}: a dispute says why (reason)")
        verdict = rec.get("verdict")
        if "label" in rec:
            if verdict not in LABEL_VERDICTS:
                raise EvalError(f"{where}: a label's verdict is one of {', '.join(LABEL_VERDICTS)}")
            if verdict == "relabel" and not (rec.get("category") or rec.get("attribution")):
                raise EvalError(f"{where}: relabel gives the category or attribution")
            out.append(
                Dispute(
                    n,
                    "label",
                    verdict,
                    reason,
                    label=str(rec["label"]),
                    category=rec.get("category"),
                    attribution=rec.get("attribution"),
                )
            )
        elif isinstance(rec.get("finding"), dict):
            f = rec["finding"]
            if verdict not in FINDING_VERDICTS:
                raise EvalError(
                    f"{where}: a finding's verdict is one of {', '.join(FINDING_VERDICTS)}"
                )
            if not {"file", "rule", "trajectory"} <= set(f):
                raise EvalError(f"{where}: a finding is named by file, rule, trajectory (turn)")
            out.append(
                Dispute(
                    n,
                    "finding",
                    verdict,
                    reason,
                    finding=f | {"file": resolve(str(f["file"]), root)},
                )
            )
        else:
            raise EvalError(f"{where}: a dispute names a label (its id) or a finding")
    return out


# --- the findings ------------------------------------------------------------------------------


@dataclass
class Observed:
    """What the scan says: its findings, and each trajectory's fault class."""

    findings: list[Finding]
    trajectories: list[dict[str, Any]]  # trajectory_id, task_id, trial, file, fault_class
    source: str  # "scan" or the report's path
    files: int = 0


def _record_spans(lines: list[int]) -> dict[int, tuple[int, int]]:
    starts = sorted(set(lines))
    return {
        s: (s, starts[i + 1] - 1 if i + 1 < len(starts) else 1 << 31) for i, s in enumerate(starts)
    }


def from_report(doc: dict[str, Any], root: Path, source: str) -> Observed:
    """The findings and trajectories of a `scan --json` report (paths relative to `root`)."""
    findings = []
    for n, f in enumerate(doc.get("findings", [])):
        src = f.get("source") or {}
        path = src.get("path")
        if not path:
            continue
        findings.append(
            Finding(
                # the report's id is a fingerprint of rule, task, trial and turn: two files
                # may share one, the position in the report may not
                id=f"{n}:{f.get('id')}",
                file=resolve(path, root),
                rule=f["rule"],
                cause=f.get("cause") or "",
                trajectory_id=f["trajectory_id"],
                task_id=f.get("task_id"),
                trial=f.get("trial"),
                turn_index=f.get("turn_index"),
                line=src.get("line"),
                record=None,
                step=f.get("step_index"),
                span_path=tuple(f.get("span_path") or ()),
                message=f.get("message") or "",
            )
        )
    trajectories = [
        {
            "trajectory_id": t["trajectory_id"],
            "task_id": t.get("task_id"),
            "trial": t.get("trial"),
            "file": resolve((t.get("source") or {}).get("path") or "", root),
            "fault_class": t.get("fault_class") or "none",
        }
        for t in doc.get("trajectories", [])
    ]
    return Observed(findings, trajectories, source, len(doc.get("files", [])))


def load_report(path: Path, root: Path) -> Observed:
    from forensics.report import model as report_model

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalError(f"{path}: not a scan --json report ({exc})") from None
    if not isinstance(doc, dict) or not {"findings", "trajectories"} <= set(doc):
        raise EvalError(f"{path}: not a scan --json report (no findings and trajectories)")
    version = doc.get("schema_version", 1)
    if version != report_model.SCHEMA_VERSION:
        raise EvalError(
            f"{path}: a --json report of schema {version}; this forensics reads schema "
            f"{report_model.SCHEMA_VERSION}: scan the labelled files again"
        )
    return from_report(doc, root, str(path))


def scan_files(
    files: Sequence[str], rules_dirs: Sequence[Path] = (), settings: Any = None
) -> Observed:
    """Scan the labelled files (fusion off: a label names one file's episode) and keep, with
    each finding, the lines of its turn's record and the span path when the reader gave one."""
    from dataclasses import replace

    import polars as pl

    from forensics import pipeline
    from forensics.report import model as report_model

    chosen = settings if settings is not None else pipeline.load_settings(True)
    result = pipeline.scan(
        list(files), rules_dirs=list(rules_dirs), settings=replace(chosen, fuse=False)
    )
    doc = report_model.build(result)
    observed = from_report(dict(doc), Path.cwd(), "scan")
    turns = result.turns
    lines = turns.select("source_path", "source_line").drop_nulls()
    lines = pl.concat(
        [lines, result.trajectories.select("source_path", "source_line").drop_nulls()]
    )
    records: dict[str, dict[int, tuple[int, int]]] = {
        resolve(p, Path.cwd()): _record_spans(g["source_line"].to_list())
        for (p,), g in lines.group_by("source_path")
    }
    extra = _span_columns(turns)
    observed.findings = [_with_place(f, records.get(f.file, {}), extra) for f in observed.findings]
    observed.files = len(result.files)
    return observed


def _span_columns(turns: Any) -> dict[tuple[str, int], tuple[tuple[str, ...], int | None]]:
    """(trajectory, turn) -> (span path, step index), from the columns a reader of span trees
    or step lists adds to the turns table: `span_path` (ids from the root), else `span_id` with
    `parent_span_id` links, and `step_index`. Empty when the turns have none of them."""
    cols = set(turns.columns)
    if not {"span_path", "span_id", "step_index"} & cols:
        return {}
    keep = [c for c in ("span_path", "span_id", "parent_span_id", "step_index") if c in cols]
    rows = turns.select("trajectory_id", "turn_index", *keep).iter_rows(named=True)
    rows = list(rows)
    parent = {
        (r["trajectory_id"], r["span_id"]): r.get("parent_span_id")
        for r in rows
        if r.get("span_id")
    }
    out = {}
    for r in rows:
        path: tuple[str, ...] = tuple(r.get("span_path") or ())
        if not path and r.get("span_id"):
            chain, node = [], r["span_id"]
            while node and node not in chain:
                chain.append(node)
                node = parent.get((r["trajectory_id"], node))
            path = tuple(reversed(chain))
        out[(r["trajectory_id"], r["turn_index"])] = (path, r.get("step_index"))
    return out


def _with_place(
    f: Finding,
    records: dict[int, tuple[int, int]],
    extra: dict[tuple[str, int], tuple[tuple[str, ...], int | None]],
) -> Finding:
    from dataclasses import replace

    path, step = extra.get(
        (f.trajectory_id, f.turn_index if f.turn_index is not None else -1), ((), None)
    )
    return replace(
        f,
        record=records.get(f.line) if f.line is not None else None,
        span_path=f.span_path or path,
        step=f.step if f.step is not None else step,
    )


# --- matching ----------------------------------------------------------------------------------


def same_trajectory(label: Label, f: Finding | dict[str, Any]) -> bool:
    """A label's trajectory names the finding's (or trajectory row's) episode: its id, its task
    id (with the trial when the label gives one), or the task part of the id."""
    if isinstance(f, Finding):
        file, tid, task, trial = f.file, f.trajectory_id, f.task_id, f.trial
    else:
        file, tid, task, trial = f["file"], f["trajectory_id"], f["task_id"], f["trial"]
    if label.file != file:
        return False
    if label.trial is not None and trial != label.trial:
        return False
    if label.trajectory is None:
        return True
    t = label.trajectory
    return t in (tid, task) or f"/task-{t}/" in tid or tid.endswith(f"/{t}")


def right_kind(label: Label, f: Finding, crosswalk: Crosswalk, pack: Pack) -> bool:
    cat = crosswalk.category(label.category)
    return cat is not None and crosswalk.reports(cat, f.rule, pack)


def place_level(
    label: Label, f: Finding, crosswalk: Crosswalk, tolerance: int, line_tolerance: int
) -> int:
    """The strictest level at which the places agree: 0 exact, 1 tolerant, 2 the trajectory."""
    cat = crosswalk.category(label.category)
    if (
        label.where is None
        or f.rule in crosswalk.episode_rules
        or (cat is not None and cat.place == "trajectory")
    ):
        return 0
    if label.where in ("step", "turn"):
        have = f.step if label.where == "step" and f.step is not None else f.turn_index
        if have is None:
            return 2
        gap = abs(have - label.at)
        return 0 if gap == 0 else 1 if gap <= tolerance else 2
    if label.where == "line":
        if f.line is None:
            return 2
        lo, hi = f.record or (f.line, f.line)
        if lo <= label.at <= hi:
            return 0
        return 1 if lo - line_tolerance <= label.at <= hi + line_tolerance else 2
    # a span: the finding's own, else one on its ancestor chain (the label names an agent or a
    # step span, the finding the LLM or tool span inside it)
    if not f.span_path:
        return 2
    if f.span_path[-1] == label.at:
        return 0
    return 1 if label.at in f.span_path else 2


# --- scoring -----------------------------------------------------------------------------------


@dataclass
class Figures:
    overall: dict[str, Counts]  # level -> findings in scope, covered labels
    end_to_end: dict[str, Counts]  # level -> findings in scope, every label
    per_category: dict[str, dict[str, Counts]]  # category -> level -> counts
    not_covered: Counter[str]
    out_of_scope_rules: Counter[str]  # findings whose rule reports no category
    dropped: Counter[str]
    attribution: Counter[tuple[str, str]]  # (label's, tool's fault class) per trajectory

    def as_dict(self) -> dict[str, Any]:
        return {
            "overall": {lv: c.as_dict() for lv, c in self.overall.items()},
            "end_to_end": {lv: c.as_dict() for lv, c in self.end_to_end.items()},
            "per_category": {
                cat: {lv: c.as_dict() for lv, c in levels.items()}
                for cat, levels in sorted(self.per_category.items())
            },
            "not_covered": dict(sorted(self.not_covered.items())),
            "findings_outside_the_crosswalk": dict(sorted(self.out_of_scope_rules.items())),
            "dropped_by_disputes": dict(sorted(self.dropped.items())),
            "attribution": [
                {"label": a, "tool": t, "n": n} for (a, t), n in sorted(self.attribution.items())
            ],
        }


@dataclass
class Result:
    labels_path: str
    crosswalk: Crosswalk
    labels: list[Label]
    observed: Observed
    tolerance: int
    line_tolerance: int
    judged: list[Finding]  # findings in the labelled files and trajectories
    pairs: dict[str, set[tuple[str, str]]]  # level -> (finding id, label id)
    raw: Figures
    disputed: Figures
    disputes: list[dict[str, Any]]  # each dispute with what it met
    stale: list[Dispute]
    unmatched_findings: list[Finding]  # at the tolerant level
    unmatched_labels: list[Label]
    missing_files: list[str] = field(default_factory=list)
    left_out: list[Label] = field(default_factory=list)  # the labels of the missing files


def _dispute_meets(d: Dispute, f: Finding) -> bool:
    want = d.finding
    return (
        want["file"] == f.file
        and want["rule"] == f.rule
        and str(want["trajectory"]) in (f.trajectory_id, f.task_id)
        and ("turn" not in want or want["turn"] == f.turn_index)
    )


def evaluate(
    labels: list[Label],
    observed: Observed,
    crosswalk: Crosswalk,
    pack: Pack,
    disputes: Sequence[Dispute] = (),
    *,
    tolerance: int = DEFAULT_TOLERANCE,
    line_tolerance: int = DEFAULT_LINE_TOLERANCE,
    labels_path: str = "",
    missing_files: Sequence[str] = (),
) -> Result:
    gone = set(missing_files)
    left_out = [lab for lab in labels if lab.file in gone]
    labels = [lab for lab in labels if lab.file not in gone]
    incidents = [lab for lab in labels if lab.category is not None]
    # the judged findings: in a labelled file, in a trajectory a label names (or any of a file
    # a label names whole)
    by_file: dict[str, list[Label]] = defaultdict(list)
    for lab in labels:
        by_file[lab.file].append(lab)
    judged = sorted(
        (
            f
            for f in observed.findings
            if any(same_trajectory(lab, f) for lab in by_file.get(f.file, ()))
        ),
        key=lambda f: (
            f.file,
            f.trajectory_id,
            -1 if f.turn_index is None else f.turn_index,
            f.rule,
            f.id,
        ),
    )
    pairs = _pairs(incidents, judged, crosswalk, pack, tolerance, line_tolerance)
    by_id = {lab.id: lab for lab in labels}
    matched_f = {fid for fid, _ in pairs["tolerant"]}
    matched_l = {lid for _, lid in pairs["tolerant"]}
    # disputes: each names a label by id or a finding by file, rule, trajectory (turn)
    applied: dict[str, Dispute] = {}  # label id or finding id -> its dispute
    stale: list[Dispute] = []
    listed: list[dict[str, Any]] = []
    for d in disputes:
        if d.side == "label":
            if d.label in by_id:
                applied[d.label] = d
                listed.append(_dispute_row(d, label=by_id[d.label]))
            else:
                stale.append(d)
            continue
        met = [f for f in judged if _dispute_meets(d, f)]
        if not met:
            stale.append(d)
        for f in met:
            applied[f.id] = d
        if met:
            listed.append(_dispute_row(d, findings=met))
    places = (tolerance, line_tolerance)
    raw = _figures(labels, judged, crosswalk, pack, observed, {}, places)
    disputed = _figures(labels, judged, crosswalk, pack, observed, applied, places)
    return Result(
        labels_path=labels_path,
        crosswalk=crosswalk,
        labels=labels,
        observed=observed,
        tolerance=tolerance,
        line_tolerance=line_tolerance,
        judged=judged,
        pairs=pairs,
        raw=raw,
        disputed=disputed,
        disputes=listed,
        stale=stale,
        unmatched_findings=[
            f for f in judged if f.id not in matched_f and crosswalk.home(f.rule, pack)
        ],
        unmatched_labels=[
            lab
            for lab in incidents
            if lab.id not in matched_l and _covered(crosswalk.category(lab.category))
        ],
        missing_files=sorted(gone),
        left_out=left_out,
    )


def _pairs(
    incidents: Sequence[Label],
    judged: Sequence[Finding],
    crosswalk: Crosswalk,
    pack: Pack,
    tolerance: int,
    line_tolerance: int,
) -> dict[str, set[tuple[str, str]]]:
    """(finding id, label id) at each level; a pair of a stricter level is in the looser ones."""
    pairs: dict[str, set[tuple[str, str]]] = {lv: set() for lv in LEVELS}
    by_file: dict[str, list[Label]] = defaultdict(list)
    for lab in incidents:
        by_file[lab.file].append(lab)
    for f in judged:
        for lab in by_file.get(f.file, ()):
            if same_trajectory(lab, f) and right_kind(lab, f, crosswalk, pack):
                level = place_level(lab, f, crosswalk, tolerance, line_tolerance)
                for lv in LEVELS[level:]:
                    pairs[lv].add((f.id, lab.id))
    return pairs


def _covered(cat: Category | None) -> bool:
    return cat is not None and bool(cat.rules or cat.classes)


def _dispute_row(
    d: Dispute, label: Label | None = None, findings: Sequence[Finding] = ()
) -> dict[str, Any]:
    row: dict[str, Any] = {"line": d.line, "verdict": d.verdict, "reason": d.reason}
    if label is not None:
        row["label"] = label.id
        row["was"] = {"category": label.category, "attribution": label.attribution}
        if d.verdict == "relabel":
            row["now"] = {
                "category": d.category or label.category,
                "attribution": d.attribution or label.attribution,
            }
    else:
        row["findings"] = [
            {"rule": f.rule, "trajectory": f.trajectory_id, "turn": f.turn_index} for f in findings
        ]
    return row


def _figures(
    labels: list[Label],
    judged: list[Finding],
    crosswalk: Crosswalk,
    pack: Pack,
    observed: Observed,
    applied: dict[str, Dispute],
    places: tuple[int, int],
) -> Figures:
    from dataclasses import replace

    fig = Figures(
        overall={lv: Counts() for lv in LEVELS},
        end_to_end={lv: Counts() for lv in LEVELS},
        per_category={},
        not_covered=Counter(),
        out_of_scope_rules=Counter(),
        dropped=Counter(),
        attribution=Counter(),
    )
    # the labels as the disputes leave them
    kept: dict[str, Label] = {}
    for lab in labels:
        d = applied.get(lab.id)
        if d is None or d.verdict == "tool-wrong":
            kept[lab.id] = lab
        elif d.verdict == "relabel":
            kept[lab.id] = replace(
                lab,
                category=d.category or lab.category,
                attribution=d.attribution or lab.attribution,
            )
        else:
            fig.dropped[f"label {d.verdict}"] += 1
    incidents = {lid: lab for lid, lab in kept.items() if lab.category is not None}
    pairs = _pairs(list(incidents.values()), judged, crosswalk, pack, *places)
    for lv in LEVELS:
        links: dict[str, set[str]] = defaultdict(set)
        for fid, lid in pairs[lv]:
            if lid in incidents:
                links[fid].add(lid)
        found = {lid for lids in links.values() for lid in lids}
        # findings
        for f in judged:
            home = crosswalk.home(f.rule, pack)
            mine = links.get(f.id, set())
            if not mine and home is None:
                if lv == "exact":
                    fig.out_of_scope_rules[f.rule] += 1
                continue
            d = applied.get(f.id)
            if not mine and d is not None and d.verdict in ("out-of-scope", "ambiguous"):
                if lv == "exact":
                    fig.dropped[f"finding {d.verdict}"] += 1
                continue
            correct = bool(mine) or (d is not None and d.verdict == "label-wrong")
            cats = sorted({incidents[lid].category or "" for lid in mine}, key=_norm)
            cats = cats or [home or ""]
            for c in (fig.overall[lv], fig.end_to_end[lv]):
                c.findings += 1
                c.correct += correct
            for name in cats:
                cat = crosswalk.category(name)
                key = cat.name if cat else str(name)
                cell = fig.per_category.setdefault(key, {x: Counts() for x in LEVELS})[lv]
                cell.findings += 1
                cell.correct += correct
                if not mine and correct:  # a finding the labels missed: a found label too
                    cell.labels += 1
                    cell.found += 1
            if not mine and correct:
                for c in (fig.overall[lv], fig.end_to_end[lv]):
                    c.labels += 1
                    c.found += 1
        # labels
        for lid, lab in sorted(incidents.items()):
            cat = crosswalk.category(lab.category)
            key = cat.name if cat else str(lab.category)
            hit = lid in found
            fig.end_to_end[lv].labels += 1
            fig.end_to_end[lv].found += hit
            cell = fig.per_category.setdefault(key, {x: Counts() for x in LEVELS})[lv]
            cell.labels += 1
            cell.found += hit
            if _covered(cat):
                fig.overall[lv].labels += 1
                fig.overall[lv].found += hit
            elif lv == "exact":
                fig.not_covered[key] += 1
    # trajectory attribution: the labels' (a trajectory line's, else infra when an incident is
    # infra, else model) against the tool's fault class
    fig.attribution = _attribution(list(kept.values()), observed, crosswalk)
    return fig


def label_attribution(label: Label, crosswalk: Crosswalk) -> str | None:
    if label.attribution is not None:
        return label.attribution
    cat = crosswalk.category(label.category)
    return cat.attribution if cat else None


def _attribution(
    labels: list[Label], observed: Observed, crosswalk: Crosswalk
) -> Counter[tuple[str, str]]:
    said: dict[tuple[str, str | None, int | None], set[str]] = defaultdict(set)
    whole: dict[tuple[str, str | None, int | None], str] = {}
    for lab in labels:
        key = (lab.file, lab.trajectory, lab.trial)
        if lab.category is None:
            whole[key] = lab.attribution or "none"
        elif (a := label_attribution(lab, crosswalk)) is not None:
            said[key].add(a)
    out: Counter[tuple[str, str]] = Counter()
    for key in sorted(set(said) | set(whole), key=str):
        theirs: str | None
        if key in whole:
            theirs = whole[key]
        else:
            theirs = "infra" if "infra" in said[key] else "model" if "model" in said[key] else None
        if theirs is None:
            continue
        probe = Label("", key[0], key[1], key[2], None, None, None, None, "", "")
        rows = sorted(
            (t for t in observed.trajectories if same_trajectory(probe, t)),
            key=lambda t: t["trajectory_id"],
        )
        if key[1] is None and len(rows) > 1:
            # a label of a whole file with several episodes: the worst class among them
            classes = {t["fault_class"] for t in rows}
            ours = next((c for c in FAULT_CLASSES if c in classes), "none")
        else:
            ours = rows[0]["fault_class"] if rows else "not read"
        out[(theirs, ours)] += 1
    return out


# --- outputs -----------------------------------------------------------------------------------


def _shown(path: str) -> str:
    """A path as the outputs show it: relative to the working directory when under it, so
    that the same labels give the same output wherever the checkout sits."""
    try:
        return Path(path).relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path


def _crosswalk_shown(path: str) -> str:
    p = Path(path)
    return p.stem if p.parent == CROSSWALKS else _shown(path)


def _r(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def as_json(result: Result) -> dict[str, Any]:
    return {
        "labels": result.labels_path,
        "crosswalk": _crosswalk_shown(result.crosswalk.path),
        "dataset": result.crosswalk.dataset,
        "findings_from": result.observed.source,
        "tolerance": {"steps": result.tolerance, "lines": result.line_tolerance},
        "size": _size(result),
        "raw": result.raw.as_dict(),
        "disputed": result.disputed.as_dict(),
        "disputes": result.disputes,
        "stale_disputes": [d.line for d in result.stale],
        "missing_files": [_shown(f) for f in result.missing_files],
        "unmatched": {
            "findings": [
                {
                    "file": _shown(f.file),
                    "rule": f.rule,
                    "trajectory": f.trajectory_id,
                    "turn": f.turn_index,
                    "line": f.line,
                    "message": f.message,
                }
                for f in result.unmatched_findings
            ],
            "labels": [
                {
                    "id": lab.id,
                    "file": _shown(lab.file),
                    "category": lab.category,
                    "trajectory": lab.trajectory,
                    "location": None if lab.where is None else {lab.where: lab.at},
                }
                for lab in result.unmatched_labels
            ],
        },
    }


def _size(result: Result) -> dict[str, int]:
    return {
        "labels": sum(lab.category is not None for lab in result.labels),
        "trajectory_labels": sum(lab.category is None for lab in result.labels),
        "files": len({lab.file for lab in result.labels}),
        "findings_judged": len(result.judged),
        "trajectories_read": len(result.observed.trajectories),
        "missing_files": len(result.missing_files),
        "labels_of_missing_files": len(result.left_out),
    }


def _category_rows(result: Result, fig: Figures) -> list[tuple[str, str, dict[str, Counts]]]:
    rows = []
    for name in sorted(fig.per_category, key=_norm):
        cat = result.crosswalk.category(name)
        if name.startswith("other ") and cat is None:
            covered = f"class {name.split()[1]}, no category named"
        elif cat is None:
            covered = "unknown"
        elif not _covered(cat):
            covered = "none"
        else:
            covered = ", ".join(cat.rules + [f"class {c}" for c in cat.classes])
        rows.append((name, covered, fig.per_category[name]))
    return rows


def _frac(num: int, den: int) -> str:
    return f"{_r(num / den if den else None)} ({num}/{den})"


def text(result: Result) -> str:
    s = _size(result)
    out = [
        f"{s['labels']} labels ({s['trajectory_labels']} trajectory labels) in {s['files']} "
        f"files; {s['findings_judged']} findings judged; tolerance ±{result.tolerance} steps, "
        f"±{result.line_tolerance} lines",
    ]
    if result.missing_files:
        out.append(
            f"left out: {s['labels_of_missing_files']} labels of {s['missing_files']} labelled "
            f"files that do not exist (first {_shown(result.missing_files[0])})"
        )
    out.append("")
    for name, fig in (("raw", result.raw), ("disputed", result.disputed)):
        if name == "disputed" and not result.disputes:
            continue
        o, e = fig.overall, fig.end_to_end
        out.append(f"{name}:")
        for lv in LEVELS:
            out.append(
                f"  {lv:10} precision {_frac(o[lv].correct, o[lv].findings):16} "
                f"recall {_frac(o[lv].found, o[lv].labels):16} "
                f"end to end {_frac(e[lv].found, e[lv].labels)}"
            )
    fig = result.disputed
    applied = " (disputes applied)" if result.disputes else ""
    out += [
        "",
        f"per category{applied}: n, then precision/recall at exact, tolerant, trajectory",
    ]
    for name, covered, levels in _category_rows(result, fig):
        n = levels["exact"].labels
        if covered == "none":
            cells = "no rule reports it"
        else:
            cells = "  ".join(
                f"{_r(levels[lv].precision)}/{_r(levels[lv].recall)}" for lv in LEVELS
            )
        out.append(f"  {name[:36]:36} n={n:<4} {cells}")
    if fig.not_covered:
        out.append(
            "not covered by any rule: "
            + ", ".join(f"{k} {v}" for k, v in sorted(fig.not_covered.items()))
        )
    if fig.out_of_scope_rules:
        out.append(
            "findings of rules the crosswalk does not map (not judged): "
            + ", ".join(f"{k} {v}" for k, v in sorted(fig.out_of_scope_rules.items()))
        )
    out += ["", "trajectory attribution: labels (rows) x the tool's fault class (columns)"]
    out += ["  " + line for line in _confusion(fig.attribution)]
    if result.disputes or result.stale:
        out += ["", f"disputes: {len(result.disputes)} applied, {len(result.stale)} stale"]
        for d in result.disputes:
            what = d.get("label") or ", ".join(
                f"{f['rule']} {f['trajectory']} turn {f['turn']}" for f in d["findings"]
            )
            out.append(f"  line {d['line']}: {d['verdict']} {what}: {d['reason']}")
        for st in result.stale:
            out.append(f"  line {st.line}: stale (names nothing the labels or the scan hold)")
    return "\n".join(out)


def _confusion(attribution: Counter[tuple[str, str]]) -> list[str]:
    rows = [a for a in ATTRIBUTIONS if any(k[0] == a for k in attribution)]
    cols = [c for c in FAULT_CLASSES if any(k[1] == c for k in attribution)]
    if not rows:
        return ["(no trajectory carries an attribution)"]
    lines = [" " * 8 + "".join(f"{c:>13}" for c in cols)]
    for a in rows:
        lines.append(f"{a:8}" + "".join(f"{attribution[(a, c)]:13}" for c in cols))
    return lines


def markdown(result: Result) -> str:
    fig = result.disputed
    ds = result.crosswalk.dataset
    title = ds.get("name") or Path(result.crosswalk.path).stem
    s = _size(result)
    lines = [
        f"## {title}: {s['labels']} labels in {s['files']} files",
        "",
        f"Crosswalk `{_crosswalk_shown(result.crosswalk.path)}`; tolerance "
        f"±{result.tolerance} steps, ±{result.line_tolerance} lines; disputes applied: "
        f"{len(result.disputes)}.",
        "",
        "| | exact | tolerant | trajectory |",
        "|---|---:|---:|---:|",
    ]
    for label, get, recall in (
        ("precision", lambda lv: fig.overall[lv], False),
        ("recall (covered categories)", lambda lv: fig.overall[lv], True),
        ("recall (every label)", lambda lv: fig.end_to_end[lv], True),
    ):
        cells = []
        for lv in LEVELS:
            c = get(lv)
            cells.append(_frac(c.found, c.labels) if recall else _frac(c.correct, c.findings))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| category | rules | n | precision exact | recall exact | precision tolerant | "
        "recall tolerant | recall trajectory |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, covered, levels in _category_rows(result, fig):
        e, t, j = levels["exact"], levels["tolerant"], levels["trajectory"]
        if covered == "none":
            lines.append(f"| {name} | none | {e.labels} | not covered |  |  |  |  |")
            continue
        lines.append(
            f"| {name} | {covered} | {e.labels} | {_r(e.precision)} | {_r(e.recall)} | "
            f"{_r(t.precision)} | {_r(t.recall)} | {_r(j.recall)} |"
        )
    conf = fig.attribution
    rows = [a for a in ATTRIBUTIONS if any(k[0] == a for k in conf)]
    cols = [c for c in FAULT_CLASSES if any(k[1] == c for k in conf)]
    if rows:
        lines += [
            "",
            "Trajectory attribution (labels in rows, the tool's fault class in columns):",
            "",
            "| label \\ tool | " + " | ".join(cols) + " |",
            "|---|" + "---:|" * len(cols),
        ]
        for a in rows:
            lines.append(f"| {a} | " + " | ".join(str(conf[(a, c)]) for c in cols) + " |")
    if result.disputes:
        lines += ["", "Disputes (applied apart; the labels are unchanged):", ""]
        for d in result.disputes:
            what = d.get("label") or ", ".join(
                f"`{f['rule']}` {f['trajectory']} turn {f['turn']}" for f in d["findings"]
            )
            lines.append(f"- {d['verdict']} {what}: {d['reason']}")
    return "\n".join(lines) + "\n"


def files_named(labels: Sequence[Label]) -> list[str]:
    return sorted({lab.file for lab in labels})
