"""Real captured API traffic (pydantic-ai cassettes, LiteLLM fixtures): what each provider sent
comes through, and the rules fire where the real failures are."""

from __future__ import annotations

import polars as pl
import pytest

import forensics

from conftest import DATA

REAL = DATA / "capture" / "real"
SUBSET = REAL / "extracted_interactions.subset.jsonl"
WHOLE = DATA / "pydantic_ai" / "extracted_interactions.jsonl"
RULES = {"unclosed-think", "max-tokens", "stop-no-tool-calls", "think-loop", "reasoning-leak"}


@pytest.fixture(scope="module")
def subset(scan_of):
    return scan_of(SUBSET)


def output_at(result, line: int) -> dict:
    rows = result.turns.filter((pl.col("source_line") == line) & (pl.col("role") == "assistant"))
    return rows.sort("turn_index").row(-1, named=True)


def found(result) -> set[tuple[str, int]]:
    rows = result.findings.filter(pl.col("rule").is_in(RULES))
    return set(zip(rows["rule"], rows["source_line"], strict=True))


def test_real_failures_are_found_at_their_lines(subset):
    assert found(subset) == {
        ("max-tokens", 5),  # Gemini 2.5 flash, maxOutputTokens 5 (through the gemini reader)
        ("max-tokens", 7),  # DeepSeek-R1 via HF router / Together, max_tokens 100
        ("unclosed-think", 7),  # ... whose inline <think> never closes
        ("max-tokens", 10),  # OpenRouter stream: `length` twice, then an in-stream error
    }
    assert subset.rejects.select("source_line", "reason").rows() == [
        (4, "not an LLM API call (POST https://oauth2.googleapis.com/token)")
    ]


def test_every_other_line_is_a_turn_source(subset):
    assert set(subset.turns["source_line"]) == set(range(1, 24)) - {4}
    assert subset.files[0].records == 22


def test_follow_up_calls_continue_their_conversation(subset):
    turns = subset.turns.filter(pl.col("role") == "assistant")
    trajectory = dict(zip(turns["source_line"], turns["trajectory_id"], strict=False))
    for first, *rest in ([2, 3], [8, 9], [11, 12], [13, 14, 15], [17, 18], [19, 20], [22, 23]):
        assert {trajectory[line] for line in [first, *rest]} == {trajectory[first]}, first
    assert len({trajectory[line] for line in (1, 2, 6, 7, 8, 10, 11, 13, 16, 17, 19, 21, 22)}) == 13


def test_provider_fields(subset):
    deepseek = output_at(subset, 6)  # reasoning_content, reasoning_tokens
    assert deepseek["reasoning"].startswith("Okay, the user is asking how to cross the street.")
    assert deepseek["endpoint"] == "https://api.deepseek.com"
    r1 = output_at(subset, 7)
    assert (r1["max_output_tokens"], r1["output_tokens"], r1["finish_reason_raw"]) == (
        100,
        100,
        "length",
    )
    assert (r1["tool_count"], r1["tools_attached"]) == (0, False)  # `tools: []` attaches nothing
    assert r1["content"].startswith("<think>\n") and "</think>" not in r1["content"]
    groq_failed, groq_retry = output_at(subset, 13), output_at(subset, 14)
    assert groq_failed["http_status"] == 400
    assert groq_failed["error"].startswith("tool_use_failed: Tool call validation failed")
    assert groq_failed["content"].startswith(
        '{"name": "get_something_by_name"'
    )  # failed_generation
    assert (groq_retry["reasoning"], groq_retry["reasoning_tokens"]) == (
        'We need to call with correct param: name field. Use some name, e.g., "test".',
        22,
    )
    zai = output_at(subset, 16)  # streamed reasoning_content deltas; usage in the finish chunk
    assert (zai["content"], zai["reasoning_tokens"], zai["enable_thinking"]) == ("4", 561, True)
    assert zai["reasoning"].startswith("\n1.  **Analyze the User's Request:**")
    glm = output_at(subset, 22)  # vLLM (Crusoe): `reasoning`, not `reasoning_content`
    assert (glm["reasoning_tokens"], [c["name"] for c in glm["tool_calls"]]) == (
        25,
        ["get_weather"],
    )
    assert glm["reasoning"].startswith("The user wants to know the weather in Paris.")
    llama = output_at(subset, 21)
    assert (llama["content"], llama["stream_completed"], llama["output_tokens"]) == (
        "1, 2, 3, 4, 5",
        True,
        14,
    )
    claude = output_at(subset, 2)
    assert claude["reasoning"].startswith(
        'The user is asking about the largest city in "the user country"'
    )
    assert (claude["finish_reason"], claude["input_tokens"], claude["reasoning_budget"]) == (
        "tool_calls",
        398,
        3000,
    )
    redacted = output_at(subset, 1)  # redacted_thinking blocks only: no readable reasoning
    assert (redacted["reasoning"], redacted["finish_reason_raw"], redacted["output_tokens"]) == (
        None,
        "end_turn",
        189,
    )
    responses_stream = output_at(subset, 19)
    assert [(c["name"], c["arguments"]) for c in responses_stream["tool_calls"]] == [
        ("get_capital", '{"country":"France"}')
    ]
    assert (responses_stream["finish_reason_raw"], responses_stream["finish_reason"]) == (
        "completed",
        "tool_calls",
    )


def test_real_litellm_logs():
    payload = forensics.scan([str(REAL / "standard_logging_payload.json")])
    answer = output_at(payload, 1)
    assert (answer["content"], answer["finish_reason_raw"], answer["finish_reason"]) == (
        "hi",
        "litellm:stop",
        "stop",
    )
    assert (answer["input_tokens"], answer["output_tokens"], answer["endpoint"]) == (
        10,
        20,
        "https://api.openai.com",
    )
    spend = forensics.scan([str(REAL / "spend_logs_payload.json")])
    assert spend.turns.is_empty()
    assert spend.rejects.select("source_line", "reason").rows() == [
        (
            1,
            "LiteLLM log without messages or response (store_prompts_in_spend_logs is off): "
            "nothing to analyse",
        )
    ]
    assert [f.format for f in spend.files] == ["litellm_log"]


def test_the_whole_real_capture(scan_of):
    result = scan_of(WHOLE)
    assert found(result) == {
        ("max-tokens", 7),
        ("max-tokens", 8),
        ("max-tokens", 18),
        ("unclosed-think", 18),
        ("max-tokens", 21),
    }
    assert result.rejects["source_line"].to_list() == [4]
    assert set(result.turns["source_line"]) == set(range(1, 35)) - {4}
