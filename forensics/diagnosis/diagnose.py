"""Findings -> root causes, ranked, with fixes whose parameters come from the data.

Causes, their fixes, the parameters the fixes name and what each cause explains are data
(rules/causes.toml, read by diagnosis/causes.py, which also builds a cause for a rule no file
defines); diagnosis/facts.py runs the parameter queries. This module groups findings under causes,
attributes downstream symptoms to the upstream cause that explains them, ranks the causes and
writes the keep list, the validation plan and the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import polars as pl

from forensics.check import turnstore
from forensics.check.engine import Rule
from forensics.diagnosis.causes import UNCLASSIFIED, CausePack, cause_pack
from forensics.diagnosis.facts import Turns
from forensics.diagnosis.facts import compute as cause_facts
from forensics.ingest import spec_of
from forensics.schema import SEVERITIES
from forensics.wording import agree

SEVERITY_WEIGHT = {s: i + 1 for i, s in enumerate(SEVERITIES)}
CONFIDENCE_WEIGHT = {"hard": 1.0, "heuristic": 0.5}


@dataclass
class Cause:
    rank: int
    id: str
    title: str
    rules: list[str]
    trajectories: int
    turns: int
    reward_lost: float
    severity: str
    confidence: str
    why_ranked: str
    fixes: list[dict[str, Any]]
    evidence: list[str]  # finding ids, most telling first
    explains: list[dict[str, Any]] = field(default_factory=list)
    validate: str = ""
    followup: str = ""
    # Turns (or episodes) its rules found something in: several rules on one turn for one
    # cause are one incident. incident_rules: how many incidents each combination of rules made.
    incidents: int = 0
    incident_rules: list[dict[str, Any]] = field(default_factory=list)
    # Findings behind those incidents: its own and the symptoms it claimed.
    rule_hits: int = 0
    rules_to_zero: list[str] = field(default_factory=list)
    trajectory_ids: list[str] = field(default_factory=list)
    # The parameters the fix texts were filled with (observed cap, recommended cap, parser, …).
    facts: dict[str, Any] = field(default_factory=dict)
    # infra | model | unclassified (rules/causes.toml `class`): whose failure this is.
    score_class: str = UNCLASSIFIED


@dataclass
class ParserCheck:
    """The --tool-call-parser a run's server ran with, against the one its model needs."""

    run_id: str
    parser: str
    model: str | None
    expected: str | None

    @property
    def verdict(self) -> str:
        if self.expected == self.parser:
            return f"matches {self.model}"
        if self.expected:
            return f"{self.model} needs {self.expected}"
        return f"no known parser for {self.model or 'an unknown model'}"


@dataclass
class Diagnosis:
    causes: list[Cause]
    keep: list[str]
    validation: list[str]
    verdict: str
    parsers: list[ParserCheck] = field(default_factory=list)
    # Is this score about the model? See score_split().
    score: ScoreSplit | None = None


class _Facts(dict[str, Any]):
    """Fix-text parameters; a missing one renders visibly instead of raising."""

    def __missing__(self, key: str) -> str:
        return f"<{key}?>"


def _rank_key(c: Cause, order: int) -> tuple[float, float, int, str]:
    impact = c.trajectories * SEVERITY_WEIGHT[c.severity] * CONFIDENCE_WEIGHT[c.confidence]
    return (-impact, -c.reward_lost, order, c.id)


