"""The report model: everything a renderer shows, decided here, as plain data in a stable order.

Diagnosis decides what a reader is told; this module lays it out (report_types.Report) with the
numbers, excerpts and page data the renderers need, so no renderer reads a table or re-decides.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, cast, overload

import polars as pl

from forensics.diagnosis import coverage
from forensics.diagnosis.diagnose import GROUP_WORDS, SCORE_GROUPS, ParserCheck
from forensics.diagnosis.facts import CHARS_PER_TOKEN
from forensics.diagnosis.result import ScanResult, runs_frame, trajectories_frame
from forensics.ingest.parse.files import EMPTY_DIRECTORY
from forensics.report.types import (
    LENGTH_COLUMNS,
    Cause,
    Coverage,
    Finding,
    Fix,
    Report,
    ScoreSplit,
    Trajectory,
    TurnText,
)

# Version of the report model (and so of --json): bumped when a key changes meaning or goes.
# 4: a cause's evidence is a list of finding ids; the turn text beside it is "turn_text".
SCHEMA_VERSION = 4
EXCERPT_CHARS = 600
# The cause whose findings mean "this turn was cut off by the output cap" (rules/causes.toml):
# its turns are drawn red in the output-length chart.
TRUNCATION_CAUSE = "truncated-output"
TURN_CHARS = 4000  # per turn text in the data island, before the budget shrinks it
FLAGGED_TURN_CHARS = 2000  # turns with findings keep up to this much: they are the evidence
# However large the scan, a turn keeps this much text (head and tail): enough to tell what it
# was about; its source file and line lead to the rest.
MIN_TURN_CHARS = 48
SYSTEM_CHARS = 20000
ARG_CHARS = 2000
# Total text the data island may carry (~ this many chars): beyond it every turn is clipped
# shorter, head and tail kept, turns with findings last, so a scan of tens of thousands of
# trajectories stays an openable page (benchmarks/report_load.py measures it). Half of it at
# most goes to the turns with findings.
DATA_BUDGET_CHARS = 24_000_000
# Opening of an evidence turn shown before the rule's excerpt (which is usually the turn's end):
# together they show e.g. the `<think>` that opened and the sentence that was cut off.
HEAD_CHARS = 220
# The fix parameters worth a line of their own: fact key (rules/causes.toml placeholders filled
# by diagnose.py), label, format of the value.
PARAMETERS = [
    ("cap", "output cap observed (max_tokens)", "{:,} tokens"),
    ("truncated_turns", "turns cut off at the cap", "{:,}"),
    ("completed_max_tokens", "longest complete answer of the same actor and model", "{:,} tokens"),
    ("recommended_cap", "recommended output cap", "at least {}"),
    ("thinking_switch", "switch thinking off per request", "{}"),
    ("reasoning_parser", "reasoning parser for the model", "--reasoning-parser {}"),
    ("shared_text", "endpoint shared by agent and user simulator", "{}"),
]


def _finding(row: dict[str, Any]) -> Finding:
    return {
        "id": row["finding_id"],
        "rule": row["rule"],
        "severity": row["severity"],
        "confidence": row["confidence"],
        "cause": row["cause"],
        "trajectory_id": row["trajectory_id"],
        "task_id": row["task_id"],
        "trial": row["trial"],
        "turn_index": row["turn_index"],
        "role": row["role"],
        "actor": row["actor"],
        "source": {"path": row["source_path"], "line": row["source_line"]},
        "message": row["message"],
        "evidence": row["evidence"],
    }


class FindingRows(Sequence[Finding]):
    """The findings of the report model, each made from its row when it is read: a scan with
    hundreds of thousands of findings never holds all of them as Python objects at once."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self._frame = frame

    def __len__(self) -> int:
        return self._frame.height

    @overload
    def __getitem__(self, index: int) -> Finding: ...

    @overload
    def __getitem__(self, index: slice) -> list[Finding]: ...

    def __getitem__(self, index: int | slice) -> Finding | list[Finding]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._frame.height)
            rows = self._frame.slice(start, max(0, stop - start)).iter_rows(named=True)
            return [_finding(r) for r in rows][::step]
        if index < 0:
            index += self._frame.height
        if not 0 <= index < self._frame.height:
            raise IndexError(index)
        return _finding(self._frame.row(index, named=True))

    def __iter__(self) -> Iterator[Finding]:
        for start in range(0, self._frame.height, _ROWS_AT_ONCE):
            for row in self._frame.slice(start, _ROWS_AT_ONCE).iter_rows(named=True):
                yield _finding(row)


