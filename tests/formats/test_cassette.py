"""HTTP cassettes: real vcrpy recordings (pydantic-ai, crewAI) and the other recorders' shapes
(vcrpy JSON, Ruby VCR, go-vcr, langchain's gzip) read through the API dialects, with findings
at the line where their interaction starts."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import forensics
from forensics.config import Settings
from forensics.ingest import detect
from forensics.ingest.formats import cassette
from forensics.limits import Limits

from conftest import DATA, run_cli

REAL = DATA / "cassettes" / "real"
SYNTHETIC = DATA / "cassettes" / "synthetic"
PYDANTIC_AI = DATA / "pydantic_ai"


def found(result) -> set[tuple[str, str, int]]:
    rows = result.findings
    names = [Path(p).name for p in rows["source_path"]]
    return set(zip(rows["rule"], names, rows["source_line"], strict=True))


def answer(result, name: str, line: int) -> dict:
    rows = result.turns.filter(
        pl.col("source_path").str.ends_with("/" + name)
        & (pl.col("source_line") == line)
        & (pl.col("role") == "assistant")
    )
    assert rows.height == 1, (name, line, rows.height)
    return rows.row(0, named=True)


def cassettes(folder: Path) -> list[str]:
    """The cassettes of a fixture folder (it also holds saved Ollama answers, read elsewhere)."""
    return [str(p) for p in sorted(folder.iterdir()) if not p.name.startswith("ollama_")]


@pytest.fixture(scope="module")
def real():
    return forensics.scan(cassettes(REAL))


@pytest.fixture(scope="module")
def synthetic():
    return forensics.scan(cassettes(SYNTHETIC))


# --- real cassettes --------------------------------------------------------------------------


def test_real_truncations_are_found_at_their_interactions(real):
    assert found(real) == {
        ("max-tokens", "crewai_anthropic_async_with_max_tokens.yaml", 2),
        ("max-tokens", "crewai_anthropic_async_with_max_tokens.yaml", 94),
        ("max-tokens", "crewai_azure_async_with_max_tokens.yaml", 2),
        ("max-tokens", "crewai_bedrock_async_with_max_tokens.yaml", 2),
        ("max-tokens", "pydantic_ai_test_bedrock_model_max_tokens.yaml", 2),
        ("http-error", "pydantic_ai_test_bedrock_error.yaml", 2),
    }
    assert real.rejects.is_empty()
    assert {f.format for f in real.files} == {cassette.FORMAT}


def test_real_bedrock_converse_bodies(real):
    capped = answer(real, "pydantic_ai_test_bedrock_model_max_tokens.yaml", 2)
    assert (capped["content"], capped["finish_reason_raw"], capped["finish_reason"]) == (
        "The capital of France is",
        "max_tokens",
        "max_tokens",
    )
    assert (capped["max_output_tokens"], capped["output_tokens"], capped["input_tokens"]) == (
        5,
        5,
        13,
    )
    assert capped["model"] == "us.amazon.nova-micro-v1:0"  # from the URL, %3A decoded
    assert capped["endpoint"] == "https://bedrock-runtime.us-east-1.amazonaws.com"
    # ConverseStream: a binary event stream stored as !!binary, decoded frame by frame.
    streamed = answer(real, "pydantic_ai_test_bedrock_model_stream.yaml", 2)
    assert streamed["content"].startswith("The capital of France is Paris. Paris is not only")
    assert (streamed["stream"], streamed["stream_completed"], streamed["finish_reason"]) == (
        True,
        True,
        "stop",
    )
    assert (streamed["input_tokens"], streamed["output_tokens"]) == (13, 82)
    failed = answer(real, "pydantic_ai_test_bedrock_error.yaml", 2)
    assert (failed["http_status"], failed["error"], failed["content"]) == (
        400,
        "The provided model identifier is invalid.",
        None,
    )


def test_real_bedrock_tool_loop_links_into_one_conversation(real):
    name = "pydantic_ai_test_bedrock_anthropic_tool_with_thinking.yaml"
    turns = real.turns.filter(pl.col("source_path").str.ends_with(name)).sort("turn_index")
    assert turns["trajectory_id"].n_unique() == 1
    assert turns["role"].to_list() == ["user", "assistant", "tool", "assistant"]
    assert turns["source_line"].to_list() == [2, 2, 60, 60]
    first = turns.row(1, named=True)
    assert first["reasoning"].startswith("The user is asking")
    assert [c["name"] for c in first["tool_calls"]] == ["get_user_country"]
    assert (first["finish_reason"], first["tools_attached"]) == ("tool_calls", True)


def test_real_ollama_generate(real):
    first = answer(real, "crewai_ollama_generate_llama3_1.subset.yaml", 2)
    assert first["content"].startswith('```\n{\n  "name": "Alice Llama"')
    assert (first["finish_reason"], first["input_tokens"], first["output_tokens"]) == (
        "stop",
        67,
        22,
    )
    assert (first["model"], first["endpoint"], first["stream"]) == (
        "llama3.1",
        "http://localhost:11434",
        False,
    )


def test_real_pydantic_ai_cassettes_match_the_extracted_interactions(scan_of):
    """The pydantic-ai cassettes read directly give what their extracted JSONL gives."""
    ARMOR = "test_google_model_armor"
    EMPTY = "gemini/test_google_model_max_tokens_thinking_model_empty_response.yaml"
    result = forensics.scan([str(p) for p in sorted(PYDANTIC_AI.glob("*/*.yaml"))])
    rows = result.findings
    got = {
        (rule, str(Path(p).relative_to(PYDANTIC_AI)), line)
        for rule, p, line in zip(
            rows["rule"], rows["source_path"], rows["source_line"], strict=True
        )
    }
    assert got == {
        ("content-filtered", f"gemini/{ARMOR}_prompt_template_text_gets_blocked.yaml", 46),
        ("content-filtered", f"gemini/{ARMOR}_response_template_real_block.yaml", 2),
        ("max-tokens", "gemini/test_google_model_max_tokens.yaml", 2),
        ("max-tokens", EMPTY, 2),
        ("thinking-budget-exhausted", EMPTY, 2),
        ("content-filtered", "gemini/test_google_model_safety_settings.yaml", 2),
        ("malformed-tool-call", "gemini/vertex_unexpected_tool_call_first_interaction.yaml", 2),
        ("max-tokens", "openai_compat/test_max_completion_tokens.yaml", 2),
        ("thinking-budget-exhausted", "openai_compat/test_max_completion_tokens.yaml", 2),
        ("unclosed-think", "openai_compat/test_max_completion_tokens.yaml", 2),
        ("http-error", "openai_compat/test_openrouter_stream_error.yaml", 2),
        ("max-tokens", "openai_compat/test_openrouter_stream_error.yaml", 2),
        ("thinking-budget-exhausted", "openai_compat/test_openrouter_stream_error.yaml", 2),
        ("http-error", "openai_compat/test_tool_use_failed_error.yaml", 2),
        ("malformed-tool-call", "openai_compat/test_tool_use_failed_error.yaml", 2),
    }  # fmt: skip
    extracted = scan_of(PYDANTIC_AI / "extracted_interactions.jsonl")
    assert result.findings.height == extracted.findings.height == 15
    # The Vertex OAuth token exchange is the one interaction that is not an LLM call.
    assert result.rejects.select("source_line", "reason").rows() == [
        (2, "not an LLM API call (POST https://oauth2.googleapis.com/token)")
    ]
    assert {f.format for f in result.files} == {cassette.FORMAT}


# --- the recorders' shapes -------------------------------------------------------------------


def test_synthetic_findings_and_rejects(synthetic):
    assert found(synthetic) == {
        ("max-tokens", "go_vcr_generate.yaml", 23),
        ("thinking-budget-exhausted", "go_vcr_generate.yaml", 23),
        ("unclosed-think", "go_vcr_generate.yaml", 23),
        ("max-tokens", "go_vcr_generate.yaml", 42),
        ("max-tokens", "langchain_incomplete_response.yaml.gz", 2),
        ("thinking-budget-exhausted", "langchain_incomplete_response.yaml.gz", 2),
        ("content-filtered", "ruby_vcr_bedrock.yml", 3),
        ("content-filtered", "ruby_vcr_bedrock.yml", 24),
        ("max-tokens", "ruby_vcr_bedrock.yml", 44),
        ("context-overflow", "ruby_vcr_ollama.json", 3),
        ("max-tokens", "ruby_vcr_ollama.json", 67),
        ("max-tokens", "truncated.json", 4),
        ("thinking-budget-exhausted", "truncated.json", 4),
        ("max-tokens", "vcrpy_agent_loop.yaml", 26),
        ("thinking-budget-exhausted", "vcrpy_agent_loop.yaml", 26),
        ("unclosed-think", "vcrpy_agent_loop.yaml", 26),
        ("max-tokens", "vcrpy_anthropic.json", 4),
        ("thinking-budget-exhausted", "vcrpy_anthropic.json", 4),
    }
    rejects = {
        (Path(p).name, line, reason.split(":")[0])
        for p, line, reason in synthetic.rejects.select(
            "source_path", "source_line", "reason"
        ).rows()
    }
    assert rejects == {
        (
            "bomb.yaml",
            2,
            "YAML aliases in this file expand past 1,000,000 node visits "
            "(the YAML alias cap, --max-yaml-aliases)",
        ),
        ("broken.yaml", 12, "invalid YAML"),
        ("truncated.json", 30, "invalid JSON at line 41"),
        ("vcrpy_agent_loop.yaml", 53, "not an LLM API call (GET https"),
        ("vcrpy_agent_loop.yaml", 65, "POST https"),
    }
    brotli = synthetic.rejects.filter(pl.col("source_line") == 65)["reason"][0]
    assert brotli.endswith("br-compressed body: not decoded")
    notes = {Path(f.path).name: f.note for f in synthetic.files}
    assert notes["empty.yaml"] == "cassette with no recorded interactions"


def test_broken_yaml_keeps_the_interactions_around_the_bad_one(synthetic):
    assert answer(synthetic, "broken.yaml", 2)["content"] == "hello"
    assert answer(synthetic, "broken.yaml", 16)["content"] == "hello"


def test_vcrpy_gzip_binary_body_and_sse_stream_link(synthetic):
    name = "vcrpy_agent_loop.yaml"
    call = answer(synthetic, name, 2)  # gzip bytes under !!binary
    assert [(c["name"], c["arguments"]) for c in call["tool_calls"]] == [
        ("get_weather", '{"city": "Paris"}')
    ]
    capped = answer(synthetic, name, 26)  # SSE text, history re-sent: the same conversation
    assert capped["trajectory_id"] == call["trajectory_id"]
    assert (capped["stream_completed"], capped["output_tokens"], capped["max_output_tokens"]) == (
        True,
        64,
        64,
    )
    assert capped["content"] == "<think>\nThe tool says 18C, so I should"


def test_ruby_vcr_ollama(synthetic):
    name = "ruby_vcr_ollama.json"
    streamed = answer(synthetic, name, 3)  # NDJSON stream, no num_predict, num_ctx 2048
    assert (streamed["reasoning"], streamed["content"]) == ("The log is long and I", None)
    assert (streamed["finish_reason_raw"], streamed["finish_reason"]) == ("length", "model_length")
    assert (streamed["stream"], streamed["stream_completed"]) == (True, True)
    assert (streamed["input_tokens"], streamed["output_tokens"]) == (1900, 148)
    tool = answer(synthetic, name, 35)  # base64_string of a gzip body
    assert [(c["name"], c["arguments"]) for c in tool["tool_calls"]] == [
        ("get_weather", '{"city": "Oslo"}')
    ]
    assert (tool["stream"], tool["tools_attached"], tool["finish_reason"]) == (False, True, "stop")
    capped = answer(synthetic, name, 67)  # /api/generate stopped at num_predict
    assert (capped["finish_reason"], capped["max_output_tokens"], capped["output_tokens"]) == (
        "max_tokens",
        8,
        8,
    )


def test_ruby_vcr_bedrock_verdicts_and_event_stream(synthetic):
    name = "ruby_vcr_bedrock.yml"
    guarded = answer(synthetic, name, 3)
    assert (guarded["finish_reason_raw"], guarded["finish_reason"]) == (
        "guardrail_intervened",
        "content_filter",
    )
    assert guarded["content"] == "Sorry, I can not help with that."
    filtered = answer(synthetic, name, 24)
    assert (filtered["finish_reason_raw"], filtered["content"]) == ("content_filtered", None)
    streamed = answer(synthetic, name, 44)  # base64_string of event-stream frames
    assert streamed["reasoning"] == "Need the tool"
    assert [(c["id"], c["name"], c["arguments"]) for c in streamed["tool_calls"]] == [
        ("tu1", "get_weather", '{"city": "Lima"}')
    ]
    assert (streamed["finish_reason"], streamed["output_tokens"], streamed["tool_count"]) == (
        "max_tokens",
        40,
        1,
    )


def test_go_vcr_sglang_chatml_prompts_link(synthetic):
    name = "go_vcr_generate.yaml"
    turns = synthetic.turns.filter(
        pl.col("source_path").str.ends_with(name) & (pl.col("source_line") < 40)
    ).sort("turn_index")
    assert turns["trajectory_id"].n_unique() == 1
    assert turns["role"].to_list() == ["system", "user", "assistant", "user", "assistant"]
    first, second = turns.row(2, named=True), turns.row(4, named=True)
    assert (first["content"], first["reasoning"]) == ("391", "\n17 * 23 = 340 + 51\n")
    assert (second["finish_reason_raw"], second["max_output_tokens"]) == ("length", 16)
    assert second["content"].startswith("<think>\nRecompute")  # unclosed: stays in the text
    tokens = answer(synthetic, name, 42)  # vLLM token-level: ids only
    assert (tokens["content"], tokens["output_tokens"], tokens["model"]) == (
        None,
        4,
        "Qwen/Qwen3-8B",
    )


def test_langchain_gzip_requests_and_responses(synthetic):
    incomplete = answer(synthetic, "langchain_incomplete_response.yaml.gz", 2)
    assert (incomplete["finish_reason_raw"], incomplete["max_output_tokens"]) == (
        "max_output_tokens",
        32,
    )


def test_no_secret_of_a_cassette_reaches_the_tables(synthetic):
    for table in (synthetic.turns, synthetic.trajectories, synthetic.rejects):
        text = str(table.to_dicts())
        assert "FAKEfakeFAKE" not in text
        assert "AKIAFAKEFAKEFAKE" not in text


# --- detection and the CLI -------------------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        "interactions:\n- request:\n    body: null\n",
        "---\nversion: 2\ninteractions:\n    - id: 0\n",
        "# recorded\n---\nhttp_interactions:\n- request:\n    method: post\n",
        "requests:\n- body: null\nresponses:\n- body: {}\n",
        '{\n    "version": 1,\n    "interactions": [\n',
        '{"http_interactions": [{"request": {"method": "get"}}], "recorded_with": "VCR 6"}',
    ],
)
def test_cassette_heads_are_detected(head: str):
    fmt, _ = detect(head.encode())
    assert fmt is not None and fmt.name == cassette.FORMAT


@pytest.mark.parametrize(
    "head",
    [
        "name: CI\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n",
        "version: 1\nlevels: [a]\n",
        '{"version": 1, "items": []}',
        "interactions were many\n",
    ],
)
def test_other_yaml_and_json_are_not_cassettes(head: str):
    assert cassette.sniff(head) is None


def test_cli_gates_on_a_real_max_tokens_cassette(tmp_path):
    capped = REAL / "pydantic_ai_test_bedrock_model_max_tokens.yaml"
    code, _, stderr = run_cli("scan", str(capped), "--no-report", "--fail-on", "high")
    assert code == 1, stderr
    healthy = REAL / "pydantic_ai_test_bedrock_model_stream.yaml"
    code, _, stderr = run_cli("scan", str(healthy), "--no-report", "--fail-on", "high")
    assert code == 0, stderr


def test_a_gzipped_body_past_the_cap_is_a_reject(tmp_path):
    import gzip

    import yaml

    body = gzip.compress(b'{"choices": []' + b" " * 5000 + b"}", mtime=0)
    doc = {
        "interactions": [
            {
                "request": {"body": None, "method": "POST", "uri": "https://x.test/v1/chat/completions"},
                "response": {"body": {"string": body}, "headers": {"Content-Encoding": ["gzip"]},
                             "status": {"code": 200, "message": "OK"}},
            }
        ]
    }  # fmt: skip
    path = tmp_path / "bomb.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert path.stat().st_size < 1000  # the cassette itself is within the document cap
    # A body is a document read whole: the document cap bounds it.
    result = forensics.scan([str(path)], settings=Settings(limits=Limits(max_document_bytes=1000)))
    assert result.rejects.select("source_line", "reason").rows() == [
        (
            2,
            "POST https://x.test/v1/chat/completions: compressed body inflates past 1,000 bytes "
            "(the document cap, --max-document-mb)",
        )
    ]


def test_python2_string_tags_are_text_and_object_tags_are_refused(tmp_path):
    ok = (SYNTHETIC / "broken.yaml").read_text().split("- request:")[1]
    text = "interactions:\n- request:" + ok.replace("method: POST", "method: !!python/unicode POST")
    text += "- request: !!python/object/apply:os.system [echo]\n  response: {}\nversion: 1\n"
    path = tmp_path / "py2.yaml"
    path.write_text(text)
    result = forensics.scan([str(path)])
    assert answer(result, "py2.yaml", 2)["content"] == "hello"
    [(line, reason)] = result.rejects.select("source_line", "reason").rows()
    assert line == 12 and reason.startswith("invalid YAML value: could not determine a constructor")


def test_an_interaction_of_another_recorder_is_rejected_with_its_keys(tmp_path):
    """pydantic-ai's gRPC recorder writes frames, not HTTP exchanges, into the same list."""
    path = tmp_path / "grpc.yaml"
    path.write_text("version: 1\ninteractions:\n- kind: message\n  direction: sent\n  data: {}\n")
    result = forensics.scan([str(path)])
    assert result.rejects.select("source_line", "reason").rows() == [
        (3, "not a recorded HTTP request/response (keys: data, direction, kind)")
    ]


