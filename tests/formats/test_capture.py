"""Captured OpenAI-compatible and Anthropic calls: every container shape, exact findings,
linking into trajectories, secrets, and the accounting invariant (every record is a source of
turns or a reject)."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from click.testing import CliRunner

import forensics
from forensics.cli import cli
from forensics.config import Settings
from forensics.ingest.api import exchange
from forensics.ingest.parse import files

from conftest import DATA

CAPTURE = DATA / "capture"
# The foundation rules; other rules join the pack over time and are not this file's business.
RULES = {"unclosed-think", "max-tokens", "stop-no-tool-calls", "think-loop", "reasoning-leak"}
SECRETS = ("sk-test-4f9a1c2e7b3d5a8f0e6c", "plainsecret123456", "token=abc")

# fixture -> (detected format, {(rule, line)} of the foundation rules)
EXPECTED = {
    "vllm_agent_loop.jsonl": (
        "api_capture",
        {
            ("max-tokens", 2),
            ("unclosed-think", 2),
            ("stop-no-tool-calls", 3),
            ("reasoning-leak", 4),
        },
    ),
    "envelopes_streams.jsonl": ("api_capture", {("max-tokens", 3), ("max-tokens", 8)}),
    "batch.jsonl": ("api_capture", {("max-tokens", 5)}),
    "agent.har": ("har", {("stop-no-tool-calls", 11)}),
    "litellm_logs.jsonl": (
        "litellm_log",
        {("stop-no-tool-calls", 1), ("max-tokens", 5), ("unclosed-think", 5)},
    ),
    "streams.sse": ("sse_capture", {("max-tokens", 1), ("unclosed-think", 1)}),
    "bodies.json": ("api_capture", {("max-tokens", 2)}),
}


def found(result) -> set[tuple[str, int]]:
    rows = result.findings.filter(pl.col("rule").is_in(RULES))
    return set(zip(rows["rule"], rows["source_line"], strict=True))


def turns_at(result, line: int) -> pl.DataFrame:
    return result.turns.filter(pl.col("source_line") == line).sort("turn_index")


def output_at(result, line: int) -> dict:
    """The assistant turn a call on `line` produced."""
    rows = turns_at(result, line).filter(pl.col("role") == "assistant")
    assert rows.height >= 1, f"no assistant turn from line {line}"
    return rows.row(-1, named=True)


@pytest.fixture(scope="module")
def scans(scan_of):
    return {name: scan_of(CAPTURE / name) for name in EXPECTED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_findings_and_format(scans, name):
    fmt, expected = EXPECTED[name]
    result = scans[name]
    assert [f.format for f in result.files] == [fmt]
    assert found(result) == expected
    paths = set(result.findings["source_path"])
    assert paths <= {str(CAPTURE / name)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_detection_comes_from_content_not_the_file_name(tmp_path, scans, name):
    renamed = tmp_path / "capture-without-a-telling-extension.txt"
    shutil.copy(CAPTURE / name, renamed)
    result = forensics.scan([str(renamed)])
    assert [f.format for f in result.files] == [EXPECTED[name][0]]
    assert found(result) == EXPECTED[name][1]


def _record_lines(path) -> list[int]:
    """Where each record of a fixture starts, computed from the file without forensics."""
    text = path.read_text()
    lines = text.split("\n")
    if path.suffix == ".jsonl":
        return [i for i, line in enumerate(lines, 1) if line.strip()]
    if path.suffix == ".sse":
        starts, fresh = [], True
        for i, line in enumerate(lines, 1):
            if fresh and line.startswith(("data:", "event:")):
                starts.append(i)
                fresh = False
            if line == "data: [DONE]" or line.startswith('data: {"type": "message_stop"'):
                fresh = True
        return starts
    # Pretty-printed JSON: each record is an object whose opening brace stands alone on its
    # line at the records' indentation.
    doc = json.loads(text)
    records = doc["log"]["entries"] if isinstance(doc, dict) else doc
    first = next(i for i, line in enumerate(lines) if line.strip() == "{" and i > 0)
    indent = len(lines[first]) - len(lines[first].lstrip())
    if isinstance(doc, dict):  # HAR: entries sit deeper than the first nested object
        entries_at = next(i for i, line in enumerate(lines) if '"entries"' in line)
        indent = len(lines[entries_at]) - len(lines[entries_at].lstrip()) + 2
    starts = [i for i, line in enumerate(lines, 1) if line == " " * indent + "{"]
    assert len(starts) == len(records)
    return starts


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_record_is_a_turn_source_or_a_reject(scans, name):
    result = scans[name]
    records = _record_lines(CAPTURE / name)
    sources = set(result.turns["source_line"]) | set(result.trajectories["source_line"])
    rejected = set(result.rejects["source_line"])
    assert None not in rejected
    assert sources | rejected == set(records)
    assert not sources & rejected
    # The per-file count agrees: parsed + rejected = the whole input.
    assert result.files[0].records + result.rejects.height == len(records)


def test_real_har_entries_are_each_accounted_for():
    for name, lines in (
        ("mitmproxy_error_log.har", [11, 71]),
        ("mitmproxy_successful_log.har", [11, 104]),
    ):
        result = forensics.scan([str(CAPTURE / "real" / name)])
        assert result.turns.is_empty()
        assert result.rejects["source_line"].to_list() == lines
        assert all(
            r.startswith("HAR entry: not an LLM API call (") for r in result.rejects["reason"]
        )


# --- linking ----------------------------------------------------------------------------------


def test_agent_loop_becomes_trajectories_with_history_once(scans):
    result = scans["vllm_agent_loop.jsonl"]
    by_traj = {
        tid: (g.sort("turn_index")["source_line"].to_list(), g.sort("turn_index")["role"].to_list())
        for (tid,), g in result.turns.group_by("trajectory_id")
    }
    assert sorted(by_traj.values()) == [
        ([1, 1, 1, 3, 3], ["system", "user", "assistant", "tool", "assistant"]),
        ([2, 2, 2, 4, 4], ["system", "user", "assistant", "user", "assistant"]),
        ([5, 5, 5], ["system", "user", "assistant"]),
    ]
    assert result.trajectories["turn_count"].to_list() == [5, 5, 3]


def test_request_side_columns(scans):
    result = scans["vllm_agent_loop.jsonl"]
    first = output_at(result, 1)
    assert (first["max_output_tokens"], first["tool_count"], first["tools_attached"]) == (
        512,
        2,
        True,
    )
    assert (first["tool_choice"], first["enable_thinking"], first["stream"]) == (
        "auto",
        False,
        False,
    )
    assert (first["input_tokens"], first["output_tokens"]) == (612, 31)
    # tool_choice "none" detaches the tools, so an empty stop there is no finding.
    none = output_at(result, 5)
    assert (none["tool_count"], none["tools_attached"], none["finish_reason"]) == (2, False, "stop")
    # History turns carry no call columns: they were not produced by a call in this capture.
    history = result.turns.filter(pl.col("role") != "assistant")
    assert history["finish_reason"].null_count() == history.height
    assert history["max_output_tokens"].null_count() == history.height


def test_streams_are_reassembled(scans):
    result = scans["envelopes_streams.jsonl"]
    first = output_at(result, 1)
    assert [(c["id"], c["name"], c["arguments"]) for c in first["tool_calls"]] == [
        ("call_1", "get_order_details", '{"order_id": "#W1"}'),
        ("call_2", "get_order_details", '{"order_id": "#W2"}'),
    ]
    assert first["reasoning"] == "Two orders: look both up."
    assert (first["input_tokens"], first["output_tokens"], first["reasoning_tokens"]) == (
        700,
        42,
        9,
    )
    assert (first["finish_reason"], first["stream"], first["stream_completed"]) == (
        "tool_calls",
        True,
        True,
    )
    assert (first["endpoint"], first["http_status"], first["max_output_tokens"]) == (
        "http://vllm.internal:8000/v1",
        200,
        2048,
    )
    cut = output_at(result, 2)
    assert cut["content"] == "Order #W1 was delivered; order #W2 is"
    assert (cut["finish_reason"], cut["stream_completed"]) == (None, False)
    assert "stream cut off" in cut["error"]
    # OpenRouter: `length` sent twice, then an error object inside the 200 stream.
    capped = output_at(result, 3)
    assert (capped["finish_reason_raw"], capped["content"]) == (
        "length",
        "Refunds arrive like autumn leaves",
    )
    assert capped["error"] == "error inside the stream: 400: Token limit reached"
    assert capped["stream_completed"] is True


def test_failed_call_and_its_retry_stay_in_one_trajectory(scans):
    result = scans["envelopes_streams.jsonl"]
    failed, retried = output_at(result, 4), output_at(result, 5)
    assert failed["trajectory_id"] == retried["trajectory_id"]
    assert (failed["http_status"], failed["error"], failed["content"]) == (
        500,
        "500: CUDA out of memory",
        None,
    )
    assert failed["finish_reason"] is None  # a failed call has no finish reason, never "stop"
    assert (retried["http_status"], retried["finish_reason"]) == (200, "tool_calls")
    assert (
        turns_at(result, 5).height == 1
    )  # the retry re-sent the history: nothing new but its answer


def test_anthropic_messages(scans):
    result = scans["envelopes_streams.jsonl"]
    body = output_at(result, 8)
    assert (body["content"], body["reasoning"]) == (
        "I can help with",
        "The user wants to cancel. Policy says",
    )
    assert (body["finish_reason_raw"], body["finish_reason"]) == ("max_tokens", "max_tokens")
    assert (body["input_tokens"], body["output_tokens"]) == (400, 64)  # input includes cache reads
    assert (body["enable_thinking"], body["reasoning_budget"], body["tools_attached"]) == (
        True,
        1024,
        True,
    )
    system = turns_at(result, 8).row(0, named=True)
    assert (system["role"], system["content"]) == ("system", "You are a retail agent.")
    streamed = output_at(result, 9)
    assert [(c["name"], c["arguments"]) for c in streamed["tool_calls"]] == [
        ("get_order_details", '{"order_id": "#W9"}')
    ]
    assert (streamed["finish_reason_raw"], streamed["finish_reason"]) == ("tool_use", "tool_calls")
    assert (streamed["reasoning"], streamed["output_tokens"], streamed["stream_completed"]) == (
        "Need the order first.",
        48,
        True,
    )


def test_bad_lines_are_rejected_with_their_line(scans):
    rejects = scans["envelopes_streams.jsonl"].rejects
    reasons = dict(zip(rejects["source_line"], rejects["reason"], strict=True))
    assert reasons[6] == "not an LLM API call (GET http://vllm.internal:8000/health)"
    assert reasons[10].startswith("invalid JSON (Unterminated string")


def test_batch_lines_are_joined_on_custom_id(scans):
    result = scans["batch.jsonl"]
    by_traj = {
        tid: g.sort("turn_index").select("source_line", "role").rows()
        for (tid,), g in result.turns.group_by("trajectory_id")
    }
    assert sorted(by_traj.values()) == [
        [(1, "user"), (5, "assistant")],  # task-1: input line 1, output line 5 (out of order)
        [(2, "user"), (4, "assistant")],
        [(3, "user")],  # task-3: asked, never answered
        [(6, "assistant")],  # task-4: answered, request not in the file
        [(7, "user"), (8, "assistant")],  # task-5: the batch error is the turn
    ]
    capped = output_at(result, 5)
    assert (capped["max_output_tokens"], capped["output_tokens"], capped["finish_reason_raw"]) == (
        8,
        8,
        "length",
    )
    failed = output_at(result, 8)
    assert failed["error"] == "server_error: The model produced invalid content."
    assert failed["content"] is None and failed["finish_reason"] is None


def test_har_entries(scans):
    result = scans["agent.har"]
    streamed = output_at(result, 64)  # base64-encoded SSE body
    assert (streamed["content"], streamed["stream_completed"]) == (
        "Sure, which email is on the account?",
        True,
    )
    assert streamed["trajectory_id"] == output_at(result, 11)["trajectory_id"]
    dropped = output_at(result, 166)
    assert (dropped["http_status"], dropped["error"]) == (0, "Connection reset by peer")
    unbuffered = output_at(result, 216)
    assert unbuffered["error"] == "response body not captured"
    assert unbuffered["trajectory_id"] == dropped["trajectory_id"]  # the retry of the dropped call
    assert result.rejects.select("source_line", "reason").rows() == [
        (118, "HAR entry: not an LLM API call (GET http://vllm.internal:8000/v1/models)")
    ]


def test_truncated_har_keeps_complete_entries(tmp_path):
    text = (CAPTURE / "agent.har").read_text()
    cut = tmp_path / "cut.har"
    cut.write_text(text[: text.index('"startedDateTime"', text.index("Connection reset by peer"))])
    result = forensics.scan([str(cut)])
    assert sorted(set(result.turns["source_line"])) == [11, 64, 166]
    assert result.rejects.height == 2  # the GET entry, and the cut
    assert result.rejects["reason"][1].startswith("truncated HAR: the file ends inside an entry")
    assert result.rejects["source_line"][1] == 216


def test_litellm_logs(scans):
    result = scans["litellm_logs.jsonl"]
    empty = output_at(result, 1)
    # LiteLLM rewrites provider finish reasons lossily; the raw column says whose word it is.
    assert (empty["finish_reason_raw"], empty["finish_reason"]) == ("litellm:stop", "stop")
    assert (empty["tools_attached"], empty["max_output_tokens"]) == (
        True,
        2048,
    )  # from proxy_server_request
    assert empty["endpoint"] == "https://generativelanguage.googleapis.com"
    failed = output_at(result, 3)
    assert (failed["http_status"], failed["finish_reason"]) == (429, None)
    assert failed["error"] == "litellm.RateLimitError: Rate limit reached for gpt-4o"
    wrapped = output_at(result, 5)
    assert (wrapped["finish_reason_raw"], wrapped["stream"], wrapped["model"]) == (
        "litellm:length",
        True,
        "qwen3-32b",
    )
    reasons = dict(zip(result.rejects["source_line"], result.rejects["reason"], strict=True))
    assert reasons == {
        2: "LiteLLM log without messages or response (store_prompts_in_spend_logs is off): "
        "nothing to analyse",
        4: "LiteLLM log of an aembedding call: not a chat call",
    }


def test_response_bodies_alone_are_turns(scans):
    result = scans["bodies.json"]
    incomplete = output_at(result, 2)
    assert (incomplete["finish_reason_raw"], incomplete["finish_reason"]) == (
        "max_output_tokens",
        "max_tokens",
    )
    assert (
        incomplete["reasoning"],
        incomplete["reasoning_tokens"],
        incomplete["max_output_tokens"],
    ) == (
        "Working out the refund.",
        128,
        128,
    )
    refusal = output_at(result, 30)
    assert (refusal["finish_reason_raw"], refusal["finish_reason"]) == ("refusal", "content_filter")


def test_raw_sse_file_holds_one_turn_per_stream(scans):
    result = scans["streams.sse"]
    assert result.turns.select("source_line", "finish_reason_raw", "stream_completed").rows() == [
        (1, "length", True),
        (11, "end_turn", True),
        (29, None, False),
    ]


# --- secrets, determinism, CLI ---------------------------------------------------------------


def _all_text(result) -> str:
    parts = []
    for frame in (result.turns, result.trajectories, result.findings, result.rejects):
        parts.append(frame.write_json())
    parts.extend(f"{f.path} {f.reason} {f.note}" for f in result.files)
    return "\n".join(parts)


@pytest.mark.parametrize("name", ["envelopes_streams.jsonl", "agent.har"])
def test_captured_headers_and_keys_never_reach_a_table(scans, name):
    text = _all_text(scans[name])
    for secret in SECRETS:
        assert secret not in text


def test_keys_in_a_rejected_raw_line_are_masked(tmp_path):
    line = '{"request": {"headers": {"x-api-key": "plainsecret123456", "Authorization": '
    line += '"Bearer sk-test-4f9a1c2e7b3d5a8f0e6c"}, "body": {"messages": [oops]}}\n'
    path = tmp_path / "capture.jsonl"
    path.write_text('{"request": {"messages": []}, "response": null}\n' + line)
    result = forensics.scan([str(path)])
    assert result.rejects["source_line"].to_list() == [1, 2]
    text = _all_text(result)
    for secret in SECRETS:
        assert secret not in text


def test_same_input_same_tables(scans):
    again = forensics.scan([str(CAPTURE / "envelopes_streams.jsonl")])
    first = scans["envelopes_streams.jsonl"]
    for table in ("turns", "trajectories", "findings", "rejects"):
        assert getattr(first, table).equals(getattr(again, table)), table


def test_cli_scan_of_a_capture_directory(tmp_path):
    out = tmp_path / "result.json"
    run = CliRunner().invoke(
        cli, ["scan", str(CAPTURE), "--json", str(out), "--no-report", "--explain-formats"]
    )
    assert run.exit_code == 1, run.output
    for fmt in ("api_capture", "har", "litellm_log", "sse_capture"):
        assert fmt in run.output
    doc = json.loads(out.read_text())
    located = {
        (f["rule"], f["source"]["path"].split("/")[-1], f["source"]["line"])
        for f in doc["findings"]
        if f["rule"] in RULES
    }
    assert ("unclosed-think", "vllm_agent_loop.jsonl", 2) in located
    assert ("stop-no-tool-calls", "agent.har", 11) in located
    assert ("unclosed-think", "extracted_interactions.subset.jsonl", 7) in located


# --- edges ------------------------------------------------------------------------------------


def test_an_api_is_read_only_through_its_registered_dialect(monkeypatch):
    """A call is read by the dialect that claims it; without the Gemini dialect in the
    registry, its calls are no LLM API calls (rejected with where they went), not misread."""
    kept = [d for d in exchange.DIALECTS if d.name != "gemini"]
    monkeypatch.setattr(exchange, "DIALECTS", kept)
    result = forensics.scan([str(CAPTURE / "real" / "extracted_interactions.subset.jsonl")])
    reasons = dict(zip(result.rejects["source_line"], result.rejects["reason"], strict=True))
    assert reasons[5].startswith("not an LLM API call (POST https://")
    assert ":generateContent" in reasons[5] or "generativelanguage" in reasons[5]
    assert reasons[4] == "not an LLM API call (POST https://oauth2.googleapis.com/token)"
    assert 5 not in set(result.turns["source_line"])


def test_a_broken_first_line_does_not_hide_the_rest(tmp_path):
    lines = (CAPTURE / "vllm_agent_loop.jsonl").read_text().splitlines()
    path = tmp_path / "capture.jsonl"
    path.write_text("\n".join([lines[0][:300], *lines[1:]]) + "\n")
    result = forensics.scan([str(path)])
    assert result.rejects["source_line"].to_list() == [1]
    assert result.rejects["reason"][0].startswith("invalid JSON (")
    assert set(result.turns["source_line"]) == {2, 3, 4, 5}


def test_gzipped_capture(tmp_path):
    import gzip

    packed = tmp_path / "capture.gz"
    packed.write_bytes(gzip.compress((CAPTURE / "vllm_agent_loop.jsonl").read_bytes()))
    result = forensics.scan([str(packed)])
    assert [f.format for f in result.files] == ["api_capture"]
    assert found(result) == EXPECTED["vllm_agent_loop.jsonl"][1]


def test_huge_capture_line_is_rejected_and_the_rest_read(tmp_path):
    lines = (CAPTURE / "vllm_agent_loop.jsonl").read_text().splitlines()
    short = [line for line in lines if len(line) < 2048]
    path = tmp_path / "capture.jsonl"
    path.write_text("\n".join([short[0], '{"request": "' + "x" * 5000 + '"}', *short[1:]]) + "\n")
    result = forensics.scan(
        [str(path)], settings=Settings(limits=files.Limits(max_line_bytes=2048))
    )
    assert result.rejects.select("source_line").to_series().to_list() == [2]
    assert "longer than 2,048 bytes (the line cap, --max-line-mb)" in result.rejects["reason"][0]
    assert 1 in set(result.turns["source_line"])


def test_records_that_hold_no_call(tmp_path):
    path = tmp_path / "capture.jsonl"
    path.write_text(
        '{"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}\n'
        '{"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}\n'
        '["not", "an", "object"]\n'
        '{"response": {"id": "x", "weird": true}}\n'
    )
    result = forensics.scan([str(path)])
    assert result.turns.select("source_line", "role").rows() == [(1, "user")]
    reasons = dict(zip(result.rejects["source_line"], result.rejects["reason"], strict=True))
    assert reasons == {
        2: "request without a response repeats messages already read: nothing new",
        3: "a JSON list, not a record object",
        4: "not an LLM API call",
    }


# --- request fingerprint, request keys, tool-call types ---------------------------------------


def test_request_fingerprint_marks_a_resent_request(scans):
    result = scans["envelopes_streams.jsonl"]
    answers = result.turns.filter(pl.col("role") == "assistant")
    hashes = dict(zip(answers["source_line"], answers["request_hash"], strict=True))
    assert hashes[4] == hashes[5]  # the retry sent the same body again
    # Lines 8 and 9 send the same messages with other caps: not the same request.
    assert len({hashes[line] for line in (1, 2, 3, 4, 8, 9)}) == 6
    assert all(h is not None and len(h) == 32 for h in hashes.values())


def test_request_keys_list_the_key_paths_of_the_conversation(scans):
    result = scans["envelopes_streams.jsonl"]
    assert output_at(result, 2)["request_keys"] == [
        "chat_template_kwargs",
        "max_completion_tokens",
        "messages",
        "messages[].content",
        "messages[].role",
        "messages[].tool_call_id",
        "messages[].tool_calls",
        "messages[].tool_calls[].function",
        "messages[].tool_calls[].function.arguments",
        "messages[].tool_calls[].function.name",
        "messages[].tool_calls[].id",
        "messages[].tool_calls[].type",
        "model",
        "stream",
        "stream_options",
        "tools",
    ]
    anthropic = output_at(result, 8)["request_keys"]
    assert "messages[].content[].text" in anthropic and "system" in anthropic


def test_tool_calls_without_type_are_counted(tmp_path, scans):
    call = {"id": "a1", "function": {"name": "get_order", "arguments": "{}"}}  # Mistral: no type
    typed = {**call, "id": "a2", "type": "function"}
    body = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "tool_calls": [call, typed]},
                "finish_reason": "tool_calls",
            }
        ],
    }
    chunk = {
        "object": "chat.completion.chunk",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "s1",
                            "type": None,
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    private = {"role": "user", "content": "hi", "metadata": {"_db_id": 7}}
    records = [
        {
            "request": {"model": "mistral-large", "messages": [private], "tools": [{}]},
            "response": body,
        },
        {
            "request": {
                "model": "m",
                "messages": [{"role": "user", "content": "x"}],
                "stream": True,
            },
            "response": "data: " + json.dumps(chunk) + "\n\ndata: [DONE]\n\n",
        },
    ]
    path = tmp_path / "mistral.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = forensics.scan([str(path)])
    assert (
        output_at(result, 1)["tool_calls_without_type"],
        output_at(result, 2)["tool_calls_without_type"],
    ) == (1, 1)
    assert "messages[].metadata._db_id" in output_at(result, 1)["request_keys"]
    # Anthropic blocks have no type field for calls to miss.
    assert output_at(scans["envelopes_streams.jsonl"], 9)["tool_calls_without_type"] is None


def test_streams_without_done_are_split_by_completion_id(tmp_path):
    def chunk(cid, delta, finish=None):
        body = {"id": cid, "object": "chat.completion.chunk"}
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return "data: " + json.dumps(body) + "\n\n"

    text = (
        chunk("a", {"content": "First answer."})
        + chunk("a", {}, "stop")
        + chunk("b", {"content": "Second, cut"})
    )
    path = tmp_path / "streams.txt"
    path.write_text(text)
    result = forensics.scan([str(path)])
    assert result.turns.select(
        "source_line", "content", "finish_reason", "stream_completed"
    ).rows() == [
        (1, "First answer.", "stop", True),
        (5, "Second, cut", None, False),
    ]