_ROWS_AT_ONCE = 4096


def _turn_head(content: str | None, excerpt: str | None) -> str:
    """The turn's opening, when the rule's excerpt starts later (it begins with '…')."""
    if not content or not excerpt or not excerpt.startswith("…"):
        return ""
    tail = excerpt.lstrip("… ").strip()[:40]
    start = content.find(tail) if tail else -1
    end = min(HEAD_CHARS, start) if start >= 0 else HEAD_CHARS
    return content[:end]


def _turn_text(finding: Finding, content: str | None) -> TurnText:
    return {"turn_head": _turn_head(content, finding["evidence"]), "turn_chars": len(content or "")}


# A run whose agent model no source names is its own row, never pooled with other such runs:
# unrelated experiments must not share one mean reward.
UNKNOWN_MODEL = "model unknown (run {run})"

# What a person reading one episode sees of each turn: the report's explorer and `forensics
# show` (show.py) lay out these columns.
TURN_VIEW = [
    "turn_index",
    "role",
    "actor",
    "content",
    "reasoning",
    "tool_calls",
    "finish_reason",
    "finish_reason_raw",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "max_output_tokens",
    "model",
    "http_status",
    "error",
    "source_path",
    "source_line",
]


def _group_columns() -> list[pl.Expr]:
    """The variant/model row a trajectory belongs to (see UNKNOWN_MODEL)."""
    unknown = pl.format(UNKNOWN_MODEL.replace("{run}", "{}"), pl.col("run_id"))
    return [
        pl.col("variant").fill_null("(none)"),
        pl.coalesce(pl.col("agent_model"), unknown).alias("agent_model"),
    ]


def _group_of(variant: str | None, agent_model: str | None, run_id: str) -> tuple[str, str]:
    return variant or "(none)", agent_model or UNKNOWN_MODEL.format(run=run_id)


def _by_variant(result: ScanResult) -> list[dict[str, Any]]:
    """Per variant and agent model: how many trajectories, what they scored, what was found."""
    keys = ["variant", "agent_model"]
    traj = result.trajectories.with_columns(_group_columns())
    found = result.findings.join(
        traj.select("trajectory_id", *keys), on="trajectory_id", how="left"
    ).with_columns(pl.col(k).fill_null("?") for k in keys)
    # One pass over the findings for every group (a filter per group is quadratic: without
    # a model name every run is its own group, and a scan may hold thousands of runs).
    counts = {
        (r["variant"], r["agent_model"]): (r["findings"], r["trajectories_with_findings"])
        for r in found.group_by(keys)
        .agg(
            pl.len().alias("findings"),
            pl.col("trajectory_id").n_unique().alias("trajectories_with_findings"),
        )
        .iter_rows(named=True)
    }
    by_rules: dict[tuple[str, str], dict[str, int]] = {}
    for variant, model, rule, n in (
        found.group_by([*keys, "rule"]).len().sort([*keys, "rule"]).iter_rows()
    ):
        by_rules.setdefault((variant, model), {})[rule] = n
    out = []
    for row in (
        traj.group_by(keys)
        .agg(
            pl.len().alias("trajectories"),
            pl.col("reward").drop_nulls().len().alias("scored"),
            pl.col("reward").mean().alias("mean_reward"),
            pl.col("user_model").drop_nulls().unique().sort().alias("user_models"),
        )
        .sort(keys)
        .iter_rows(named=True)
    ):
        group = (row["variant"], row["agent_model"])
        findings, with_findings = counts.get(group, (0, 0))
        out.append(
            {
                **row,
                "mean_reward": None if row["mean_reward"] is None else round(row["mean_reward"], 4),
                "findings": findings,
                "trajectories_with_findings": with_findings,
                "findings_by_rule": by_rules.get(group, {}),
            }
        )
    return out