def diagnose(
    findings: pl.DataFrame,
    turns: Turns,
    trajectories: pl.DataFrame,
    rules: list[Rule],
    rules_dir: Path | Sequence[Path],
) -> Diagnosis:
    """rules_dir: the directories whose causes.toml to merge, after those the rules were
    loaded from (engine.Rule.pack_dirs); a cause no file defines falls back to its rule."""
    dirs = [rules_dir] if isinstance(rules_dir, Path) else list(rules_dir)
    pack = cause_pack(rules, dirs)
    specs = pack.causes
    rule_by_id = {r.id: r for r in rules}
    rewards = dict(trajectories.select("trajectory_id", "reward").iter_rows())

    def lost(ids: set[str]) -> float:
        return round(sum(1.0 - rewards[i] for i in ids if rewards.get(i) is not None), 3)

    # Upstream causes first: each claims the downstream findings in its trajectories.
    by_cause: dict[str, pl.DataFrame] = {}
    for cid in sorted({rule_by_id[r].cause for r in findings["rule"].unique().to_list()}):
        by_cause[cid] = findings.filter(pl.col("cause") == cid)
    claimed: dict[str, list[dict[str, Any]]] = {}
    symptoms: dict[str, list[pl.DataFrame]] = {}  # cause -> the findings it claimed
    remaining = findings
    for cid in sorted(by_cause, key=lambda c: (specs[c].order, c)):
        own = by_cause[cid]
        spec = specs.get(cid)
        if spec is None or own.is_empty():
            continue
        ids = own["trajectory_id"].unique().to_list()
        for rule_id in spec.explains:
            explained = remaining.filter(
                (pl.col("rule") == rule_id)
                & pl.col("trajectory_id").is_in(ids)
                & (pl.col("cause") != cid)
            )
            if explained.height:
                claimed.setdefault(cid, []).append(
                    {
                        "rule": rule_id,
                        "findings": explained.height,
                        "trajectories": explained["trajectory_id"].n_unique(),
                    }
                )
                symptoms.setdefault(cid, []).append(explained)
                remaining = remaining.join(
                    explained.select("finding_id"), on="finding_id", how="anti"
                )

    # Each cause's own findings; a cause all of whose findings are symptoms of an upstream one
    # is not a cause of its own.
    owned: dict[str, pl.DataFrame] = {}
    for cid, found in by_cause.items():
        own = found.join(remaining.select("finding_id"), on="finding_id", how="semi")
        if not own.is_empty():
            owned[cid] = own
    computed = cause_facts(pack, owned, turns, trajectories)
    causes: list[Cause] = []
    for cid, own in owned.items():
        spec = specs[cid]
        episodes = set(own["trajectory_id"].to_list())
        severity = max(own["severity"].to_list(), key=SEVERITY_WEIGHT.__getitem__)
        confidence = "hard" if "hard" in own["confidence"].to_list() else "heuristic"
        facts = _Facts(computed[cid])
        fixes: list[dict[str, Any]] = []
        for fix in spec.fixes:
            if fix.get("when") and not facts.get(fix["when"]):
                continue
            fixes.append(
                {
                    "rank": len(fixes) + 1,
                    "action": agree(fix["action"].format_map(facts)),
                    "detail": agree(fix["detail"].format_map(facts)),
                }
            )
        # Most telling evidence: hard findings first, then longest messages, one per trajectory.
        ordered = own.sort(["confidence", "source_path", "source_line"])
        evidence, seen = [], set()
        for row in ordered.iter_rows(named=True):
            if row["trajectory_id"] in seen:
                continue
            seen.add(row["trajectory_id"])
            evidence.append(row["finding_id"])
            if len(evidence) == 3:
                break
        incidents = _incidents(own, symptoms.get(cid, []))
        causes.append(
            Cause(
                rank=0,
                id=cid,
                title=spec.title,
                rules=sorted(own["rule"].unique().to_list()),
                trajectories=len(episodes),
                turns=own.height,
                reward_lost=lost(episodes),
                severity=severity,
                confidence=confidence,
                why_ranked="",
                fixes=fixes,
                evidence=evidence,
                explains=claimed.get(cid, []),
                validate=spec.validate,
                followup=spec.followup,
                incidents=incidents.height,
                rule_hits=own.height + sum(s.height for s in symptoms.get(cid, [])),
                incident_rules=_incident_rules(incidents),
                rules_to_zero=spec.rules_to_zero + [e["rule"] for e in claimed.get(cid, [])],
                trajectory_ids=sorted(episodes),
                facts=dict(facts),
                score_class=spec.score_class,
            )
        )
    orders = {c.id: specs[c.id].order for c in causes}
    causes.sort(key=lambda c: _rank_key(c, orders[c.id]))
    total = trajectories.height
    for i, c in enumerate(causes, 1):
        c.rank = i
        share = f"{c.trajectories} of {total} trajectories"
        c.why_ranked = agree(
            f"touches {share}, {c.severity} severity, {c.confidence} evidence, "
            f"reward lost {c.reward_lost:g}"
            + ("; upstream of " + ", ".join(e["rule"] for e in c.explains) if c.explains else "")
        )
    parsers = _parser_checks(trajectories, pack)
    keep = _keep(turns, trajectories, findings, parsers)
    validation = [agree(step) for step in _validation(causes, trajectories)]
    verdict = agree(_verdict(causes, total, _by_run(causes, trajectories)))
    return Diagnosis(causes, keep, validation, verdict, parsers, score_split(causes, trajectories))


