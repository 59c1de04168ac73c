"""One episode, one trajectory: the same episode read from several artifacts becomes one.

A run leaves the same episode in several places: tau-bench prints every message to the console
and writes the results checkpoint (sometimes twice, once cut mid-write); a logging proxy
records every API call behind it. Counted once per artifact, every episode would be counted
two or three times and every finding repeated. Each artifact also knows things the others do
not: the results file the reward and how the episode ended, the console log the run's models
and variant, the capture each call's finish reason, token counts, `max_tokens` and HTTP status.

Matching works on content, never on file names. Every agent and user-simulator turn gets a
fingerprint of what it said (text and tool calls, whitespace trimmed; the role is left out
because a user simulator's own calls see the conversation with the roles swapped):

- Episode artifacts (those that know the task) match when they come from different files, have
  the same task (and trial, where both say), and share at least 80% of their fingerprints:
  one-to-one between any two files, so identical trials stay apart.
- A capture's conversation (no task id) joins the episode whose turns it shares most, at least
  half of its fingerprints, ties going to the episode with fewer captures so far.

The fused episode keeps the turns (and source lines) of its most readable artifact: console log,
then tau2 simulation, then results file. Each turn takes the call columns it lacks (finish
reason, tokens, caps, status, ...) from the capture turn that produced the same text, and names
it in `fused_from`. The episode's reward, termination and error come from results files first;
models, variant and labels from whichever artifact has them. `sources` lists every artifact
that contributed; two different rewards are kept in `disagreements`, not settled silently.

Cost: one hash per turn and one join over fingerprints shared by at most a handful of
trajectories (a fingerprint seen in more, such as "###STOP###", tells nothing and is dropped),
so linear in the turns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import polars as pl
import pyarrow as pa

# Columns that say what a turn is and where it was read; everything else in a turn is about
# the call that produced it, and may be filled from another artifact of the same episode.
_IDENTITY = {
    "source_path",
    "source_line",
    "source_format",
    "run_id",
    "trajectory_id",
    "task_id",
    "trial",
    "turn_index",
    "role",
    "actor",
    "content",
    "tool_calls",
    "fused_from",
}
# Whose turns a fused episode keeps (lower first): what a person reads and can open.
_TURN_RANK = {"tau_bench_log": 0, "tau2_simulation": 1, "tau2": 2, "tau_bench_results": 3}
# Whose outcome (reward, termination, error) wins: the file the benchmark scored into.
_OUTCOME_RANK = {"tau_bench_results": 0, "tau2": 0, "tau2_simulation": 1, "tau_bench_log": 2}
_COMMON = 16  # a fingerprint in more trajectories than this identifies none of them
_EPISODE_SHARE = 0.8
_CAPTURE_SHARE = 0.5


@dataclass
class Fused:
    turns: pa.Table
    trajectories: pa.Table
    # source_path of an artifact whose episodes were counted under another -> those others
    merged_into: dict[str, set[str]] = field(default_factory=dict)


def fuse(turns: pa.Table, trajectories: pa.Table) -> Fused:
    """The tables with each episode once (see the module doc)."""
    # from_arrow gives a Series only for an Array: a Table is a DataFrame.
    trajs = cast(pl.DataFrame, pl.from_arrow(trajectories))
    episodes = trajs.filter(pl.col("task_id").is_not_null())
    if trajs["source_path"].n_unique() < 2 or episodes.is_empty():
        return Fused(turns, _with_sources(trajectories))  # nothing two files could share
    members = groups(*signature(cast(pl.DataFrame, pl.from_arrow(turns)), trajs))
    if not members:
        return Fused(turns, _with_sources(trajectories))
    return _merge(turns, trajectories, trajs, members)


def plan(trajectories: pa.Table, fingerprints: Callable[[], pl.DataFrame]) -> dict[str, list[str]]:
    """The episodes to fuse (see groups) when the turns are not at hand: `fingerprints` gives
    the scan's (trajectory_id, fp) pairs, asked only when two files could share an episode."""
    trajs = cast(pl.DataFrame, pl.from_arrow(trajectories))
    if trajs["source_path"].n_unique() < 2 or trajs["task_id"].is_null().all():
        return {}
    return groups(fingerprints(), trajs.select(_INFO))


