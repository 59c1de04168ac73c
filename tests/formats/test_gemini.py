"""Gemini responses: REST bodies, google-genai SDK dumps, streams; finish reasons and usage."""

from __future__ import annotations

import json

import polars as pl
import pytest

import forensics
from forensics.ingest import detect
from forensics.ingest.api import gemini
from forensics.ingest.records import normalise_finish_reason

from conftest import DATA

GEMINI = DATA / "gemini"
SDK_DUMPS = DATA / "pydantic_ai" / "gemini" / "derived_google_genai_sdk_dumps.jsonl"


def scan(name: str) -> forensics.ScanResult:
    return forensics.scan([str(GEMINI / name)])


def only_turn(result) -> dict:
    assert result.turns.height == 1
    return result.turns.row(0, named=True)


def interactions() -> dict[str, dict]:
    """The copied realdata interactions (request + response), by cassette and index."""
    out = {}
    for line in (GEMINI / "interactions.jsonl").read_text().splitlines():
        d = json.loads(line)
        out[f"{d['source_file']}#{d['interaction_index']}"] = d
    return out


def findings(result, rule: str = "max-tokens") -> list[tuple[str, str, int, str | None]]:
    """Findings of one rule (other rules have their own tests), sorted, with file and line."""
    return sorted(
        (r["rule"], r["source_path"].rsplit("/", 1)[-1], r["source_line"], r["message"])
        for r in result.findings.iter_rows(named=True)
        if r["rule"] == rule
    )


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("rest_max_tokens.json", "REST body (camelCase)"),
        ("rest_responses.jsonl", "REST body (camelCase)"),
        ("sdk_dumps.jsonl", "google-genai SDK dump (snake_case)"),
        ("stream_alt_sse.txt", "SSE stream (alt=sse)"),
        ("stream_json_array.json", "JSON array of Gemini GenerateContentResponse chunks"),
    ],
)
def test_each_shape_is_detected_on_its_own(name, why):
    fmt, reason = detect((GEMINI / name).read_bytes())
    assert fmt is not None and fmt.name == "gemini"
    assert why in reason


def test_capture_containers_are_not_claimed_as_gemini_bodies():
    # Request/response containers belong to the capture ingester, which calls this module.
    head = (GEMINI / "interactions.jsonl").read_text()[:65536]
    assert gemini.sniff(head) is None
    assert gemini.sniff('{"choices": [], "usage": {}, "model": "gpt-4o"}') is None


def test_max_tokens_fires_on_partial_text_and_on_the_thinking_model_empty_answer():
    partial = scan("rest_max_tokens.json")
    assert findings(partial) == [
        (
            "max-tokens",
            "rest_max_tokens.json",
            1,
            "turn stopped at the output-token limit (finish reason MAX_TOKENS) "
            "after 5 output tokens",
        )
    ]
    assert only_turn(partial)["content"] == "The capital of France is"

    empty = scan("rest_max_tokens_thinking_empty.json")
    turn = only_turn(empty)
    # The budget went to thoughts: no text at all, 2 thought tokens billed as output.
    assert (turn["content"], turn["reasoning"]) == (None, None)
    assert (turn["output_tokens"], turn["reasoning_tokens"], turn["input_tokens"]) == (2, 2, 15)
    assert [f[:3] for f in findings(empty)] == [
        ("max-tokens", "rest_max_tokens_thinking_empty.json", 1)
    ]


def test_rest_jsonl_every_abnormal_ending_kept_raw_and_normalised():
    result = scan("rest_responses.jsonl")
    assert result.rejects.is_empty()
    assert findings(result) == []  # no MAX_TOKENS among them
    turns = result.turns.sort("source_line")
    rows = turns.select(
        "source_line", "finish_reason", "finish_reason_raw", "output_tokens", "tool_call_count"
    ).rows()
    assert rows == [
        (1, "content_filter", "MODEL_ARMOR", None, 0),  # prompt blocked: no candidates
        (2, "content_filter", "MODEL_ARMOR", 33, 0),  # 6 candidate + 27 thought tokens
        (3, "content_filter", "SAFETY", None, 0),
        (4, "stop", "STOP", 1737, 0),
        (5, "error", "UNEXPECTED_TOOL_CALL", 391, 1),
    ]
    errors = turns["error"].to_list()
    assert errors[0] == (
        "prompt blocked (promptFeedback.blockReason MODEL_ARMOR): "
        "The prompt violated Prompt Injection and Jailbreak filters."
    )
    assert (
        errors[4] == "Unexpected tool call: Model tried to call an undeclared function: list_files"
    )
    thinking = turns.row(3, named=True)
    assert thinking["reasoning"].startswith("**A Safe Street-Crossing Guide: My Thought Process**")
    assert thinking["content"].startswith("Crossing the street safely")
    assert "My Thought Process" not in thinking["content"]
    assert thinking["reasoning_tokens"] == 1001
    assert turns.row(4, named=True)["tool_calls"] == [
        {"id": None, "name": "list_files", "arguments": "{}"}
    ]
    assert set(turns["model"]) == {
        "gemini-2.5-flash",
        "gemini-1.5-flash",
        "gemini-3-pro-preview",
        "gemini-3-flash-preview",
    }
    assert set(turns["actor"]) == {"agent"}