def _incidents(own: pl.DataFrame, symptoms: list[pl.DataFrame]) -> pl.DataFrame:
    """A cause's incidents: the turns (or episodes) its own findings and the symptoms it
    claimed sit on, each with the rules that fired there."""
    members = pl.concat([own, *symptoms]) if symptoms else own
    return members.group_by("trajectory_id", "turn_index").agg(
        pl.col("rule").unique().sort().alias("rules")
    )


def _incident_rules(incidents: pl.DataFrame) -> list[dict[str, Any]]:
    """Each combination of rules that fired together on a turn, with how many turns it hit."""
    combos = (
        incidents.group_by("rules")
        .len("incidents")
        .sort(["incidents", "rules"], descending=[True, False])
    )
    return combos.to_dicts()


def _parser_checks(trajectories: pl.DataFrame, pack: CausePack) -> list[ParserCheck]:
    """One check per run and model whose server names its tool-call parser (a run label)."""
    checks: dict[tuple[str, str | None], ParserCheck] = {}
    for row in trajectories.sort("run_id").iter_rows(named=True):
        labels = {lab["key"]: lab["value"] for lab in row["labels"] or []}
        parser = labels.get("server.tool_call_parser")
        model = row["agent_model"]
        if parser and (parser, model) not in checks:
            expected = pack.lookup("tool_call_parser", model)
            checks[(parser, model)] = ParserCheck(row["run_id"], parser, model, expected)
    return list(checks.values())


def _keep(
    turns: Turns,
    trajectories: pl.DataFrame,
    findings: pl.DataFrame,
    parsers: list[ParserCheck],
) -> list[str]:
    """What works and should stay as it is: measured, not assumed."""
    keep = []
    flagged = set(findings["trajectory_id"].to_list())
    clean = trajectories.filter(~pl.col("trajectory_id").is_in(list(flagged)))
    if clean.height and flagged:
        named = [str(t) for t in clean["task_id"].drop_nulls().to_list()[:5]]
        tasks = f" (task {', '.join(named)})" if named else ""
        rewards = clean["reward"].drop_nulls()
        mean = f"; mean reward {cast(float, rewards.mean()):.2f}" if rewards.len() else ""
        noun = "trajectory" if clean.height == 1 else "trajectories"
        # Scoring is vouched for only where there are scores (a capture has none).
        works = "the harness, tools and scoring work" if rewards.len() else "the setup works"
        keep.append(
            f"{clean.height} {noun}{tasks} ran without findings{mean}: {works} — keep "
            f"{'it' if clean.height == 1 else 'them'} as the control."
        )
    for check in parsers:
        if check.expected != check.parser:
            continue
        if not _leaked_markup(turns, check.run_id):
            keep.append(
                f"--tool-call-parser {check.parser} matches {check.model} and no tool-call "
                f"markup leaked into content in {check.run_id}: keep it."
            )
    return keep


def _leaked_markup(turns: Turns, run_id: str) -> bool:
    """Whether an agent turn of the run has `<tool_call>` in its content."""
    if isinstance(turns, pl.DataFrame):
        agent = turns.filter((pl.col("run_id") == run_id) & (pl.col("actor") == "agent"))
        return not agent.filter(pl.col("content").str.contains("<tool_call>")).is_empty()
    found = turns.sql(
        f"select count(*) as n from {turnstore.TABLE} where run_id = ? and actor = 'agent' "
        "and contains(content, '<tool_call>')",
        [run_id],
    )
    return bool(found["n"][0])


def _rerun(fmt: str | None, tasks: list[str]) -> str | None:
    """How to rerun these tasks with the harness that wrote the format (its declaration)."""
    spec = spec_of(fmt)
    return spec.rerun_hint(tasks) if spec is not None else None


def _artifact(fmt: str | None) -> str:
    """What the next scan reads, by the format scanned (a format not registered: a capture)."""
    spec = spec_of(fmt)
    return spec.artifact if spec is not None else "capture"


