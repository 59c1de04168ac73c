"""Episode-level rules through diagnosis: which cause claims them, what the fix says, and
which side of the score split ("is this score about the model?") their episodes land on."""

from __future__ import annotations

from typing import Any

import polars as pl

from forensics.check import engine
from forensics.diagnosis import diagnose

from episodes import tables

PACK = engine.default_rules_dir()


def _scan(
    episodes: dict[str, list[dict[str, Any]]], **columns: dict[str, Any]
) -> tuple[pl.DataFrame, diagnose.Diagnosis]:
    """Findings and diagnosis of literal episodes; columns: trajectory column -> {id: value}."""
    turns, trajectories = tables(episodes)
    for name, values in columns.items():
        expr = pl.col("trajectory_id").replace_strict(values, default=None)
        trajectories = trajectories.with_columns(expr.cast(trajectories[name].dtype).alias(name))
    rules = engine.load_rules()
    found = engine.check(turns, trajectories, rules).findings
    return found, diagnose.diagnose(found, turns, trajectories, rules, PACK)


CALL = {"id": "c", "name": "update_reservation_passengers", "arguments": '{"n": 1}'}


def _tool_loop(result: str, times: int = 3) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [{"role": "user", "content": "Update my passengers please."}]
    for _ in range(times):
        turns += [
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "content": result},
        ]
    return turns


def test_tool_errors_from_the_harness_make_a_too_many_errors_episode_plumbing():
    found, d = _scan(
        {
            "bug": _tool_loop("Error: 'NoneType' object is not subscriptable"),
            "model": _tool_loop("Error: Number of passengers does not match"),
        },
        termination_reason={"bug": "too_many_errors", "model": "too_many_errors"},
    )
    assert {(r, t) for r, t in found.select("rule", "trajectory_id").iter_rows()} >= {
        ("harness-tool-exception", "bug"),
        ("run-exit-model", "bug"),
        ("run-exit-model", "model"),
    }
    by_id = {c.id: c for c in d.causes}
    assert by_id["harness-tool-exception"].trajectory_ids == ["bug"]
    assert {"rule": "run-exit-model", "findings": 1, "trajectories": 1} in (
        by_id["harness-tool-exception"].explains
    )
    assert by_id["model-exit"].trajectory_ids == ["model"]
    assert d.score.episode_class == {"bug": "infra", "model": "model"}
    fix = by_id["harness-tool-exception"].fixes[0]["detail"]
    assert fix.startswith("3 tool results in 1 trajectory were the environment's own exceptions")


def test_a_lowered_step_limit_is_plumbing_and_names_the_default():
    turns = [
        {"role": "user", "content": "Change my flight."},
        {"role": "assistant", "content": "Sure."},
    ]
    found, d = _scan(
        {"cut": turns, "default": turns},
        termination_reason={"cut": "max_steps", "default": "max_steps"},
        source_format={"cut": "tau2_results", "default": "tau2_results"},
        labels={
            "cut": [{"key": "max_steps", "value": "30"}],
            "default": [{"key": "max_steps", "value": "200"}],
        },
    )
    assert found.filter(pl.col("rule") == "step-limit")["trajectory_id"].to_list() == ["cut"]
    cause = next(c for c in d.causes if c.id == "step-limit")
    assert cause.fixes[0]["action"] == "Restore the default step limit (200 instead of 30)"
    assert d.score.episode_class == {"cut": "infra", "default": "unexplained"}


def test_exit_statuses_split_into_plumbing_and_model():
    turns = [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "On it."},
    ]
    found, d = _scan(
        {"cost": turns, "format": turns, "ok": turns},
        termination_reason={
            "cost": "submitted (exit_cost)",
            "format": "exit_format",
            "ok": "submitted",
        },
    )
    rules = dict(found.select("trajectory_id", "rule").iter_rows())
    assert rules == {"cost": "run-exit-infra", "format": "run-exit-model"}
    assert d.score.episode_class == {"cost": "infra", "format": "model", "ok": "unexplained"}
    infra = next(c for c in d.causes if c.id == "run-exit-infra")
    assert infra.fixes[0]["action"] == "Fix what the exit statuses name: the cost budget"


def test_a_loop_that_filled_the_cap_is_the_model_not_the_cap():
    looped = {
        "role": "assistant",
        "actor": "agent",
        "content": "The log says: " + "undefined reference to foo_init " * 80,
        "finish_reason": "max_tokens",
        "finish_reason_raw": "length",
        "output_tokens": 512,
        "max_output_tokens": 512,
    }
    cut = {
        **looped,
        "content": "<think>\nThe build fails in the linker step because libfoo is missing, so",
    }
    user = {"role": "user", "actor": "user_sim", "content": "Why does my build fail?"}
    found, d = _scan({"loop": [user, looped], "cut": [user, cut]})
    rules = sorted(found.select("trajectory_id", "rule").unique().iter_rows())
    assert ("loop", "repetition-to-cap") in rules and ("cut", "max-tokens") in rules
    by_id = {c.id: c for c in d.causes}
    assert by_id["repetition-to-cap"].trajectory_ids == ["loop"]
    assert by_id["thinking-budget-exhausted"].trajectory_ids == ["cut"]
    assert d.score.episode_class == {"cut": "infra", "loop": "model"}