def pairs_of(turns: pl.DataFrame) -> pl.DataFrame:
    """(trajectory_id, fp) of some whole episodes' turns: plan's input, a slice at a time."""
    return _fingerprints(turns).select("trajectory_id", "fp").unique(maintain_order=True)


def merge(turns: pa.Table, trajectories: pa.Table, members: dict[str, list[str]]) -> Fused:
    """Fuse `members` (plan): turns holds (at least) every turn of their trajectories."""
    trajs = cast(pl.DataFrame, pl.from_arrow(trajectories))
    return _merge(turns, trajectories, trajs, members)


def with_sources(trajectories: pa.Table) -> pa.Table:
    """The trajectories as read, each its own only source (nothing fused)."""
    return _with_sources(trajectories)


def unfused(turns: pa.Table, trajectories: pa.Table) -> Fused:
    """The tables as read, each trajectory its own only source (fusion switched off)."""
    return Fused(turns, _with_sources(trajectories))


def _with_sources(trajectories: pa.Table) -> pa.Table:
    """sources = the trajectory's own file, where fusion found nothing to add."""
    i = trajectories.schema.get_field_index("sources")
    column = pa.array(
        [[p] if p is not None else [] for p in trajectories.column("source_path").to_pylist()],
        trajectories.schema.field(i).type,
    )
    return trajectories.set_column(i, trajectories.schema.field(i), column)


def _fingerprints(turns: pl.DataFrame) -> pl.DataFrame:
    """(trajectory_id, turn_index, fp) of each agent / user-simulator turn that says something."""
    name = pl.element().struct.field("name").fill_null("")
    arguments = pl.element().struct.field("arguments").fill_null("").str.replace_all(r"\s+", "")
    calls = pl.col("tool_calls").list.eval(name + "(" + arguments + ")").list.join(";")
    said = pl.col("content").fill_null("").str.strip_chars() + "\x1f" + calls.fill_null("")
    return (
        turns.lazy()
        .filter(pl.col("role").is_in(["assistant", "user", "model"]))
        .select("trajectory_id", "turn_index", fp=said)
        .filter(pl.col("fp") != "\x1f")
        .with_columns(pl.col("fp").hash(seed=0))
        .collect()
    )


_INFO = ("trajectory_id", "source_path", "source_format", "task_id", "trial", "turn_count")