def test_rvcr_json_shape(tmp_path):
    """Rust's rVCR writes the Ruby VCR shape: response before request, `encoding: null`."""
    answer = {
        "object": "chat.completion",
        "model": "gpt-3.5-turbo-0613",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello"},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    ask = {
        "model": "gpt-3.5-turbo",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    doc = {"http_interactions": [{
        "response": {"body": {"encoding": None, "string": json.dumps(answer, indent=2)},
                     "http_version": "1.1", "status": {"code": 200, "message": "OK"},
                     "headers": {"content-type": ["application/json"]}},
        "request": {"uri": "https://api.openai.com/v1/chat/completions", "method": "post",
                    "body": {"encoding": None, "string": json.dumps(ask)},
                    "headers": {"authorization": ["<CENSORED>"]}},
        "recorded_at": "Tue, 16 Jan 2024 02:11:20 +0000"}],
        "recorded_with": "rVCR 0.1.5"}  # fmt: skip
    path = tmp_path / "start-conversation.json"
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    assert found(result) == {("max-tokens", "start-conversation.json", 3)}


def test_a_stale_content_encoding_header_does_not_reject_a_plain_body():
    answer = b'{"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}'
    for encoding in ("gzip", "deflate", "br"):
        side = {"body": {"string": answer}, "headers": {"Content-Encoding": [encoding]}}
        assert cassette.body_of(side) == answer
    damaged = {"body": {"string": b"\x1f\x8b\x08\x00garbage"}, "headers": {}}
    with pytest.raises(cassette.BadBody, match="compressed body is damaged"):
        cassette.body_of(damaged)


# --- time between requests (issue 21 item 7) --------------------------------------------------

_OPENAI = "https://api.openai.com/v1/chat/completions"
_BAD_MODEL = {
    "error": {"message": "The model `gpt-4.1-mni` does not exist", "code": "model_not_found"}
}


def _ruby_interaction(recorded_at: str | None, date: str | None = None) -> dict:
    request = {"model": "gpt-4.1-mni", "messages": [{"role": "user", "content": "Say hi"}]}
    headers = {"Content-Type": ["application/json"]} | ({"Date": [date]} if date else {})
    item = {
        "request": {
            "method": "post",
            "uri": _OPENAI,
            "body": {"encoding": "UTF-8", "string": json.dumps(request)},
            "headers": {"Content-Type": ["application/json"]},
        },
        "response": {
            "status": {"code": 404, "message": "Not Found"},
            "headers": headers,
            "body": {"encoding": "UTF-8", "string": json.dumps(_BAD_MODEL)},
        },
    }
    if recorded_at is not None:
        item["recorded_at"] = recorded_at
    return item


def _storms(tmp_path, items) -> list[tuple[str, int]]:
    path = tmp_path / "cassette.json"
    path.write_text(json.dumps({"http_interactions": items, "recorded_with": "VCR 6.2.0"}))
    result = forensics.scan([str(path)])
    return [
        (f["rule"], f["turn_index"])
        for f in result.findings.iter_rows(named=True)
        if f["rule"] == "retry-storm"
    ]


def test_identical_requests_recorded_months_apart_are_no_retry_storm(tmp_path):
    # three runs of one test, the cassette re-recorded each time (17 months between the first
    # and the last): each request was sent once, not retried
    items = [
        _ruby_interaction("Tue, 14 Nov 2023 10:02:11 GMT"),
        _ruby_interaction("Mon, 03 Jun 2024 16:45:09 GMT"),
        _ruby_interaction("Wed, 16 Apr 2025 08:30:40 GMT"),
    ]
    assert _storms(tmp_path, items) == []


def test_identical_failures_seconds_apart_are_a_retry_storm(tmp_path):
    # vcrpy keeps no recording time: the server's Date header dates the calls
    items = [
        _ruby_interaction(None, "Wed, 16 Apr 2025 08:30:40 GMT"),
        _ruby_interaction(None, "Wed, 16 Apr 2025 08:30:41 GMT"),
        _ruby_interaction(None, "Wed, 16 Apr 2025 08:30:43 GMT"),
    ]
    assert _storms(tmp_path, items) == [("retry-storm", 1)]


def test_undated_identical_failures_are_judged_by_their_order(tmp_path):
    items = [_ruby_interaction(None) for _ in range(3)]
    assert _storms(tmp_path, items) == [("retry-storm", 1)]
