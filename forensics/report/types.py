"""The report model's shape: what every renderer, `--json` and `forensics diff` read.

TypedDicts rather than dataclasses: the model is plain data that goes to JSON as it is, and
renderers and templates index it by key. `schema_version` (report.SCHEMA_VERSION) changes when
a key changes meaning or goes away; `diff` refuses a --json result of another version.

Each finding is written once, under "findings": a cause names its evidence by finding id, and
the text of the turns behind it ("turn_text") goes to --json only when asked (--json-text), so
the result grows with the findings, not with the text of the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict, cast


class Source(TypedDict):
    path: str | None
    line: int | None


class Finding(TypedDict):
    id: str
    rule: str
    severity: str
    confidence: str
    cause: str
    trajectory_id: str
    task_id: str | None
    trial: int | None
    turn_index: int | None
    role: str | None
    actor: str | None
    source: Source
    message: str
    evidence: str | None


class TurnText(TypedDict):
    """The turn a finding points at, as the report quotes it next to the finding's evidence."""

    turn_head: str  # its opening, when the evidence excerpt starts later ("" otherwise)
    turn_chars: int  # its length (0: no turn, or an empty one)


class Evidence(Finding):
    """A cause's evidence as the renderers show it: the finding and its turn's opening."""

    turn_head: str
    turn_chars: int


class Fix(TypedDict):
    rank: int
    action: str
    detail: str


class Cause(TypedDict):
    rank: int
    id: str
    title: str
    rules: list[str]
    trajectories: int
    findings: int
    incidents: int
    incident_rules: list[dict[str, Any]]
    reward_lost: float
    severity: str
    confidence: str
    why_ranked: str
    explains: list[dict[str, Any]]
    fixes: list[Fix]
    evidence: list[str]  # ids of the most telling findings (Report.findings), most telling first
    share: float
    reward_lost_share: float | None  # None when no reward was lost
    trajectory_ids: list[str]
    validate: str
    rules_to_zero: list[str]
    explains_detail: list[dict[str, Any]]
    parameters: dict[str, Any]


class Summary(TypedDict):
    files: int
    skipped: int
    files_by_format: dict[str, int]
    trajectories: int
    turns: int
    findings: int
    incidents: int
    rejects: int
    mean_reward: float | None
    findings_by_rule: dict[str, int]
    reward_by_variant: list[dict[str, Any]]
    reward_lost: float
    scored: int
    trajectories_with_findings: int
    by_variant: list[dict[str, Any]]
    runs: list[dict[str, Any]]  # result.runs_frame rows: run_id, domain, started, models, ...
    # Episodes whose artifacts contradict each other: {trajectory_id, disagreements}
    disagreements: list[dict[str, str]]


class ScoreSplit(TypedDict):
    """Is this score about the model: failed and penalised episodes by whose failure it was."""

    text: str
    scored: int
    penalised: int
    reward_lost: float
    plumbing_share: float | None
    mean_reward: float | None
    mean_reward_without_infra: float | None
    scored_without_infra: int
    unscored_infra: int
    # Per infra | model | unclassified | unexplained: class, label, episodes, reward_lost,
    # share (of all reward lost), causes.
    groups: list[dict[str, Any]]
    episodes: dict[str, int]  # every episode with a class, per class (trajectories.fault_class)


class Trajectory(TypedDict):
    trajectory_id: str
    run_id: str
    task_id: str | None
    trial: int | None
    reward: float | None
    termination_reason: str | None
    variant: str | None
    agent_model: str | None
    turn_count: int
    source: Source
    fault_class: NotRequired[str | None]


class FileEntry(TypedDict):
    path: str
    format: str | None
    detected_because: str
    records: int
    note: str | None


class Skipped(TypedDict):
    path: str
    reason: str


class RuleEntry(TypedDict):
    id: str
    title: str
    severity: str
    confidence: str
    summary: str
    cause: str
    docs: dict[str, str]  # schema.DOC_SECTIONS -> text


# A turn of page.output_lengths.groups[].turns, in this order.
LENGTH_COLUMNS = ["length", "cut", "cap_y", "cap"]


class Page(TypedDict):
    """What only the HTML page shows; the JSON output leaves it out."""

    explorer: dict[str, Any]
    output_lengths: dict[str, Any] | None


class Coverage(TypedDict):
    files: int
    not_run: list[str]
    partly_run: list[str]


class Report(TypedDict):
    schema_version: int
    # The config file applied ([tool.forensics]), relative to the working directory; or None.
    config: str | None
    summary: Summary
    primary: dict[str, Any] | None
    verdict: str
    score_split: ScoreSplit | None
    causes: list[Cause]
    keep: list[str]
    validation: list[str]
    fix_plan: list[dict[str, Any]]
    parameters: list[dict[str, Any]]
    validation_checks: list[dict[str, Any]]
    # a Sequence: the model makes each finding when it is read (report.model.FindingRows)
    findings: Sequence[Finding]
    trajectories: list[Trajectory]
    rejects: list[dict[str, Any]]
    files: list[FileEntry]
    skipped: list[Skipped]
    not_checked: list[dict[str, Any]]
    # The same, each rule once, grouped by the columns it lacked and the files that lacked them
    # (coverage.groups).
    not_checked_groups: list[dict[str, Any]]
    # Per file, in one place (coverage.summary): the files with turns, the rules that ran on
    # none of them for lack of data, those that ran on some only.
    coverage: Coverage
    rules: list[RuleEntry]
    # Per finding id: the turn it points at (TurnText). The model holds it for every cause's
    # evidence (the report quotes those turns), and for every finding when built with
    # turn_text=True; --json writes it only then (scan --json-text).
    turn_text: NotRequired[dict[str, TurnText]]
    # Set by the command line once the gate has judged the scan.
    gate: NotRequired[dict[str, Any]]
    page: NotRequired[Page]


def cause_evidence(report: Report) -> dict[str, list[Evidence]]:
    """Per cause id, its evidence findings, most telling first, each with its turn's opening:
    what the report, the Markdown and the terminal summary quote under the cause."""
    wanted = {i for c in report["causes"] for i in c["evidence"]}
    found = {f["id"]: f for f in report["findings"] if f["id"] in wanted}
    text = report.get("turn_text", {})
    empty: TurnText = {"turn_head": "", "turn_chars": 0}
    return {
        c["id"]: [
            cast(Evidence, {**found[i], **text.get(i, empty)}) for i in c["evidence"] if i in found
        ]
        for c in report["causes"]
    }
