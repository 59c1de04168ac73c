"""Causes of the catalogue rules: fixes in priority order with their numbers from the data."""

from __future__ import annotations

import re
from typing import Any

import polars as pl
import pytest

from forensics.check import engine
from forensics.check.enrich import enrich
from forensics.diagnosis import causes, diagnose
from forensics.tools import accuracy

from conftest import DATA
from episodes import tables as episode_tables

RULES = engine.load_rules()


def _diagnose(episodes: dict[str, list[dict[str, Any]]], labels: dict[str, str] | None = None):
    turns, episodes_table = episode_tables(episodes, labels)
    found = engine.check(turns, episodes_table, RULES).findings
    return diagnose.diagnose(found, turns, episodes_table, RULES, engine.default_rules_dir())


def _cause(diagnosis, cause_id):
    return next(c for c in diagnosis.causes if c.id == cause_id)


USER = {"role": "user", "actor": "user_sim", "content": "Where is my order #W2378156?"}
CODER_CALL = (
    "<tool_call>\n<function=get_order_details>\n<parameter=order_id>\n#W2378156\n</parameter>\n"
    "</function>\n</tool_call>"
)


def test_parser_mismatch_names_the_parser_the_counts_and_the_server_flag():
    leak = {
        "role": "assistant",
        "actor": "agent",
        "content": CODER_CALL,
        "finish_reason_raw": "stop",
        "finish_reason": "stop",
        "tools_attached": True,
        "model": "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    }
    d = _diagnose(
        {"a": [USER, leak, USER, leak], "b": [USER, leak]}, {"server.tool_call_parser": "hermes"}
    )
    cause = _cause(d, "tool-parser-mismatch")
    fix = cause.fixes[0]
    assert fix["action"] == "Serve the model with --tool-call-parser qwen3_coder"
    assert fix["detail"].startswith("3 agent turns in 2 trajectories left qwen3_coder markup")
    assert "The server ran --tool-call-parser hermes" in fix["detail"]
    assert "(SGLang: qwen3_coder)" in fix["detail"]
    # no reasoning-side or bare-JSON fix when the data shows neither
    assert [f["action"] for f in cause.fixes] == [fix["action"]]


def test_thinking_budget_fix_uses_the_observed_tokens():
    cut = {
        "role": "assistant",
        "actor": "agent",
        "content": "",
        "finish_reason_raw": "MAX_TOKENS",
        "finish_reason": "max_tokens",
        "reasoning_tokens": 478,
        "output_tokens": 496,
        "max_output_tokens": 500,
        "model": "gemini-2.5-pro",
        "tools_attached": True,
    }
    cause = _cause(_diagnose({"a": [USER, cut]}), "thinking-budget-exhausted")
    first, second = cause.fixes
    assert first["action"] == "Raise the output-token limit to at least 4,096 tokens"
    assert "Reasoning took 478 tokens of the output in 1 turn" in first["detail"]
    assert "at most 500 output tokens" in first["detail"]
    assert "thinkingConfig.thinkingBudget around 2,048 tokens" in second["detail"]
    # the truncation and the failed episode it causes are explained, not second causes
    assert cause.explains == [
        {"rule": "max-tokens", "findings": 1, "trajectories": 1},
        {"rule": "no-action-failure", "findings": 1, "trajectories": 1},
    ]
    assert [c.id for c in _diagnose({"a": [USER, cut]}).causes] == ["thinking-budget-exhausted"]


def test_http_errors_group_by_status_with_the_matching_fixes():
    def failed(status, error):
        return {"role": "assistant", "actor": "agent", "http_status": status, "error": error}

    d = _diagnose(
        {
            "a": [USER, failed(429, "Rate limit reached"), USER, failed(429, "Rate limit reached")],
            "b": [USER, failed(503, "overloaded")],
        }
    )
    fixes = _cause(d, "http-error").fixes
    assert fixes[0]["action"] == "Fix what the failing calls say: HTTP 429 ×2, HTTP 503 ×1"
    actions = [f["action"] for f in fixes]
    assert "Rate limits: lower concurrency and back off" in actions
    assert "Server health: timeouts, memory, restarts" in actions
    assert "Credentials and model id" not in actions


def test_context_overflow_is_one_cause_and_reads_the_limit():
    overflow = {
        "role": "assistant",
        "actor": "agent",
        "http_status": 400,
        "error": "This model's maximum context length is 32768 tokens. However, you requested "
        "33412 tokens (29316 in the messages, 4096 in the completion).",
    }
    d = _diagnose({"a": [USER, overflow]})
    assert [c.id for c in d.causes] == ["context-overflow"]
    cause = d.causes[0]
    assert cause.fixes[0]["action"] == "Serve a larger context window than 32,768 tokens"


@pytest.fixture(scope="module")
def corpus_diagnosis():
    corpus = accuracy.load_corpus(DATA / "accuracy" / "corpus.jsonl.gz")
    turns = enrich(corpus.turns)
    episodes = pl.from_arrow(corpus.trajectories)
    found = engine.check(turns, episodes, RULES).findings  # type: ignore[arg-type]
    return diagnose.diagnose(found, turns, episodes, RULES, engine.default_rules_dir())  # type: ignore[arg-type]


def test_every_fix_text_is_filled_from_the_data(corpus_diagnosis):
    """Over the whole corpus every catalogue cause shows up and no fix names a missing fact."""
    ids = {c.id for c in corpus_diagnosis.causes}
    # A rule without a causes.toml entry gets a cause of its own (causes.fallback), so every
    # rule resolves; each cause has at least one fix to give.
    spec = causes.cause_specs(RULES)
    for rule in RULES:
        assert spec[rule.cause].fixes, f"{rule.id}: cause {rule.cause} has no fix"
    # Every cause that declares parameters has them computed somewhere in the corpus, but for
    # the causes of preview rules only (the corpus does not measure those yet).
    declared = {
        cid for cid, c in causes.load_causes(engine.default_rules_dir()).items() if c.params
    }
    unmeasured = {r.cause for r in RULES if r.preview} - {r.cause for r in RULES if not r.preview}
    missing = declared - ids - unmeasured - {"no-action-failure"}  # always explained here
    assert not missing, missing
    for cause in corpus_diagnosis.causes:
        assert cause.fixes, cause.id
        for fix in cause.fixes:
            text = fix["action"] + " " + fix["detail"]
            assert not re.search(r"<\w+\?>", text), f"{cause.id}: {text}"