def _validation(causes: list[Cause], trajectories: pl.DataFrame) -> list[str]:
    """Rerun a few affected tasks, then what the next scan must show, phrased for the files
    that were scanned: a harness's rerun flag only for its own files, each cause's own check."""
    if not causes:
        return []
    affected = trajectories.filter(pl.col("trajectory_id").is_in(causes[0].trajectory_ids))
    shortest = affected.unique("task_id").sort(["turn_count", "task_id"]).head(2)
    tasks = list(dict.fromkeys(str(t) for t in shortest["task_id"].to_list() if t is not None))
    formats = set(affected["source_format"].to_list())
    steps = []
    if tasks:
        rerun = {_rerun(f, tasks) for f in formats}
        flag = rerun.pop() if len(rerun) == 1 else None
        how = f" ({flag})" if flag else ""
        noun = "task" if len(tasks) == 1 else f"{len(tasks)} shortest affected tasks"
        steps.append(f"Apply fix 1 of cause 1, then rerun the {noun}{how} before the full run.")
    scanned = set(trajectories["source_format"].to_list())
    kinds = {_artifact(f) for f in scanned}
    artifact = kinds.pop() if len(kinds) == 1 else "run"
    for c in causes:
        zero = ", ".join(c.rules_to_zero)
        steps.append(f"Scan the new {artifact}: {c.validate} ({zero} must report 0 findings).")
    steps += [c.followup for c in causes if c.followup]
    return steps


def _lower_first(title: str) -> str:
    """A title inside a sentence: lower-case its first word unless it is an acronym (API)."""
    word = title.split(" ", 1)[0]
    return title if word.isupper() else title[0].lower() + title[1:]


def _trajectories(n: int) -> str:
    return f"{n} trajectory" if n == 1 else f"{n} trajectories"


def _by_run(causes: list[Cause], trajectories: pl.DataFrame, shown: int = 6) -> str:
    """Where the primary cause sits, run by run: runs are compared, never pooled."""
    if not causes or trajectories["run_id"].n_unique() < 2:
        return ""
    hit = set(causes[0].trajectory_ids)
    runs = (
        trajectories.group_by("run_id", maintain_order=True)
        .agg(
            total=pl.len(),
            hit=pl.col("trajectory_id").is_in(list(hit)).sum(),
        )
        .sort("hit", "run_id", descending=[True, False])
    )
    parts = [f"{run} {n} of {of}" for run, of, n in runs.head(shown).iter_rows()]
    if runs.height > shown:
        parts.append(f"{runs.height - shown} more runs")
    return f" By run: {', '.join(parts)}."


def _verdict(causes: list[Cause], total: int, by_run: str = "") -> str:
    if not causes:
        return f"No findings in {_trajectories(total)}."
    first = causes[0]
    counted = (
        f"{first.incidents} finding{'' if first.incidents == 1 else 's'}"
        if first.incidents == first.rule_hits
        else f"{first.incidents:,} incident{'' if first.incidents == 1 else 's'} from "
        f"{first.rule_hits:,} rule hits"
    )
    text = (
        f"Primary cause: {_lower_first(first.title)} — in {first.trajectories} of {total} "
        f"trajectories ({counted}), reward lost {first.reward_lost:g}.{by_run}"
    )
    if len(causes) > 1:
        rest = "; ".join(
            f"{_lower_first(c.title)} ({_trajectories(c.trajectories)})" for c in causes[1:]
        )
        text += f" Also: {rest}."
    return text


# An episode's class from the classes of the causes in it, strongest first: one plumbing fault
# invalidates the measurement of the whole episode, so infra wins over model, and both over
# causes no file classes. A penalised episode that no cause touches is "unexplained".
EPISODE_CLASSES = ("infra", "model", UNCLASSIFIED)
UNEXPLAINED = "unexplained"
SCORE_GROUPS = (*EPISODE_CLASSES, UNEXPLAINED)
GROUP_WORDS = {
    "infra": "plumbing",
    "model": "model behaviour",
    UNCLASSIFIED: "unclassified causes",
    UNEXPLAINED: "with no finding",
}


@dataclass
class ScoreGroup:
    """Failed or penalised episodes (reward < 1) of one class and the reward they lost."""

    score_class: str
    episodes: int
    reward_lost: float
    # Of all reward lost in the scan (None when nothing was lost).
    share: float | None
    causes: list[str]


@dataclass
class ScoreSplit:
    """Is this score about the model? The reward lost, split by whose failure it was."""

    # trajectory_id -> class, for every episode a cause touches or that lost reward.
    episode_class: dict[str, str]
    scored: int
    penalised: int
    reward_lost: float
    groups: list[ScoreGroup]
    mean_reward: float | None
    # The score over the scored episodes no plumbing cause touched: what the model earned where
    # the measurement held.
    mean_reward_without_infra: float | None
    scored_without_infra: int
    # Plumbing's part of the reward lost (None when nothing was lost).
    plumbing_share: float | None
    # Episodes without a reward that a plumbing cause touched (crashed before scoring).
    unscored_infra: int
    text: str


