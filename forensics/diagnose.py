"""Findings -> root causes, ranked, with fixes whose parameters come from the data.

Causes, their fixes and what each explains are data (rules/causes.toml). This module computes
the facts the fix texts need (the observed output cap, the model family's reasoning parser,
whether agent and user simulator share an endpoint), groups findings under causes, attributes
downstream symptoms to the upstream cause that explains them, and ranks.
"""

from __future__ import annotations

import re
import statistics
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from forensics.engine import SEVERITIES, Rule

SEVERITY_WEIGHT = {s: i + 1 for i, s in enumerate(SEVERITIES)}
CONFIDENCE_WEIGHT = {"hard": 1.0, "heuristic": 0.5}

# Model family -> vLLM --reasoning-parser (failure-catalogue §2.1); first match wins.
REASONING_PARSERS: list[tuple[str, str]] = [
    (r"qwq|deepseek-r1|r1-distill", "deepseek_r1"),
    (r"deepseek-v3\.[12]", "deepseek_v3"),
    (r"qwen3", "qwen3"),
    (r"glm-?4\.[5-7]|glm-?5", "glm45"),
    (r"kimi-k2", "kimi_k2"),
    (r"gpt-oss", "openai_gptoss"),
    (r"magistral|mistral-small-4", "mistral"),
    (r"seed-oss", "seed_oss"),
    (r"minimax-m2", "minimax_m2"),
    (r"granite-3\.2", "granite"),
]
# Model family -> how to switch thinking off per request.
THINKING_SWITCHES: list[tuple[str, str]] = [
    (r"qwen3", 'extra_body={"chat_template_kwargs": {"enable_thinking": false}}'),
    (r"deepseek-v3\.[12]", 'extra_body={"chat_template_kwargs": {"thinking": false}}'),
    (r"gemini", "thinkingConfig.thinkingBudget"),
]
# Model family -> the --tool-call-parser that matches it (failure-catalogue §1.1).
TOOL_CALL_PARSERS: list[tuple[str, str]] = [
    (r"qwen3-coder|qwen3\.[56]", "qwen3_coder"),
    (r"qwen2\.5|qwen3|qwq|hermes", "hermes"),
    (r"llama-?3", "llama3_json"),
    (r"mistral|mixtral|ministral", "mistral"),
]
COMMON_CAPS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
CHARS_PER_TOKEN = 4.0  # English prose; only used when the log has no token counts


def _match(table: list[tuple[str, str]], model: str | None) -> str | None:
    if not model:
        return None
    for pattern, value in table:
        if re.search(pattern, model, re.IGNORECASE):
            return value
    return None


@dataclass
class CauseSpec:
    id: str
    title: str
    order: int
    explains: list[str]
    validate: str
    rules_to_zero: list[str]
    fixes: list[dict[str, str]]


def load_causes(rules_dir: Path) -> dict[str, CauseSpec]:
    data = tomllib.loads((rules_dir / "causes.toml").read_text(encoding="utf-8"))
    return {
        c["id"]: CauseSpec(
            id=c["id"],
            title=c["title"],
            order=c["order"],
            explains=c.get("explains", []),
            validate=c.get("validate", ""),
            rules_to_zero=c.get("rules_to_zero", []),
            fixes=c.get("fix", []),
        )
        for c in data.get("cause", [])
    }


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
    rules_to_zero: list[str] = field(default_factory=list)
    trajectory_ids: list[str] = field(default_factory=list)


@dataclass
class Diagnosis:
    causes: list[Cause]
    keep: list[str]
    validation: list[str]
    verdict: str


class _Facts(dict):
    """Fix-text parameters; a missing one renders visibly instead of raising."""

    def __missing__(self, key: str) -> str:
        return f"<{key}?>"