def test_sdk_dumps_read_like_the_rest_bodies_they_came_from():
    rest = {}
    for d in interactions().values():
        body = d["response"]["body_json"]
        if isinstance(body, dict) and gemini.is_response(body):
            rest[body["responseId"]] = body
    compared = 0
    for line in (GEMINI / "sdk_dumps.jsonl").read_text().splitlines():
        dump = json.loads(line)
        body = rest.get(dump["response_id"])
        if body is None:  # single SSE chunks: their REST twin is a stream, compared below
            continue
        assert gemini.turn_from_response(dump) == gemini.turn_from_response(body)
        compared += 1
    assert compared == 5


def test_sdk_dump_file_chunks_of_one_stream_merge_into_one_turn():
    result = scan("sdk_dumps.jsonl")
    assert result.rejects.is_empty()
    # 7 lines; lines 3 and 4 are the first and last chunk of one stream (same response_id).
    assert result.turns.height == 6
    merged = result.turns.filter(pl.col("source_line") == 3).row(0, named=True)
    assert merged["tool_calls"] == [{"id": None, "name": "get_country", "arguments": "{}"}]
    assert merged["finish_reason_raw"] == "STOP"
    assert [f[:3] for f in findings(result)] == [("max-tokens", "sdk_dumps.jsonl", 1)]


def test_sse_stream_is_merged_with_the_last_usage():
    turn = only_turn(scan("stream_alt_sse.txt"))
    assert turn["content"] == "The capital of France is Paris.\n"
    assert (turn["finish_reason"], turn["finish_reason_raw"]) == ("stop", "STOP")
    assert (turn["input_tokens"], turn["output_tokens"]) == (13, 8)
    assert turn["source_line"] == 1
    assert turn["error"] is None
    assert (turn["stream"], turn["stream_completed"]) == (True, True)


def test_sse_stream_with_a_function_call_and_thought_signature():
    turn = only_turn(scan("stream_tool_call_alt_sse.txt"))
    assert turn["tool_calls"] == [{"id": None, "name": "get_country", "arguments": "{}"}]
    assert turn["content"] == ""  # the last chunk's empty text part, as the SDK's .text gives it
    assert (turn["output_tokens"], turn["reasoning_tokens"]) == (212, 202)


def test_json_array_stream_is_merged():
    turn = only_turn(scan("stream_json_array.json"))
    assert turn["content"] == "The capital of Mexico is Mexico City."
    assert turn["finish_reason_raw"] == "STOP"
    # The last chunk's usage wins, quirk included (formats-api 1.5: 55 before, 257 at the end).
    assert turn["input_tokens"] == 257


def test_cut_array_stream_keeps_what_arrived_and_rejects_the_cut_chunk():
    result = scan("synthetic_cut_stream.json")
    turn = only_turn(result)
    assert turn["content"] == "Let me check the reservation"
    assert turn["finish_reason"] is None  # never guessed
    assert turn["error"] == "stream ended without a finishReason: the response was cut off"
    assert (turn["stream"], turn["stream_completed"]) == (True, False)
    rejects = result.rejects.rows(named=True)
    assert [(r["source_line"], r["reason"]) for r in rejects] == [
        (2, "truncated stream: the array ends inside element 2; 1 chunks kept")
    ]


def test_sse_with_a_broken_event_rejects_it_and_marks_the_stream_cut():
    result = scan("synthetic_cut_sse.txt")
    turn = only_turn(result)
    assert turn["content"] == "Looking up now"
    assert turn["finish_reason"] is None
    assert "cut off" in turn["error"]
    assert result.rejects.select("source_line").to_series().to_list() == [3]
    assert result.rejects["reason"][0].startswith("SSE event is not JSON")