def _episode_classes(causes: list[Cause], trajectories: pl.DataFrame) -> dict[str, str]:
    found: dict[str, set[str]] = {}
    for c in causes:
        for tid in c.trajectory_ids:
            found.setdefault(tid, set()).add(c.score_class)
    out = {tid: next(k for k in EPISODE_CLASSES if k in ks) for tid, ks in found.items()}
    penalised = trajectories.filter(pl.col("reward") < 1.0)["trajectory_id"].to_list()
    for tid in penalised:
        out.setdefault(tid, UNEXPLAINED)
    return dict(sorted(out.items()))


def score_split(causes: list[Cause], trajectories: pl.DataFrame) -> ScoreSplit:
    """Split the failed and penalised episodes (reward < 1) into plumbing, model behaviour,
    unclassified causes and no finding, with the reward each lost, and the mean reward over
    the episodes plumbing did not touch."""
    classes = _episode_classes(causes, trajectories)
    cls = pl.col("trajectory_id").replace_strict(classes, default=None, return_dtype=pl.String)
    scored = trajectories.filter(pl.col("reward").is_not_null()).with_columns(cls.alias("cls"))
    penalised = scored.filter(pl.col("reward") < 1.0)
    lost_total = round(float((1.0 - penalised["reward"]).sum()), 3)
    lost_ids = set(penalised["trajectory_id"].to_list())
    # The causes behind each group: those of its class in its penalised episodes.
    causes_of: dict[str, set[str]] = {}
    for c in causes:
        for tid in lost_ids.intersection(c.trajectory_ids):
            if c.score_class == classes[tid]:
                causes_of.setdefault(classes[tid], set()).add(c.id)
    groups = []
    for key in SCORE_GROUPS:
        mine = penalised.filter(pl.col("cls") == key)
        lost = round(float((1.0 - mine["reward"]).sum()), 3)
        groups.append(
            ScoreGroup(
                key,
                mine.height,
                lost,
                round(lost / lost_total, 4) if lost_total else None,
                sorted(causes_of.get(key, [])),
            )
        )
    measured = scored["reward"].mean() if scored.height else None
    clean = scored.filter(pl.col("cls").fill_null("") != "infra")["reward"]
    clean_mean = clean.mean() if clean.len() else None
    infra = groups[0]
    unscored_infra = sum(
        1
        for tid in trajectories.filter(pl.col("reward").is_null())["trajectory_id"].to_list()
        if classes.get(tid) == "infra"
    )
    split = ScoreSplit(
        episode_class=classes,
        scored=scored.height,
        penalised=penalised.height,
        reward_lost=lost_total,
        groups=groups,
        mean_reward=None if measured is None else round(cast(float, measured), 4),
        mean_reward_without_infra=None if clean_mean is None else round(cast(float, clean_mean), 4),
        scored_without_infra=clean.len(),
        plumbing_share=infra.share,
        unscored_infra=unscored_infra,
        text="",
    )
    split.text = _split_text(split)
    return split


def _split_text(s: ScoreSplit) -> str:
    if not s.scored:
        text = "No episode was scored, so there is no score to split."
    elif not s.penalised:
        text = f"No reward was lost: {_episodes(s.scored, 'scored')}, all with full reward."
    else:
        parts = [
            f"{g.episodes} {GROUP_WORDS[g.score_class]} (reward lost {g.reward_lost:g}"
            + (f", {100 * g.share:.0f}%)" if g.share is not None else ")")
            for g in s.groups
            if g.episodes
        ]
        text = (
            f"Of {_episodes(s.penalised, 'failed or penalised')} (reward lost "
            f"{s.reward_lost:g}): " + ", ".join(parts) + "."
        )
        if s.plumbing_share:
            text += f" {100 * s.plumbing_share:.0f}% of the reward lost is plumbing, not the model."
        if s.mean_reward_without_infra is None:
            text += " Plumbing touched every scored episode: this score does not measure the model."
        elif s.scored_without_infra < s.scored:
            text += (
                f" Mean reward {s.mean_reward:.2f} as measured; "
                f"{s.mean_reward_without_infra:.2f} over the {_episodes(s.scored_without_infra)} "
                "plumbing did not touch."
            )
    if s.unscored_infra:
        text += f" Plumbing faults hit {_episodes(s.unscored_infra, 'unscored')}."
    return text


def _episodes(n: int, adjective: str = "") -> str:
    words = [str(n), adjective, "episode" if n == 1 else "episodes"]
    return " ".join(w for w in words if w)
