"""Facts of the data that fix texts name: observed caps, parsers, endpoints, counts.

Each cause's fixes in rules/causes.toml are templates with {parameters}; this module computes
them from the findings a cause groups and the turns and trajectories they point at. Model
families map to parser names and thinking switches here, as data (failure-catalogue §1, §2).

A number a rule worked out (attempts of a retry storm, the context window an error states, the
first line of an exception) comes from the finding's `details` (the rule's `data` column, see
details()), never from its message: messages are for people and may be reworded. Regular
expressions here read input text only (provider errors, model names, message content).
"""

from __future__ import annotations

import json
import re
import statistics
from typing import Any

import polars as pl

from forensics import markers

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


def match_model(table: list[tuple[str, str]], model: str | None) -> str | None:
    if not model:
        return None
    for pattern, value in table:
        if re.search(pattern, model, re.IGNORECASE):
            return value
    return None


def _labels(trajectories: pl.DataFrame, ids: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for row in trajectories.filter(pl.col("trajectory_id").is_in(list(ids))).iter_rows(named=True):
        for label in row["labels"] or []:
            out.setdefault(label["key"], label["value"])
    return out


def _cap_facts(turns: pl.DataFrame, peers: pl.DataFrame | None = None) -> dict[str, Any]:
    """What the truncated turns say about the output cap, and what length the model needs.

    `peers` are the other turns of the same actors and models: those that ended on their own
    show how long a complete answer runs (truncated ones are censored at the cap).
    """
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
    need = _completed_need(peers, cap, facts) if peers is not None else None
    recommended = max(4096, 4 * cap) if cap else 4096
    if need:
        # Twice the longest complete answer leaves room for the turns that were cut off, which
        # by construction needed more than anything seen complete.
        recommended = max(recommended, next((c for c in COMMON_CAPS if c >= 2 * need), 2 * need))
    facts["recommended_cap_tokens"] = recommended
    facts["recommended_cap"] = f"{recommended:,} tokens"
    return facts


def _completed_need(peers: pl.DataFrame, cap: int | None, facts: dict[str, Any]) -> int | None:
    """Longest complete answer among the peers, in tokens (chars / 4 when no counts exist)."""
    done = peers.filter(
        (pl.col("think_open_count") <= pl.col("think_close_count"))
        & (pl.col("finish_reason").fill_null("") != "max_tokens")
    )
    tokens = done["output_tokens"].drop_nulls()
    if tokens.len():
        lengths, unit = sorted(tokens.to_list()), "output tokens"
    else:
        chars = done["content_chars"].fill_null(0) + done["reasoning"].str.len_chars().fill_null(0)
        lengths = sorted(round(c / CHARS_PER_TOKEN) for c in chars.to_list())
        unit = "tokens (~4 chars per token)"
    if not lengths:
        facts["cap_text"] += (
            " No turn of the same actor and model finished under the cap: how long a complete "
            "answer runs is unknown, only that it is longer"
            + (f" than {cap} tokens." if cap else ".")
        )
        facts["completed_turns"] = 0
        return None
    p95 = lengths[min(len(lengths) - 1, round(0.95 * (len(lengths) - 1)))]
    facts["completed_turns"] = len(lengths)
    facts["completed_max_tokens"] = lengths[-1]
    facts["cap_text"] += (
        f" {len(lengths)} turns of the same actor and model finished on their own, using up to "
        f"{lengths[-1]:,} {unit} (95th percentile {p95:,})."
    )
    return lengths[-1]


def cause_facts(
    cause_id: str,
    found: pl.DataFrame,
    turns: pl.DataFrame,
    trajectories: pl.DataFrame,
) -> dict[str, Any]:
    """The parameters the fix texts of a cause name, computed from its findings."""
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
    if cause_id == "truncated-output":
        facts["truncated_turns"] = hit.height
        in_think = hit.filter(pl.col("think_open_count") > pl.col("think_close_count")).height
        facts["reasoning_truncated"] = in_think > 0
        facts["where"] = (
            "inside an open <think> block, before any answer or tool call"
            if in_think == hit.height
            else "at the output-token limit"
        )
        models = hit["model"].drop_nulls().unique().to_list()
        peers = turns.filter(
            pl.col("actor").is_in(actors)
            & pl.col("model").is_in(models)
            & ~pl.col("turn_key").is_in(list(keys))
        )
        facts.update(_cap_facts(hit, peers))
        facts["thinking_switch"] = (
            match_model(THINKING_SWITCHES, agent_model)
            or "the server's per-request thinking switch"
        )
    elif cause_id == "reasoning-in-content":
        facts["leaking_turns"] = hit.height
        by_actor = hit.group_by("actor").len().sort("actor").iter_rows()
        facts["leaking_actors_text"] = ", ".join(f"{n} {names.get(a, a)}" for a, n in by_actor)
        leaking_model = next(iter(hit["model"].drop_nulls().to_list()), agent_model)
        facts["reasoning_parser"] = match_model(REASONING_PARSERS, leaking_model) or "<family>"
        command = labels.get("server.command")
        if command and "server.reasoning_parser" not in labels:
            facts["server_text"] = f"The server was started without one: `{command}`. "
        else:
            facts["server_text"] = ""
        agent_ep = labels.get("agent_endpoint") or labels.get("model_provider")
        user_ep = labels.get("user_endpoint") or labels.get("user_model_provider")
        # Same model at the same (known) endpoint; two unknown endpoints prove nothing.
        shared = bool(
            agent_model and agent_model == user_model and agent_ep and agent_ep == user_ep
        )
        facts["shared_text"] = f"{agent_model} at {agent_ep}" if shared else ""
        facts["user_sim_leaks_on_shared_endpoint"] = shared and "user_sim" in actors
    elif cause_id == "empty-stop-with-tools":
        facts["empty_turns"] = hit.height
        facts["models_text"] = ", ".join(sorted(set(hit["model"].drop_nulls().to_list()))) or (
            "the agent model"
        )
    elif cause_id == "degenerate-repetition":
        facts["loop_findings"] = found.height
    elif cause_id in CATALOGUE_FACTS:
        facts.update(CATALOGUE_FACTS[cause_id](hit, found, labels, facts))
    return facts


# --- Facts of the rule-catalogue causes -----------------------------------------------------
# Each takes the turns the cause's findings point at, the findings, the run labels and the
# common facts, and returns the parameters its fix texts name (rules/causes.toml).

# Parsers whose markup only parses with the model's own tool chat template, and parsers whose
# markers are special tokens that skip_special_tokens=true strips (failure catalogue §5).
TEMPLATE_PARSERS = {"deepseek_v3", "deepseek_v31", "deepseek_v32", "llama3_json", "minimax_m2"}
SPECIAL_TOKEN_PARSERS = {"mistral", "internlm", "jamba", "step3", "kimi_k2", "openai"}


def details(found: pl.DataFrame) -> list[dict[str, Any]]:
    """The values each finding's rule handed over (its `data`, stored as JSON text).

    Fix texts read numbers from here, never from a finding's message: a reworded message must
    not silently change a fix.
    """
    if "details" not in found.columns:
        return [{} for _ in range(found.height)]
    return [json.loads(d) if d else {} for d in found["details"].to_list()]


def _counts(values: list[Any]) -> list[tuple[Any, int]]:
    """Value counts, most frequent first, ties by value: stable text for the same input."""
    tally: dict[Any, int] = {}
    for v in values:
        tally[v] = tally.get(v, 0) + 1
    return sorted(tally.items(), key=lambda kv: (-kv[1], str(kv[0])))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _models_text(hit: pl.DataFrame) -> str:
    return ", ".join(sorted(set(hit["model"].drop_nulls().to_list()))) or "the agent model"


def _tool_markup_facts(hit, found, labels, facts) -> dict[str, Any]:
    formats = _counts(hit["tool_markup_format"].drop_nulls().to_list())
    parsers = [f for f, _ in formats if f != markers.UNWRAPPED_JSON]
    parser = parsers[0] if parsers else None
    server = labels.get("server.tool_call_parser")
    shown = [f"{_plural(n, 'turn')} of {f}" for f, n in formats[:4]]
    if len(formats) > 4:
        shown.append(f"{sum(n for _, n in formats[4:])} more of {len(formats) - 4} other formats")
    return {
        "markup_turns": hit.height,
        "formats_text": (
            f"{formats[0][0]} markup" if len(formats) == 1 else "markup (" + ", ".join(shown) + ")"
        ),
        "has_parser": parser is not None,
        "parser": parser or "<format>",
        "parser_sglang": markers.SGLANG_PARSERS.get(parser or "", "no SGLang equivalent"),
        "server_text": (
            f"The server ran --tool-call-parser {server}, which does not read it. "
            if server and server != parser
            else ""
        ),
        "needs_template": parser in TEMPLATE_PARSERS,
        "special_tokens": parser in SPECIAL_TOKEN_PARSERS,
        "unwrapped": markers.UNWRAPPED_JSON in dict(formats),
        "unwrapped_turns": dict(formats).get(markers.UNWRAPPED_JSON, 0),
        "tool_code": any("```tool_code" in (c or "") for c in hit["content"].to_list()),
    }


def _budget_facts(hit, found, labels, facts) -> dict[str, Any]:
    caps = hit["max_output_tokens"].drop_nulls().to_list()
    thoughts = sorted(hit["reasoning_tokens"].drop_nulls().to_list())
    cap = statistics.mode(caps) if caps else None
    text = []
    if thoughts:
        low, high = thoughts[0], thoughts[-1]
        span = f"{low:,}" if low == high else f"{low:,}–{high:,}"
        turns = _plural(len(thoughts), "turn")
        text.append(f"Reasoning took {span} tokens of the output in {turns}")
    if cap:
        text.append(f"the requests asked for at most {cap:,} output tokens")
    budget_text = ("; ".join(text) + ".") if text else ""
    need = max([cap or 0, *thoughts])
    recommended = max(4096, 4 * need) if need else 4096
    model = next(iter(hit["model"].drop_nulls().to_list()), "") or ""
    thinking_switch = match_model(THINKING_SWITCHES, model) or "the server's per-request switch"
    if re.search("gemini", model, re.IGNORECASE):
        switch = "thinkingConfig.thinkingBudget"
        thinking_switch = "thinkingBudget: 0 where the model allows it (not 2.5 Pro)"
    elif re.search(r"gpt-5|o\d|gpt-oss", model, re.IGNORECASE):
        switch = "reasoning_effort (low), or max_completion_tokens with headroom"
    else:
        switch = "a thinking budget (vLLM thinking_token_budget, llama.cpp --reasoning-budget)"
    return {
        "exhausted_turns": hit.height,
        "budget_text": budget_text,
        "recommended_cap": f"{recommended:,} tokens",
        "thinking_budget": f"{recommended // 2:,}",
        "budget_switch": switch,
        "thinking_switch": thinking_switch,
    }


def _answer_in_reasoning_facts(hit, found, labels, facts) -> dict[str, Any]:
    model = next(iter(hit["model"].drop_nulls().to_list()), None)
    server = labels.get("server.reasoning_parser")
    parser = match_model(REASONING_PARSERS, model) or "<family>"
    return {
        "answer_turns": hit.height,
        "models_text": _models_text(hit),
        "reasoning_parser": parser,
        "server_text": (
            f"The server ran --reasoning-parser {server}. " if server and server != parser else ""
        ),
        "kimi": bool(model and re.search("kimi", model, re.IGNORECASE)),
    }


def _filter_facts(hit, found, labels, facts) -> dict[str, Any]:
    reasons = [
        raw or ("prompt blocked" if error else "filtered")
        for raw, error in zip(
            hit["finish_reason_raw"].to_list(), hit["error"].to_list(), strict=True
        )
    ]
    # Gemini/Vertex verdicts and Azure deployments have settings a user can change.
    configurable = " ".join([*hit["model"].drop_nulls().to_list(), *reasons])
    return {
        "filtered_turns": hit.height,
        "reasons_text": ", ".join(f"{r} ×{n}" for r, n in _counts(reasons)),
        "gemini_or_azure": bool(
            re.search(r"gemini|azure|SAFETY|MODEL_ARMOR|BLOCKLIST|SPII", configurable, re.I)
        ),
    }


def _malformed_facts(hit, found, labels, facts) -> dict[str, Any]:
    raw = [str(r or "").upper() for r in hit["finish_reason_raw"].to_list()]
    errors = [e or "" for e in hit["error"].to_list()]
    undeclared = sorted(
        {m.group(1) for e in errors if (m := re.search(r"undeclared function:\s*([\w.-]+)", e))}
    )
    rejected = [
        r
        if r in ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS")
        else "tool_use_failed"
        for r, e in zip(raw, errors, strict=True)
        if r in ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS")
        or re.search("tool_use_failed|failed_generation", e, re.IGNORECASE)
    ]
    truncated = hit.filter(pl.col("finish_reason") == "max_tokens").height
    return {
        "truncated_args": truncated > 0,
        "truncated_args_turns": truncated,
        "undeclared": bool(undeclared),
        "undeclared_text": ", ".join(undeclared),
        "rejected": bool(rejected),
        "rejected_turns": len(rejected),
        "reasons_text": ", ".join(f"{r} ×{n}" for r, n in _counts(rejected)),
    }


def _empty_calls_facts(hit, found, labels, facts) -> dict[str, Any]:
    server = labels.get("server.tool_call_parser")
    return {
        "empty_turns": hit.height,
        "server_text": f"The server ran --tool-call-parser {server}. "
        if server
        else "No --tool-call-parser is recorded for the server. ",
    }


def _missing_type_facts(hit, found, labels, facts) -> dict[str, Any]:
    return {
        "untyped_calls": int(hit["tool_calls_without_type"].fill_null(0).sum()),
        "untyped_turns": hit.height,
        "models_text": _models_text(hit),
    }


def _request_field_facts(hit, found, labels, facts) -> dict[str, Any]:
    keys = [
        k
        for col in ("request_private_keys", "request_foreign_keys")
        for ks in hit[col].to_list()
        for k in ks or []
    ]
    shown = [k for k, _ in _counts(keys)]
    errors = " ".join(e or "" for e in hit["error"].to_list())
    return {
        "field_turns": hit.height,
        "keys_text": (
            ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
            if shown
            else "fields the server refused (see the errors)"
        ),
        "reasoning_replayed": any("reasoning_content" in k for k in keys)
        or "reasoning_content" in errors,
    }


def _http_facts(hit, found, labels, facts) -> dict[str, Any]:
    statuses = [
        "status 0"
        if s == 0
        else ("error inside a 2xx response" if s is None or 200 <= s < 300 else f"HTTP {s}")
        for s in hit["http_status"].to_list()
    ]
    codes = set(hit["http_status"].drop_nulls().to_list())
    first = next(iter(hit.sort("source_path", "source_line")["error"].drop_nulls().to_list()), "")
    return {
        "error_turns": hit.height,
        "statuses_text": ", ".join(f"{s} ×{n}" for s, n in _counts(statuses)),
        "first_error": (first[:200] + ("…" if len(first) > 200 else "")) or "(no error text)",
        "rate_limited": 429 in codes,
        "auth_or_route": bool(codes & {401, 403, 404}),
        "server_side": bool({c for c in codes if c == 0 or c >= 500}),
    }


def _overflow_facts(hit, found, labels, facts) -> dict[str, Any]:
    # The rule reads the window off the error it reports (the turn's, else the episode's).
    limits = [d["context_limit"] for d in details(found) if d.get("context_limit") is not None]
    inputs = hit["input_tokens"].drop_nulls().to_list()
    text = ""
    if limits:
        text = f" of {max(limits):,} tokens"
    if inputs:
        text += f" (prompts up to {max(inputs):,} tokens)"
    episodes = found["turn_index"].null_count()
    parts = [_plural(found.height - episodes, "turn")] if found.height > episodes else []
    if episodes:
        parts.append(_plural(episodes, "episode") + " that left no turn")
    return {
        "overflow_text": " and ".join(parts),
        "limit_text": text,
        "limit_suffix": f" than {max(limits):,} tokens" if limits else "",
    }


def _retry_facts(hit, found, labels, facts) -> dict[str, Any]:
    attempts = [d["attempts"] for d in details(found) if d.get("attempts") is not None]
    return {"storms": found.height, "max_attempts": max(attempts) if attempts else "?"}


def _stream_facts(hit, found, labels, facts) -> dict[str, Any]:
    endpoints = sorted(set(hit["endpoint"].drop_nulls().to_list()))
    return {
        "cut_turns": hit.height,
        "endpoints_text": ", ".join(endpoints) if endpoints else "endpoint not recorded",
    }


def _announce_facts(hit, found, labels, facts) -> dict[str, Any]:
    return {"announce_turns": hit.height, "models_text": _models_text(hit)}


def _no_action_facts(hit, found, labels, facts) -> dict[str, Any]:
    return {"episodes": found["trajectory_id"].n_unique()}


def _format_facts(hit, found, labels, facts) -> dict[str, Any]:
    both = pl.col("error").fill_null("").str.contains("both text content and tool calls")
    text = pl.col("visible_chars") > 0
    shape = (
        pl.when(both | (pl.col("has_tool_calls") & text))
        .then(pl.lit("mixed"))
        .when(~pl.col("has_tool_calls") & ~text)
        .then(pl.lit("empty"))
        .when(~pl.col("has_tool_calls"))
        .then(pl.lit("solo"))
    )
    shapes = dict(_counts(hit.select(shape.alias("shape"))["shape"].drop_nulls().to_list()))
    out: dict[str, Any] = {}
    for kind, noun in (
        ("empty", "agent message"),
        ("mixed", "agent message"),
        ("solo", "text message"),
    ):
        out[f"{kind}_turns"] = _plural(shapes.get(kind, 0), noun)
        out[f"has_{kind}"] = kind in shapes
    return out


def _early_stop_facts(hit, found, labels, facts) -> dict[str, Any]:
    tokens = [
        m.group(0)
        for c in hit["content"].drop_nulls().to_list()
        if (m := re.search(r"###(?:STOP|TRANSFER|OUT-OF-SCOPE)###", c))
    ]
    models = sorted(set(hit["model"].drop_nulls().to_list()))
    return {
        "early_stops": hit.height,
        "user_model_text": ", ".join(models) if models else "user model not recorded",
        "tokens_text": ", ".join(f"{t} ×{n}" for t, n in _counts(tokens)),
    }


def _crash_facts(hit, found, labels, facts) -> dict[str, Any]:
    # The first line of each error, as the rule quotes it in its message.
    heads = [d["error_head"] for d in details(found) if d.get("error_head") is not None]
    counts = _counts(heads)
    top = counts[0][0] if counts else "see the errors"
    return {
        "crashed_text": _plural(found.height, "episode"),
        "top_error": top[:120] + ("…" if len(top) > 120 else ""),
        "errors_text": "; ".join(f"{n}× {e[:80]}" for e, n in counts[:3]),
    }


CATALOGUE_FACTS = {
    "harness-exception": _crash_facts,
    "tool-parser-mismatch": _tool_markup_facts,
    "thinking-budget-exhausted": _budget_facts,
    "answer-in-reasoning": _answer_in_reasoning_facts,
    "content-filtered": _filter_facts,
    "malformed-tool-call": _malformed_facts,
    "empty-tool-calls": _empty_calls_facts,
    "tool-call-missing-type": _missing_type_facts,
    "internal-fields-in-request": _request_field_facts,
    "http-error": _http_facts,
    "context-overflow": _overflow_facts,
    "retry-storm": _retry_facts,
    "stream-cut-off": _stream_facts,
    "announced-action-without-call": _announce_facts,
    "no-action-failure": _no_action_facts,
    "message-format-violation": _format_facts,
    "user-sim-early-stop": _early_stop_facts,
}


# --- Turn-level causes of rule catalogue v2 (issue 13) and text tool calls (issue 12) -------


def _text_call_facts(hit, found, labels, facts) -> dict[str, Any]:
    data = details(found)
    formats = _counts([d.get("format") for d in data if d.get("format")])
    errors = [
        c["error"]
        for calls in hit["text_calls"].drop_nulls().to_list()
        for c in calls
        if c["error"]
    ]
    respond = sum(1 for d in data if d.get("name") == "respond")
    return {
        "invalid_turns": found.height,
        "unrun_turns": found.height,
        "models_text": _models_text(hit),
        "formats_text": ", ".join(f"{f} ×{n}" for f, n in formats),
        "first_error": errors[0] if errors else "see the findings",
        "respond_turns": respond,
        "respond_unquoted": respond > 0,
    }


def _control_token_facts(hit, found, labels, facts) -> dict[str, Any]:
    data = details(found)
    tokens = _counts([d["token"] for d in data if d.get("token")])
    glued = sum(1 for d in data if d.get("harmony_glued"))
    return {
        "token_turns": sum(1 for d in data if d.get("token")),
        "tokens_text": ", ".join(f"{t} ×{n}" for t, n in tokens[:5]),
        "has_tokens": bool(tokens),
        "glued_turns": glued,
        "has_glued": glued > 0,
    }


def _stop_reason_facts(hit, found, labels, facts) -> dict[str, Any]:
    reasons = _counts([d["reason"] for d in details(found) if d.get("reason")])
    return {
        "stopped_turns": found.height,
        "reasons_text": ", ".join(f"{r} ×{n}" for r, n in reasons),
    }


_ID_KINDS = {
    1: "duplicate ids in a turn",
    2: "ids made of the function name",
    3: "calls without a result",
    4: "results without a call",
}


def _tool_call_id_facts(hit, found, labels, facts) -> dict[str, Any]:
    kinds = _counts([_ID_KINDS.get(d.get("kind"), "other") for d in details(found)])
    return {
        "id_turns": found.height,
        "kinds_text": ", ".join(f"{k} ×{n}" for k, n in kinds),
    }


def _not_offered_facts(hit, found, labels, facts) -> dict[str, Any]:
    data = details(found)
    tools = _counts([t for d in data for t in d.get("tools") or []])
    user = sum(1 for d in data if d.get("kind") == "user")
    return {
        "tools_text": ", ".join(f"{t} ×{n}" for t, n in tools[:5]),
        "user_tool_turns": user,
        "user_tools": user > 0,
    }


def _call_in_reasoning_facts(hit, found, labels, facts) -> dict[str, Any]:
    formats = _counts([d["format"] for d in details(found) if d.get("format")])
    model = next(iter(hit["model"].drop_nulls().to_list()), None)
    return {
        "reasoning_turns": found.height,
        "models_text": _models_text(hit),
        "formats_text": ", ".join(f"{f} markup ×{n}" for f, n in formats) or "tool-call markup",
        "reasoning_parser": match_model(REASONING_PARSERS, model) or "<family>",
        "thinking_switch": match_model(THINKING_SWITCHES, model)
        or "the server's per-request thinking switch",
    }


CATALOGUE_FACTS.update(
    {
        "tool-call-in-reasoning": _call_in_reasoning_facts,
        "tool-not-offered": _not_offered_facts,
        "tool-call-ids": _tool_call_id_facts,
        "provider-stop-reasons": _stop_reason_facts,
        "invalid-text-tool-call": _text_call_facts,
        "text-call-not-executed": _text_call_facts,
        "control-token-leak": _control_token_facts,
    }
)


# --- Facts of the episode-level causes (exit statuses, step limits, …) ----------------------


def _exit_facts(hit, found, labels, facts) -> dict[str, Any]:
    """What the exit statuses were and what they mean (data.exit, data.kind of the rules)."""
    data = details(found)
    kinds = _counts([d.get("kind") for d in data if d.get("kind")])
    statuses = _counts([d.get("exit") for d in data if d.get("exit")])
    return {
        "exits": found.height,
        "kinds_text": ", ".join(k for k, _ in kinds[:4]) or "their exit status",
        "statuses_text": "; ".join(f"{n}× {s}" for s, n in statuses[:4]),
    }


CATALOGUE_FACTS.update(
    {
        "run-exit-infra": _exit_facts,
        "model-exit": _exit_facts,
    }
)


def _step_limit_facts(hit, found, labels, facts) -> dict[str, Any]:
    data = details(found)
    limits = _counts([d.get("limit") for d in data if d.get("limit") is not None])
    defaults = _counts([d.get("default") for d in data if d.get("default") is not None])
    return {
        "cut_episodes": found.height,
        "step_limits_text": ", ".join(str(v) for v, _ in limits) or "the run's limit",
        "default_limit": defaults[0][0] if defaults else "the default",
    }


CATALOGUE_FACTS["step-limit"] = _step_limit_facts


def _tool_exception_facts(hit, found, labels, facts) -> dict[str, Any]:
    return {"exception_results": sum(d.get("episode", 0) for d in details(found))}


CATALOGUE_FACTS["harness-tool-exception"] = _tool_exception_facts


def _action_loop_facts(hit, found, labels, facts) -> dict[str, Any]:
    repeats = [d.get("repeats", 0) for d in details(found)]
    return {"loops": found.height, "max_repeats": max(repeats, default=0)}


CATALOGUE_FACTS["action-loop"] = _action_loop_facts


def _user_sim_fault_facts(hit, found, labels, facts) -> dict[str, Any]:
    shapes = _counts([d.get("shape") for d in details(found) if d.get("shape")])
    models = sorted(set(hit["model"].drop_nulls().to_list()))
    return {
        "fault_turns": found.height,
        "shapes_text": ", ".join(f"{n}× {s}" for s, n in shapes),
        "user_model_text": ", ".join(models) or "user model unknown",
    }


CATALOGUE_FACTS["user-sim-fault"] = _user_sim_fault_facts


def _transfer_facts(hit, found, labels, facts) -> dict[str, Any]:
    shapes = [d.get("shape") for d in details(found)]
    return {"transfer_episodes": found.height, "first_reply": shapes.count("first_reply")}


CATALOGUE_FACTS["reflexive-transfer"] = _transfer_facts


def _prompt_truncation_facts(hit, found, labels, facts) -> dict[str, Any]:
    data = details(found)
    plateaus = _counts([d.get("prompt_tokens") for d in data if d.get("prompt_tokens")])
    windows = _counts([d.get("num_ctx") for d in data if d.get("num_ctx")])
    return {
        "plateau_episodes": found.height,
        "plateaus_text": ", ".join(f"{v:,}" for v, _ in plateaus[:3]),
        "num_ctx_suffix": f" (Ollama ran with num_ctx {windows[0][0]:,})" if windows else "",
    }


CATALOGUE_FACTS["silent-prompt-truncation"] = _prompt_truncation_facts


def _repetition_to_cap_facts(hit, found, labels, facts) -> dict[str, Any]:
    return {"loop_turns": found.height, "models_text": _models_text(hit)}


CATALOGUE_FACTS["repetition-to-cap"] = _repetition_to_cap_facts