def _labels(trajectories: pl.DataFrame, ids: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for row in trajectories.filter(pl.col("trajectory_id").is_in(list(ids))).iter_rows(named=True):
        for label in row["labels"] or []:
            out.setdefault(label["key"], label["value"])
    return out


def _cap_facts(turns: pl.DataFrame) -> dict[str, Any]:
    """What the truncated turns say about the output cap."""
    facts: dict[str, Any] = {}
    caps = [c for c in turns["max_output_tokens"].drop_nulls().to_list()]
    outs = [o for o in turns["output_tokens"].drop_nulls().to_list()]
    chars = sorted(turns["content_chars"].drop_nulls().to_list())
    if caps:
        cap = statistics.mode(caps)
        facts["cap"] = cap
        facts["cap_text"] = f"The requests asked for max_tokens={cap}"
        if chars and not outs:
            median = statistics.median(chars)
            facts["cap_text"] += (
                f"; the cut-off turns are {chars[0]:,}–{chars[-1]:,} chars long (median "
                f"{median:,.0f} ≈ {median / CHARS_PER_TOKEN:,.0f} tokens at ~4 chars per token), "
                "consistent with hitting it"
            )
        facts["cap_text"] += "."
    elif outs:
        cap = statistics.mode(outs)
        at_cap = sum(1 for o in outs if o == cap)
        facts["cap"] = cap
        facts["cap_text"] = (
            f"{at_cap} of {len(outs)} truncated turns stopped at exactly {cap} output tokens "
            "(the observed cap)."
        )
    else:
        if chars:
            median = statistics.median(chars)
            approx = median / CHARS_PER_TOKEN
            cap = min(COMMON_CAPS, key=lambda c: abs(c - approx))
            near = abs(cap - approx) / cap <= 0.35
            spread = (chars[-1] - chars[0]) / median if median else 1
            facts["cap_text"] = (
                f"The log records no token counts; the cut-off turns are {chars[0]:,}–"
                f"{chars[-1]:,} chars long (median {median:,.0f} ≈ {approx:,.0f} tokens)"
                + (
                    f", tightly clustered as a fixed cap makes them: consistent with "
                    f"max_tokens={cap}."
                    if near and spread < 0.5
                    else "."
                )
            )
            if near and spread < 0.5:
                facts["cap"] = cap
        else:
            facts["cap_text"] = ""
    cap = facts.get("cap")
    facts["recommended_cap"] = f"{max(4096, 4 * cap):,} tokens" if cap else "4,096 tokens"
    return facts


def _facts(
    spec: CauseSpec,
    found: pl.DataFrame,
    turns: pl.DataFrame,
    trajectories: pl.DataFrame,
) -> dict[str, Any]:
    ids = set(found["trajectory_id"].to_list())
    keys = set((found["trajectory_id"] + "#" + found["turn_index"].cast(pl.String)).to_list())
    hit = turns.filter(pl.col("turn_key").is_in(list(keys)))
    labels = _labels(trajectories, ids)
    traj = trajectories.filter(pl.col("trajectory_id").is_in(list(ids)))
    agent_model = next(iter(traj["agent_model"].drop_nulls().to_list()), None)
    user_model = next(iter(traj["user_model"].drop_nulls().to_list()), None)
    actors = sorted(set(hit["actor"].drop_nulls().to_list()))
    names = {"agent": "agent", "user_sim": "user-simulator"}
    facts: dict[str, Any] = {
        "trajectories": len(ids),
        "actors_text": " and ".join(names.get(a, a) for a in actors) or "model",
        "model": agent_model or "the model",
    }
    if spec.id == "truncated-output":
        facts["truncated_turns"] = hit.height
        in_think = hit.filter(pl.col("think_open_count") > pl.col("think_close_count")).height
        facts["reasoning_truncated"] = in_think > 0
        facts["where"] = (
            "inside an open <think> block, before any answer or tool call"
            if in_think == hit.height
            else "at the output-token limit"
        )
        facts.update(_cap_facts(hit))
        facts["thinking_switch"] = (
            _match(THINKING_SWITCHES, agent_model) or "the server's per-request thinking switch"
        )
    elif spec.id == "reasoning-in-content":
        facts["leaking_turns"] = hit.height
        by_actor = hit.group_by("actor").len().sort("actor").iter_rows()
        facts["leaking_actors_text"] = ", ".join(f"{n} {names.get(a, a)}" for a, n in by_actor)
        leaking_model = next(iter(hit["model"].drop_nulls().to_list()), agent_model)
        facts["reasoning_parser"] = _match(REASONING_PARSERS, leaking_model) or "<family>"
        command = labels.get("server.command")
        if command and "server.reasoning_parser" not in labels:
            facts["server_text"] = f"The server was started without one: `{command}`. "
        else:
            facts["server_text"] = ""
        agent_ep = labels.get("agent_endpoint") or labels.get("model_provider")
        user_ep = labels.get("user_endpoint") or labels.get("user_model_provider")
        shared = bool(agent_model and agent_model == user_model and agent_ep == user_ep)
        facts["shared_text"] = f"{agent_model} at {agent_ep}" if shared else ""
        facts["user_sim_leaks_on_shared_endpoint"] = shared and "user_sim" in actors
    elif spec.id == "empty-stop-with-tools":
        facts["empty_turns"] = hit.height
        facts["models_text"] = ", ".join(sorted(set(hit["model"].drop_nulls().to_list()))) or (
            "the agent model"
        )
    elif spec.id == "degenerate-repetition":
        facts["loop_findings"] = found.height
    return facts


def _rank_key(c: Cause, order: int) -> tuple:
    impact = c.trajectories * SEVERITY_WEIGHT[c.severity] * CONFIDENCE_WEIGHT[c.confidence]
    return (-impact, -c.reward_lost, order, c.id)


def diagnose(
    findings: pl.DataFrame,
    turns: pl.DataFrame,
    trajectories: pl.DataFrame,
    rules: list[Rule],
    rules_dir: Path,
) -> Diagnosis:
    specs = load_causes(rules_dir)
    rule_by_id = {r.id: r for r in rules}
    rewards = dict(
        trajectories.select("trajectory_id", "reward").iter_rows()  # type: ignore[arg-type]
    )

    def lost(ids: set[str]) -> float:
        return round(sum(1.0 - rewards[i] for i in ids if rewards.get(i) is not None), 3)

    # Upstream causes first: each claims the downstream findings in its trajectories.
    by_cause: dict[str, pl.DataFrame] = {}
    for cid in sorted({rule_by_id[r].cause for r in findings["rule"].unique().to_list()}):
        by_cause[cid] = findings.filter(pl.col("cause") == cid)
    claimed: dict[str, list[dict[str, Any]]] = {}
    remaining = findings
    for cid in sorted(by_cause, key=lambda c: (specs[c].order if c in specs else 99, c)):
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
                remaining = remaining.join(
                    explained.select("finding_id"), on="finding_id", how="anti"
                )

    causes: list[Cause] = []
    for cid, own in by_cause.items():
        own = own.join(remaining.select("finding_id"), on="finding_id", how="semi")
        if own.is_empty():
            continue  # every finding of this cause is a symptom of an upstream one
        spec = specs.get(cid) or CauseSpec(cid, cid, 99, [], "", [], [])
        ids = set(own["trajectory_id"].to_list())
        severity = max(own["severity"].to_list(), key=SEVERITY_WEIGHT.__getitem__)
        confidence = "hard" if "hard" in own["confidence"].to_list() else "heuristic"
        facts = _Facts(_facts(spec, own, turns, trajectories))
        fixes = []
        for fix in spec.fixes:
            if fix.get("when") and not facts.get(fix["when"]):
                continue
            fixes.append(
                {
                    "rank": len(fixes) + 1,
                    "action": fix["action"].format_map(facts),
                    "detail": fix["detail"].format_map(facts),
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
        causes.append(
            Cause(
                rank=0,
                id=cid,
                title=spec.title,
                rules=sorted(own["rule"].unique().to_list()),
                trajectories=len(ids),
                turns=own.height,
                reward_lost=lost(ids),
                severity=severity,
                confidence=confidence,
                why_ranked="",
                fixes=fixes,
                evidence=evidence,
                explains=claimed.get(cid, []),
                validate=spec.validate,
                rules_to_zero=spec.rules_to_zero + [e["rule"] for e in claimed.get(cid, [])],
                trajectory_ids=sorted(ids),
            )
        )
    orders = {c.id: specs[c.id].order if c.id in specs else 99 for c in causes}
    causes.sort(key=lambda c: _rank_key(c, orders[c.id]))
    total = trajectories.height
    for i, c in enumerate(causes, 1):
        c.rank = i
        share = f"{c.trajectories} of {total} trajectories"
        c.why_ranked = (
            f"touches {share}, {c.severity} severity, {c.confidence} evidence, "
            f"reward lost {c.reward_lost:g}"
            + ("; upstream of " + ", ".join(e["rule"] for e in c.explains) if c.explains else "")
        )
    keep = _keep(turns, trajectories, findings)
    return Diagnosis(causes, keep, _validation(causes, trajectories), _verdict(causes, total))


def _keep(turns: pl.DataFrame, trajectories: pl.DataFrame, findings: pl.DataFrame) -> list[str]:
    """What works and should stay as it is: measured, not assumed."""
    keep = []
    flagged = set(findings["trajectory_id"].to_list())
    clean = trajectories.filter(~pl.col("trajectory_id").is_in(list(flagged)))
    if clean.height and flagged:
        tasks = ", ".join(str(t) for t in clean["task_id"].to_list()[:5])
        rewards = clean["reward"].drop_nulls()
        mean = f"; mean reward {rewards.mean():.2f}" if rewards.len() else ""
        noun = "trajectory" if clean.height == 1 else "trajectories"
        keep.append(
            f"{clean.height} {noun} (task {tasks}) ran without findings{mean}: "
            "the harness, tools and scoring work — keep them as the control."
        )
    for row in trajectories.unique("run_id", keep="first").sort("run_id").iter_rows(named=True):
        labels = {lab["key"]: lab["value"] for lab in row["labels"] or []}
        parser = labels.get("server.tool_call_parser")
        expected = _match(TOOL_CALL_PARSERS, row["agent_model"])
        if parser and expected == parser:
            agent = turns.filter((pl.col("run_id") == row["run_id"]) & (pl.col("actor") == "agent"))
            leaked = agent.filter(pl.col("content").str.contains("<tool_call>")).height
            if leaked == 0:
                keep.append(
                    f"--tool-call-parser {parser} matches {row['agent_model']} and no tool-call "
                    f"markup leaked into content in {row['run_id']}: keep it."
                )
    return keep


def _validation(causes: list[Cause], trajectories: pl.DataFrame) -> list[str]:
    if not causes:
        return []
    affected = trajectories.filter(pl.col("trajectory_id").is_in(causes[0].trajectory_ids))
    shortest = affected.unique("task_id").sort(["turn_count", "task_id"]).head(2)
    tasks = list(dict.fromkeys(str(t) for t in shortest["task_id"].to_list() if t is not None))
    steps = []
    if tasks:
        steps.append(
            f"Apply fix 1 of cause 1, then rerun the {len(tasks)} shortest affected tasks "
            f"(tau-bench: --task-ids {' '.join(tasks)}) before the full run."
        )
    for c in causes:
        zero = ", ".join(c.rules_to_zero)
        steps.append(f"Scan the new log: {c.validate} ({zero} must report 0 findings).")
    steps.append(
        "Check that agent turns now carry tool_calls and that the rerun tasks earn reward; "
        "if truncation is gone but still no tool calls appear, look at the tool-call parser next."
    )
    return steps


def _verdict(causes: list[Cause], total: int) -> str:
    if not causes:
        return f"No findings in {total} trajectories."
    first = causes[0]
    text = (
        f"Primary cause: {first.title.lower()} — in {first.trajectories} of {total} "
        f"trajectories ({first.turns} findings), reward lost {first.reward_lost:g}."
    )
    if len(causes) > 1:
        rest = "; ".join(f"{c.title.lower()} ({c.trajectories} trajectories)" for c in causes[1:])
        text += f" Also: {rest}."
    return text