def signature(turns: pl.DataFrame, trajs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What matching needs of a scan: (trajectory_id, fp) pairs and each trajectory's
    identity. Small next to the turns; a sharded scan's driver unites those of its shards to
    find episodes that two shards would each have counted (forensics.distributed)."""
    return pairs_of(turns), trajs.select(_INFO)


def groups(fps: pl.DataFrame, trajs: pl.DataFrame) -> dict[str, list[str]]:
    """canonical trajectory_id -> the trajectory ids fused into it (itself first)."""
    common = fps.group_by("fp").len().filter(pl.col("len") > _COMMON).select("fp")
    fps = fps.join(common, on="fp", how="anti")
    info = trajs.select(
        "trajectory_id",
        "source_path",
        "source_format",
        "task_id",
        "trial",
        "turn_count",
        order=pl.int_range(pl.len()),
    ).join(fps.group_by("trajectory_id").agg(n=pl.len()), on="trajectory_id")
    fps = fps.join(info.select("trajectory_id", "task_id"), on="trajectory_id")
    episodes = fps.filter(pl.col("task_id").is_not_null()).drop("task_id")
    captures = fps.filter(pl.col("task_id").is_null()).drop("task_id")
    if episodes.is_empty():
        return {}
    side = info.drop("turn_count")
    pairs = (
        captures.vstack(episodes)
        .join(episodes, on="fp", suffix="_b")
        .filter(pl.col("trajectory_id") != pl.col("trajectory_id_b"))
        .group_by("trajectory_id", "trajectory_id_b")
        .agg(shared=pl.len())
        .join(side, on="trajectory_id")
        .join(side, left_on="trajectory_id_b", right_on="trajectory_id", suffix="_b")
        .filter(pl.col("source_path") != pl.col("source_path_b"))
        .with_columns(
            share=pl.col("shared") / pl.min_horizontal("n", "n_b"),
            enough=pl.col("shared") >= pl.min_horizontal(pl.lit(2), "n", "n_b"),
        )
        .filter(pl.col("enough"))
        .sort("share", "order", "order_b", descending=[True, False, False])
    )
    parent: dict[str, str] = {}

    def root(t: str) -> str:
        while parent.get(t, t) != t:
            t = parent[t]
        return t

    # Episode artifacts: one-to-one between two files, strongest matches first.
    taken: set[tuple[str, str]] = set()
    same_episode = pairs.filter(
        pl.col("task_id").is_not_null()
        & (pl.col("task_id") == pl.col("task_id_b"))
        & (pl.col("trial") == pl.col("trial_b")).fill_null(True)
        & (pl.col("share") >= _EPISODE_SHARE)
        & (pl.col("order") < pl.col("order_b"))
    )
    for a, b, path_a, path_b in same_episode.select(
        "trajectory_id", "trajectory_id_b", "source_path", "source_path_b"
    ).iter_rows():
        if (a, path_b) in taken or (b, path_a) in taken:
            continue
        taken |= {(a, path_b), (b, path_a)}
        parent[root(b)] = root(a)
    # Capture conversations: each joins its best episode.
    load: dict[str, int] = {}
    best = pairs.filter(pl.col("task_id").is_null() & (pl.col("share") >= _CAPTURE_SHARE))
    chosen: dict[str, tuple[float, int, int, str]] = {}
    for capture, episode, share, order_b in best.select(
        "trajectory_id", "trajectory_id_b", "share", "order_b"
    ).iter_rows():
        if capture in chosen and chosen[capture][0] > share:
            continue
        group = root(episode)
        candidate = (share, -load.get(group, 0), -order_b, episode)
        if capture not in chosen or candidate > chosen[capture]:
            if capture in chosen:
                load[root(chosen[capture][3])] -= 1
            chosen[capture] = candidate
            load[group] = load.get(group, 0) + 1
    for capture, (_, _, _, episode) in chosen.items():
        parent[capture] = root(episode)
    if not parent:
        return {}
    groups: dict[str, list[str]] = {}
    for t in parent:
        groups.setdefault(root(t), []).append(t)
    rank = {
        tid: (_TURN_RANK.get(fmt, 4) if task is not None else 9, -count, order)
        for tid, fmt, task, count, order in info.select(
            "trajectory_id", "source_format", "task_id", "turn_count", "order"
        ).iter_rows()
    }
    fused: dict[str, list[str]] = {}
    for top, rest in groups.items():
        ids = sorted({top, *rest}, key=lambda t: rank.get(t, (10, 0, 0)))
        fused[ids[0]] = ids
    return fused


def _merge(
    turns: pa.Table, trajectories: pa.Table, trajs: pl.DataFrame, members: dict[str, list[str]]
) -> Fused:
    owner = {t: canonical for canonical, ids in members.items() for t in ids}
    absorbed = {t for t, canonical in owner.items() if t != canonical}
    merged_into: dict[str, set[str]] = {}
    by_id = {row["trajectory_id"]: row for row in trajs.iter_rows(named=True)}
    for t in absorbed:
        merged_into.setdefault(by_id[t]["source_path"], set()).add(by_id[owner[t]]["source_path"])

    turns_pl = cast(pl.DataFrame, pl.from_arrow(turns))
    filled = _fill_calls(turns_pl, trajs, owner, absorbed)
    kept_turns = filled.filter(~pl.col("trajectory_id").is_in(list(absorbed)))

    rows = []
    for row in trajs.iter_rows(named=True):
        tid = row["trajectory_id"]
        if tid in absorbed:
            continue
        ids = members.get(tid)
        rows.append(_episode_row(row, [by_id[t] for t in ids]) if ids else _alone(row))
    out_trajs = pl.DataFrame(rows, schema=trajs.schema, orient="row").to_arrow()
    return Fused(
        kept_turns.to_arrow().cast(turns.schema),
        out_trajs.cast(trajectories.schema),
        merged_into,
    )


def _alone(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "sources": [row["source_path"]]}


def _episode_row(row: dict[str, Any], group: list[dict[str, Any]]) -> dict[str, Any]:
    """The canonical row, completed from the others (see the module doc for who wins)."""
    out = dict(row)
    by_outcome = sorted(group, key=lambda r: _OUTCOME_RANK.get(r["source_format"], 3))
    for column in (
        "reward",
        "termination_reason",
        "error",
        "reward_breakdown",
        "db_match",
        "expected_actions",
    ):
        out[column] = next((r[column] for r in by_outcome if r[column] is not None), None)
    for column in ("agent_model", "user_model", "variant", "ingest_note"):
        out[column] = next((r[column] for r in group if r[column] is not None), None)
    labels: dict[str, str] = {}
    for r in group:
        for item in r["labels"] or []:
            labels.setdefault(item["key"], item["value"])
    out["labels"] = [{"key": k, "value": v} for k, v in sorted(labels.items())]
    out["sources"] = sorted({r["source_path"] for r in group})
    rewards: dict[float, str] = {}
    for r in by_outcome:
        if r["reward"] is not None:
            rewards.setdefault(r["reward"], r["source_path"])
    if len(rewards) > 1:
        out["disagreements"] = "reward: " + ", ".join(
            f"{reward:g} in {path}" for reward, path in rewards.items()
        )
    return out


def _fill_calls(
    turns: pl.DataFrame, trajs: pl.DataFrame, owner: dict[str, str], absorbed: set[str]
) -> pl.DataFrame:
    """Canonical turns with the call columns they lack taken from capture turns of the same
    episode that said the same thing (k-th occurrence to k-th occurrence)."""
    no_task = set(trajs.filter(pl.col("task_id").is_null())["trajectory_id"].to_list())
    donors = [t for t in absorbed if t in no_task]
    if not donors:
        return turns
    fps = _fingerprints(turns)
    owners = pl.DataFrame(
        {"trajectory_id": list(owner), "episode": list(owner.values())},
        schema={"trajectory_id": pl.String, "episode": pl.String},
    )
    calls = [c for c in turns.columns if c not in _IDENTITY]
    answered = pl.any_horizontal(
        pl.col(c).is_not_null()
        for c in ("finish_reason", "http_status", "output_tokens")
        if c in turns.columns
    )
    donor_turns = (
        turns.filter(pl.col("trajectory_id").is_in(donors) & answered)
        .join(fps, on=["trajectory_id", "turn_index"])
        .join(owners, on="trajectory_id")
        .sort("source_path", "source_line", "turn_index")
        .with_columns(k=pl.int_range(pl.len()).over("episode", "fp"))
        .select(
            "episode",
            "fp",
            "k",
            *calls,
            fused_from=pl.col("source_path") + pl.lit(":") + pl.col("source_line").cast(pl.String),
        )
    )
    canonical = set(owner.values())
    keyed = (
        turns.with_row_index("_row")
        .join(fps, on=["trajectory_id", "turn_index"], how="left")
        .with_columns(
            k=pl.when(pl.col("fp").is_not_null())
            .then(pl.int_range(pl.len()).over("trajectory_id", "fp"))
            .otherwise(None),
            episode=pl.when(pl.col("trajectory_id").is_in(list(canonical))).then(
                pl.col("trajectory_id")
            ),
        )
    )
    joined = keyed.join(donor_turns, on=["episode", "fp", "k"], how="left", suffix="_donor").sort(
        "_row"
    )
    return joined.select(
        *[
            pl.coalesce(c, f"{c}_donor").alias(c) if c in calls else pl.col(c)
            for c in turns.columns
            if c != "fused_from"
        ],
        fused_from=pl.coalesce("fused_from", "fused_from_donor")
        if "fused_from" in turns.columns
        else pl.col("fused_from_donor"),
    ).select(turns.columns)