def _runs(result: ScanResult) -> list[dict[str, Any]]:
    """One row per run (one experiment), in the order they started, for comparing them."""
    runs = runs_frame(result).sort("started", "run_id", nulls_last=True)
    return [
        {
            **{k: row[k] for k in ("run_id", "domain", "started", "agent_model", "user_model")},
            **{k: row[k] for k in ("variant", "trajectories", "findings", "sources")},
            "trajectories_with_findings": row["trajectories_with_findings"],
            "mean_reward": None if row["mean_reward"] is None else round(row["mean_reward"], 4),
        }
        for row in runs.iter_rows(named=True)
    ]


def _fix_plan(causes: list[Cause]) -> list[dict[str, Any]]:
    """Every fix, numbered once across causes: cause 1's fixes first (upstream, most impact)."""
    plan: list[dict[str, Any]] = []
    for c in causes:
        for fix in c["fixes"]:
            plan.append(
                {
                    "n": len(plan) + 1,
                    "cause_rank": c["rank"],
                    "cause_id": c["id"],
                    "cause_title": c["title"],
                    "rank_in_cause": fix["rank"],
                    "action": fix["action"],
                    "detail": fix["detail"],
                }
            )
    return plan


def _parameters(causes: list[Cause], parsers: list[ParserCheck]) -> list[dict[str, Any]]:
    """The numbers and names the fixes use, each with the cause it came from."""
    rows = []
    for c in causes:
        facts = c["parameters"]
        for key, label, fmt in PARAMETERS:
            value = facts.get(key)
            if value is None or value == "" or (key == "cap" and not isinstance(value, int)):
                continue
            rows.append(
                {"key": key, "label": label, "value": fmt.format(value), "cause_rank": c["rank"]}
            )
    # The tool-call parser the server ran with, as diagnosis judged it.
    for check in parsers:
        rows.append(
            {
                "key": "tool_call_parser",
                "label": "tool-call parser the server ran with",
                "value": f"--tool-call-parser {check.parser} ({check.verdict})",
                "cause_rank": None,
            }
        )
    return rows


def _checks(
    causes: list[Cause],
    rule_counts: Counter[str],
    not_checked: list[dict[str, Any]],
    checked_files: int,
) -> list[dict[str, Any]]:
    """What the next scan must show: each rule a fix should silence, its count now, target 0;
    with the files it could not run on, of the files whose turns the rules read."""
    unchecked: dict[str, list[str]] = {}
    files: Counter[str] = Counter()
    for n in not_checked:
        unchecked.setdefault(n["rule"], []).extend(n["missing"])
        files[n["rule"]] += 1
    checks, seen = [], set()
    for c in causes:
        for rule in c["rules_to_zero"]:
            if rule in seen:
                continue
            seen.add(rule)
            checks.append(
                {
                    "rule": rule,
                    "cause_rank": c["rank"],
                    "now": rule_counts.get(rule, 0),
                    "target": 0,
                    # A rule that could not run on some input proves nothing there by reading 0.
                    "not_checked_for_lack_of": sorted(set(unchecked.get(rule, []))),
                    # the files it could not run on, of every file with turns: all, or some
                    "not_checked_files": files[rule],
                    "of_files": checked_files,
                }
            )
    return checks