def test_mixed_jsonl_accounts_for_every_line():
    path = GEMINI / "synthetic_mixed.jsonl"
    result = scan(path.name)
    lines = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip()]
    seen = sorted(result.turns["source_line"].to_list() + result.rejects["source_line"].to_list())
    assert seen == lines  # parsed + rejected covers the whole input
    by_line = {r["source_line"]: r for r in result.turns.iter_rows(named=True)}
    malformed = by_line[1]
    assert (malformed["finish_reason"], malformed["finish_reason_raw"]) == (
        "error",
        "MALFORMED_FUNCTION_CALL",
    )
    assert malformed["error"].startswith("Malformed function call: print(default_api.book_flight")
    assert malformed["output_tokens"] == 95
    sdk_stream = by_line[4]  # an SDK dump of a streamed response: the list of its chunks
    assert sdk_stream["reasoning"] == (
        "The user wants a refund. I should look up the order first, then check the policy"
    )
    assert sdk_stream["content"] is None
    assert (sdk_stream["output_tokens"], sdk_stream["reasoning_tokens"]) == (128, 128)
    assert (by_line[5]["finish_reason"], by_line[5]["finish_reason_raw"]) == (
        "content_filter",
        "PROHIBITED_CONTENT",
    )
    assert (by_line[6]["finish_reason"], by_line[6]["finish_reason_raw"]) == (
        "unknown",
        "SOMETHING_NEW",
    )
    reasons = dict(zip(result.rejects["source_line"], result.rejects["reason"], strict=True))
    assert reasons[2].startswith("invalid JSON: Unterminated string")
    assert reasons[3].startswith("not a Gemini GenerateContentResponse")
    assert [f[:3] for f in findings(result)] == [("max-tokens", "synthetic_mixed.jsonl", 4)]


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "max_tokens"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("IMAGE_SAFETY", "content_filter"),
        ("MODEL_ARMOR", "content_filter"),
        ("LANGUAGE", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("UNEXPECTED_TOOL_CALL", "error"),
        ("TOO_MANY_TOOL_CALLS", "error"),
        ("MISSING_THOUGHT_SIGNATURE", "error"),
        ("OTHER", "unknown"),
        ("FINISH_REASON_UNSPECIFIED", "unknown"),
        ("CONTINUATION", "unknown"),
        # the OpenAI spellings are untouched
        ("length", "max_tokens"),
        ("tool_calls", "tool_calls"),
    ],
)
def test_finish_reason_vocabulary(raw, normalised):
    assert normalise_finish_reason(raw) == normalised


def test_request_side_from_a_captured_request():
    found = interactions()
    capped = found["gemini/test_google_model_max_tokens.yaml#0"]
    message, fields = gemini.turn_from_response(
        capped["response"]["body_json"], capped["request"]["body_json"], capped["request"]["url"]
    )
    assert message["content"] == "The capital of France is"
    assert {k: fields[k] for k in ("max_output_tokens", "reasoning_budget", "tools_attached")} == {
        "max_output_tokens": 5,
        "reasoning_budget": 0,  # thinkingConfig {thinking_budget: 0}, snake_case in the request
        "tools_attached": False,
    }
    assert fields["model"] == "gemini-2.5-flash"
    assert fields["endpoint"] == "https://generativelanguage.googleapis.com"

    tools = found["gemini/test_google_model_thinking_part_iter.yaml#0"]
    chunks = gemini.parse_sse(tools["response"]["body_text"])
    message, fields = gemini.turn_from_response(
        chunks, tools["request"]["body_json"], tools["request"]["url"]
    )
    assert fields["tools_attached"] is True
    assert fields["finish_reason_raw"] == "STOP"
    assert message["reasoning"].startswith("**Clarifying User Goals**")

    off = {
        **tools["request"]["body_json"],
        "toolConfig": {"functionCallingConfig": {"mode": "NONE"}},
    }
    fields = gemini.request_fields(off)
    assert (fields["tools_attached"], fields["tool_choice"]) == (False, "NONE")


def test_request_messages_rebuild_the_conversation():
    second = interactions()["gemini/test_google_streaming_tool_call_thought_signature.yaml#1"]
    messages = gemini.request_messages(second["request"]["body_json"])
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["tool_calls"] == [
        {"id": "pyd_ai_29bf73b69e02448588e15893d47a3e7e", "name": "get_country", "arguments": "{}"}
    ]
    assert messages[2]["tool_call_id"] == "pyd_ai_29bf73b69e02448588e15893d47a3e7e"
    assert (
        json.loads(messages[2]["content"])
        == second["request"]["body_json"]["contents"][2]["parts"][0]["functionResponse"]["response"]
    )


def test_same_input_same_rows():
    paths = [str(p) for p in sorted(GEMINI.iterdir()) if p.suffix in (".json", ".jsonl", ".txt")]
    paths = [p for p in paths if "interactions" not in p]
    first, second = forensics.scan(paths), forensics.scan(paths)
    assert first.turns.to_dicts() == second.turns.to_dicts()
    assert first.rejects.to_dicts() == second.rejects.to_dicts()


def test_real_sdk_dumps_max_tokens(tmp_path):
    path = tmp_path / "dumps.jsonl"
    with open(SDK_DUMPS) as src, open(path, "w") as out:
        for line in src:
            out.write(json.dumps(json.loads(line)["to_json_dict"]) + "\n")
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty()
    assert [f[2] for f in findings(result)] == [1]