def _clip(text: str | None, limit: int) -> dict[str, Any]:
    """Head and tail of a long text: a cut-off turn shows how it began and where it stopped."""
    if not text:
        return {}
    if len(text) <= limit:
        return {"t": text}
    head = limit * 3 // 5
    return {"t": text[:head], "t2": text[len(text) - (limit - head) :], "n": len(text)}


def _turn_limits(n_turns: int, n_flagged: int) -> tuple[int, int]:
    """Chars of text kept per turn, and per turn with findings, within DATA_BUDGET_CHARS."""
    flagged = min(FLAGGED_TURN_CHARS, DATA_BUDGET_CHARS // 2 // max(1, n_flagged))
    flagged = max(MIN_TURN_CHARS, flagged)
    rest = max(0, DATA_BUDGET_CHARS - flagged * n_flagged) // max(1, n_turns - n_flagged)
    plain = max(MIN_TURN_CHARS, min(TURN_CHARS, rest))
    return plain, max(plain, flagged)


def report_order(trajectory_ids: list[str], findings: dict[str, int]) -> list[str]:
    """The trajectories in the order the report lists them: most findings first, then by id.
    The report names each by its place, T1 the first (`forensics show T1` takes it)."""
    return sorted(trajectory_ids, key=lambda tid: (-findings.get(tid, 0), tid))


def explorer(result: ScanResult, model: Report) -> dict[str, Any]:
    """Everything the explorer shows, compact: one entry per trajectory, turns inside.

    Trajectories come most findings first; `k` (1-based position) is the handle the page's
    links use (#traj-K, #turn-K-I).
    """
    rules = [
        {"id": r["id"], "title": r["title"], "severity": r["severity"]} for r in model["rules"]
    ]
    rule_ix = {r["id"]: i for i, r in enumerate(rules)}
    for rid in sorted(set(result.findings["rule"].to_list()) - set(rule_ix)):
        rule_ix[rid] = len(rules)
        rules.append({"id": rid, "title": rid, "severity": "info"})
    causes = [{"id": c["id"], "rank": c["rank"], "title": c["title"]} for c in model["causes"]]
    cause_of: dict[str, list[int]] = {}
    for i, c in enumerate(model["causes"]):
        for tid in c["trajectory_ids"]:
            cause_of.setdefault(tid, []).append(i)
    variants = [
        {"variant": v["variant"], "agent_model": v["agent_model"]}
        for v in model["summary"]["by_variant"]
    ]
    variant_ix = {(v["variant"], v["agent_model"]): i for i, v in enumerate(variants)}

    marks: dict[tuple[str, int], list[list[Any]]] = {}
    # Findings of the episode as a whole (no turn): a trajectory of 0 turns may have only these.
    episode_marks: dict[str, list[list[Any]]] = {}
    counts: dict[str, int] = {}
    per_rule: dict[str, Counter[int]] = {}
    for tid, idx, rule, message in result.findings.select(
        "trajectory_id", "turn_index", "rule", "message"
    ).iter_rows():
        mark = [rule_ix[rule], message]
        if idx is None:
            episode_marks.setdefault(tid, []).append(mark)
        else:
            marks.setdefault((tid, idx), []).append(mark)
        counts[tid] = counts.get(tid, 0) + 1
        per_rule.setdefault(tid, Counter())[rule_ix[rule]] += 1

    paths: dict[str, int] = {}
    strings: dict[str, int] = {}
    # (role, actor) pairs, each turn naming its pair by index: a large scan has hundreds of
    # thousands of turns and a handful of pairs.
    role_actor: dict[tuple[str | None, str | None], int] = {}

    def path_ix(p: str | None) -> int | None:
        if p is None:
            return None
        return paths.setdefault(p, len(paths))

    limit, flagged_limit = _turn_limits(result.turns.height, len(marks))
    arg_limit = min(ARG_CHARS, 4 * limit)
    turns = result.turns.sort(["trajectory_id", "turn_index"])
    by_traj: dict[str, list[dict[str, Any]]] = {}
    for u in turns.select("trajectory_id", *TURN_VIEW).iter_rows(named=True):
        f = marks.get((u["trajectory_id"], u["turn_index"]), [])
        row: dict[str, Any] = {
            "i": u["turn_index"],
            "a": role_actor.setdefault((u["role"], u["actor"]), len(role_actor)),
            "p": path_ix(u["source_path"]),
            "l": u["source_line"],
        }
        if u["role"] == "system" and u["content"]:
            row["s"] = strings.setdefault(u["content"][:SYSTEM_CHARS], len(strings))
            row["sn"] = len(u["content"])
        else:
            if text := _clip(u["content"], flagged_limit if f else limit):
                row["c"] = text
            if r := _clip(u["reasoning"], flagged_limit if f else limit):
                row["r"] = r
        if u["tool_calls"]:
            row["tc"] = [
                [call["name"], (call["arguments"] or "")[: ARG_CHARS if f else arg_limit]]
                for call in u["tool_calls"]
            ]
        if u["finish_reason"] or u["finish_reason_raw"]:
            row["fr"] = u["finish_reason"]
            if u["finish_reason_raw"] and u["finish_reason_raw"] != u["finish_reason"]:
                row["frr"] = u["finish_reason_raw"]
        tokens = [u[k] for k in ("input_tokens", "output_tokens", "reasoning_tokens")]
        if any(t is not None for t in tokens):
            row["tk"] = tokens
        if u["max_output_tokens"] is not None:
            row["cap"] = u["max_output_tokens"]
        if u["model"]:
            row["m"] = u["model"]
        if u["http_status"] is not None:
            row["hs"] = u["http_status"]
        if u["error"]:
            row["e"] = u["error"][:ARG_CHARS]
        if f:
            row["f"] = f
        by_traj.setdefault(u["trajectory_id"], []).append(row)

    place = {
        tid: k
        for k, tid in enumerate(
            report_order(result.trajectories["trajectory_id"].to_list(), counts)
        )
    }
    trajs = result.trajectories.with_columns(
        pl.col("trajectory_id").replace_strict(place, return_dtype=pl.Int64).alias("_k")
    ).sort("_k")
    out = []
    for k, t in enumerate(trajs.iter_rows(named=True), 1):
        tid = t["trajectory_id"]
        where = path_ix(t["source_path"])
        for row in by_traj.get(tid, []):  # a turn's file and line, when not the episode's
            if row["p"] == where:
                del row["p"]
            if row["l"] == t["source_line"]:
                del row["l"]
        out.append(
            {
                "k": k,
                "id": tid,
                "run": t["run_id"],
                "task": t["task_id"],
                "trial": t["trial"],
                "variant": t["variant"],
                "am": t["agent_model"],
                "um": t["user_model"],
                "reward": t["reward"],
                "term": t["termination_reason"],
                "err": (t["error"] or "")[:ARG_CHARS] or None,
                "p": where,
                "l": t["source_line"],
                "nf": counts.get(tid, 0),
                "rules": sorted(per_rule.get(tid, ())),
                # findings per rule, in the order of `rules`: turn and episode findings alike
                "rc": [n for _, n in sorted(per_rule.get(tid, Counter()).items())],
                "causes": cause_of.get(tid, []),
                "vi": variant_ix.get(_group_of(t["variant"], t["agent_model"], t["run_id"])),
                "turns": by_traj.get(tid, []),
            }
            | ({"ef": episode_marks[tid]} if tid in episode_marks else {})
        )
    return {
        "rules": rules,
        "causes": causes,
        "variants": variants,
        "paths": list(paths),
        "strings": list(strings),
        "ra": [list(pair) for pair in role_actor],
        "turn_chars": limit,
        "trajectories": out,
    }


# A turn "ends at the cap" within ±15 % of it (chars only approximate tokens).
WALL_BAND = 0.15


def _output_lengths(result: ScanResult) -> dict[str, Any] | None:
    """Model-written turns per actor and model, sorted by length, against the output cap.

    Sorted ascending, a fixed cap shows as a flat plateau where the longest turns all stop at
    the same length: the wall. Without token counts the length is content + reasoning chars,
    and the cap is drawn at ~4 chars per token.
    """
    turns = result.turns.filter((pl.col("role") == "assistant") | (pl.col("actor") == "user_sim"))
    if turns.is_empty():
        return None
    by_tokens = turns["output_tokens"].drop_nulls().len() > 0
    cut_rules = {r.id for r in result.rules if r.cause == TRUNCATION_CAUSE}
    cut_keys = set(
        result.findings.filter(pl.col("rule").is_in(list(cut_rules)))
        .select(pl.col("trajectory_id") + "#" + pl.col("turn_index").cast(pl.String))
        .to_series()
        .to_list()
    )
    # Without counts, what the model wrote: content, separate reasoning and tool-call arguments.
    args = pl.col("tool_calls").list.eval(pl.element().struct.field("arguments").str.len_chars())
    length = (
        pl.col("output_tokens")
        if by_tokens
        else pl.col("content_chars").fill_null(0)
        + pl.col("reasoning").str.len_chars().fill_null(0)
        + args.list.sum().fill_null(0)
    )
    scale = 1.0 if by_tokens else CHARS_PER_TOKEN
    data = turns.select(
        pl.col("actor").fill_null("?"),
        pl.col("model").fill_null("model unknown"),
        length.alias("length"),
        (pl.col("max_output_tokens") * scale).alias("cap_y"),
        pl.col("max_output_tokens").alias("cap"),
        pl.col("turn_key").is_in(list(cut_keys)).alias("cut"),
    ).drop_nulls("length")
    if data.is_empty():
        return None
    groups = [
        (str(actor), str(model), g.sort(["length", "cut", "cap_y"], nulls_last=True))
        for (actor, model), g in data.group_by(["actor", "model"])
    ]
    groups.sort(key=lambda x: (-int(x[2]["cut"].sum()), -x[2].height, x[0], x[1]))
    return {
        "by_tokens": by_tokens,
        "groups": [_length_group(actor, model, g) for actor, model, g in groups],
    }


def _length_group(actor: str, model: str, g: pl.DataFrame) -> dict[str, Any]:
    """One panel's turns and what its caption says of them (how many end at their cap)."""
    near = sum(
        1
        for v, c in g.select("length", "cap_y").iter_rows()
        if c and (v >= c or abs(v - c) <= WALL_BAND * c)
    )
    # Numbers, never None: a group has turns, and turns without a length were dropped.
    longest = cast(float, g["length"].max())
    caps_y = g["cap_y"].drop_nulls()
    return {
        "actor": actor,
        "model": model,
        "turns": g.select(LENGTH_COLUMNS).rows(),
        "caps": g["cap"].drop_nulls().unique().sort().to_list(),
        "near_cap": near,
        "cut": int(g["cut"].sum()),
        "longest": longest,
        "well_under_cap": bool(
            caps_y.len() and longest < (1 - WALL_BAND) * cast(float, caps_y.min())
        ),
    }


def build(result: ScanResult, *, page: bool = False, turn_text: bool = False) -> Report:
    """The report model of a scan. page: also what only the HTML page shows (the explorer's
    turns and the output-length chart), under "page", which the JSON output leaves out.
    turn_text: the opening and length of the turn of every finding, not only of the causes'
    evidence (the report quotes those), under "turn_text"."""
    findings = FindingRows(result.findings)
    evidence = {i for c in result.diagnosis.causes for i in c.evidence}
    wanted = result.findings.filter(pl.col("finding_id").is_in(sorted(evidence)))
    by_id = {f["id"]: f for f in FindingRows(result.findings if turn_text else wanted)}
    quoted = set(by_id)
    keys = sorted({f"{by_id[i]['trajectory_id']}#{by_id[i]['turn_index']}" for i in quoted})
    contents = {
        (r["trajectory_id"], r["turn_index"]): r["content"]
        for r in result.turns_of(keys)
        .select("trajectory_id", "turn_index", "content")
        .iter_rows(named=True)
    }
    # In the findings' order, so the same scan writes the same bytes.
    texts = {
        i: _turn_text(f, contents.get((f["trajectory_id"], f["turn_index"])))
        for i, f in by_id.items()
    }
    rule_titles = {r.id: r.title for r in result.rules}
    total = result.trajectories.height
    lost_total = round(
        sum(1.0 - r for r in result.trajectories["reward"].drop_nulls().to_list()), 3
    )
    rejects = [
        {
            "path": r["source_path"],
            "line": r["source_line"],
            "reason": r["reason"],
            "excerpt": r["excerpt"],
        }
        for r in result.rejects.sort(["source_path", "source_line"], nulls_last=False).iter_rows(
            named=True
        )
    ]
    causes: list[Cause] = []
    for c in result.diagnosis.causes:
        causes.append(
            {
                "rank": c.rank,
                "id": c.id,
                "title": c.title,
                "rules": c.rules,
                "trajectories": c.trajectories,
                "findings": c.turns,
                "incidents": c.incidents,
                "incident_rules": c.incident_rules,
                "reward_lost": c.reward_lost,
                "severity": c.severity,
                "confidence": c.confidence,
                "why_ranked": c.why_ranked,
                "explains": c.explains,
                # diagnosis fills each fix with the keys of types.Fix
                "fixes": cast(list[Fix], c.fixes),
                "evidence": [i for i in c.evidence if i in by_id],
                "share": round(c.trajectories / total, 4) if total else 0.0,
                "reward_lost_share": round(c.reward_lost / lost_total, 4) if lost_total else None,
                "trajectory_ids": c.trajectory_ids,
                "validate": c.validate,
                "rules_to_zero": c.rules_to_zero,
                "explains_detail": [
                    {**e, "title": rule_titles.get(e["rule"], e["rule"])} for e in c.explains
                ],
                "parameters": dict(sorted(c.facts.items())),
            }
        )
    rule_counts = Counter(result.findings["rule"].to_list())
    trajectories = result.trajectories
    rewards = trajectories["reward"].drop_nulls()
    by_variant = (
        trajectories.filter(pl.col("reward").is_not_null())
        .group_by(_group_columns())
        .agg(pl.col("reward").mean().alias("mean_reward"), pl.len().alias("trajectories"))
        .sort(["variant", "agent_model"])
    )
    # An empty directory named as an input is listed with the files (and gated) but is no file.
    read = [f for f in result.files if f.reason != EMPTY_DIRECTORY]
    formats = Counter(f.format or "rejected" for f in read)
    checked_files = result.turn_paths()
    not_checked = [
        {"path": path, "rule": rule, "missing": missing}
        for path, rules in sorted(result.not_checked.items())
        for rule, missing in sorted(rules.items())
    ]
    grouped = coverage.groups(
        not_checked, {f.path: f.format for f in result.files}, checked=checked_files
    )
    primary = None
    if causes:
        first = causes[0]
        primary = {
            key: first[key]
            for key in ("rank", "id", "title", "trajectories", "findings", "reward_lost")
        } | {
            "of_trajectories": total,
            "share": first["share"],
            "reward_lost_share": first["reward_lost_share"],
        }
    model: Report = {
        "schema_version": SCHEMA_VERSION,
        "config": result.config,
        "summary": {
            "files": len(read),
            "skipped": len(result.skipped),
            "files_by_format": dict(sorted(formats.items())),
            "trajectories": trajectories.height,
            "turns": result.turn_count,
            "findings": len(findings),
            "incidents": sum(c.incidents for c in result.diagnosis.causes),
            "rejects": len(rejects),
            # a mean of floats, None only when there are none
            "mean_reward": round(cast(float, rewards.mean()), 4) if rewards.len() else None,
            "findings_by_rule": dict(sorted(rule_counts.items())),
            "reward_by_variant": by_variant.to_dicts(),
            "reward_lost": lost_total,
            "scored": rewards.len(),
            "trajectories_with_findings": result.findings["trajectory_id"].n_unique(),
            "by_variant": _by_variant(result),
            "runs": _runs(result),
            "disagreements": result.trajectories.filter(pl.col("disagreements").is_not_null())
            .select("trajectory_id", "disagreements")
            .sort("trajectory_id")
            .to_dicts(),
        },
        "primary": primary,
        "verdict": result.diagnosis.verdict,
        "score_split": _score_split(result),
        "causes": causes,
        "keep": result.diagnosis.keep,
        "validation": result.diagnosis.validation,
        "fix_plan": _fix_plan(causes),
        "parameters": _parameters(causes, result.diagnosis.parsers),
        "validation_checks": _checks(causes, rule_counts, not_checked, len(checked_files)),
        "findings": findings,
        "trajectories": _trajectory_rows(result),
        "rejects": rejects,
        "files": [
            {
                "path": f.path,
                "format": f.format,
                "detected_because": f.reason,
                "records": f.records,
                "note": f.note,
            }
            for f in result.files
        ],
        "skipped": [{"path": p, "reason": r} for p, r in result.skipped],
        "not_checked": not_checked,
        "not_checked_groups": grouped,
        "coverage": cast(Coverage, coverage.summary(grouped, len(checked_files))),
        "rules": [
            {
                "id": r.id,
                "title": r.title,
                "severity": r.severity,
                "confidence": r.confidence,
                "summary": r.summary,
                "cause": r.cause,
                "docs": r.docs,
            }
            for r in result.rules
        ],
        "turn_text": texts,
    }
    if page:
        model["page"] = {
            "explorer": explorer(result, model),
            "output_lengths": _output_lengths(result),
        }
    return model


def _score_split(result: ScanResult) -> ScoreSplit | None:
    """Is this score about the model: diagnosis's split, as plain data."""
    split = result.diagnosis.score
    if split is None:
        return None
    classes = Counter(split.episode_class.values())
    return {
        "text": split.text,
        "scored": split.scored,
        "penalised": split.penalised,
        "reward_lost": split.reward_lost,
        "plumbing_share": split.plumbing_share,
        "mean_reward": split.mean_reward,
        "mean_reward_without_infra": split.mean_reward_without_infra,
        "scored_without_infra": split.scored_without_infra,
        "unscored_infra": split.unscored_infra,
        "groups": [
            {
                "class": g.score_class,
                "label": GROUP_WORDS[g.score_class],
                "episodes": g.episodes,
                "reward_lost": g.reward_lost,
                "share": g.share,
                "causes": g.causes,
            }
            for g in split.groups
        ],
        "episodes": {k: n for k in SCORE_GROUPS if (n := classes[k])},
    }


def _trajectory_rows(result: ScanResult) -> list[Trajectory]:
    """Per episode, what `forensics diff` and the JUnit output need: run, task, reward, source."""
    cols = ["trajectory_id", "run_id", "task_id", "trial", "reward", "termination_reason"]
    cols += ["variant", "agent_model", "turn_count", "source_path", "source_line", "fault_class"]
    order = ["source_path", "source_line", "trajectory_id"]
    rows = trajectories_frame(result).select(cols).sort(order, nulls_last=True)
    # The keys of types.Trajectory, in the order of `cols`: the frame's columns make the shape.
    return [
        cast(
            Trajectory,
            {k: v for k, v in r.items() if not k.startswith("source_")}
            | {"source": {"path": r["source_path"], "line": r["source_line"]}},
        )
        for r in rows.iter_rows(named=True)
    ]
