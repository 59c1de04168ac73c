"""OpenTelemetry traces of LLM calls: OTLP JSON (file exporter lines, one document), GenAI
semantic conventions old and new, OpenInference, OpenLLMetry; conversations across traces."""

from __future__ import annotations

import functools
import json

import forensics
from forensics.ingest import detect
from forensics.ingest.formats import otlp

from conftest import DATA

OTLP = DATA / "traces" / "otlp"
CONV = "file_exporter_genai/task-conv_5j66UpCpwteGg4YSxUnt7lPY/trial-0"


@functools.cache  # one scan per file for the module: the tests only read it
def scan(name: str) -> forensics.ScanResult:
    return forensics.scan([str(OTLP / name)])


def found(result) -> list[tuple[str, str, int, int]]:
    f = result.findings
    return sorted(
        zip(f["rule"], f["trajectory_id"], f["turn_index"], f["source_line"], strict=True)
    )


def test_a_conversation_across_traces_is_one_trajectory_without_repeated_history():
    result = scan("file_exporter_genai.jsonl")
    turns = result.turns.filter(result.turns["trajectory_id"] == CONV)
    assert turns["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    assert turns["source_line"].to_list() == [1, 1, 1, 2, 2]
    call = turns.row(2, named=True)
    assert call["tool_calls"] == [
        {
            "id": "call_VSPygqKTWdrhaFErNvMV18Yl",
            "name": "get_weather",
            "arguments": '{"location": "Paris"}',
        }
    ]
    assert (call["finish_reason"], call["input_tokens"], call["output_tokens"]) == (
        "tool_calls",
        92,
        17,
    )
    assert call["tools_attached"] is True and call["endpoint"] == "api.openai.com"
    assert turns.row(3, named=True)["content"] == "rainy, 57°F"
    answer = turns.row(4, named=True)
    assert (answer["finish_reason_raw"], answer["output_tokens"], answer["max_output_tokens"]) == (
        "length", 256, 256,
    )  # fmt: skip
    assert answer["model"] == "gpt-4o-mini-2024-07-18"


def test_file_exporter_findings_and_the_healthy_trace_stays_clean():
    result = scan("file_exporter_genai.jsonl")
    failed = "file_exporter_genai/task-a3ce929d0e0e47364bf92f3577b34da6/trial-0"
    assert found(result) == [("http-error", failed, 0, 2), ("max-tokens", CONV, 4, 2)]
    assert result.trajectories.height == 3 and result.rejects.is_empty()
    assert "1 span(s) or log record(s) that are not model calls" in result.files[0].note
    error = result.turns.filter(result.turns["trajectory_id"] == failed).row(0, named=True)
    assert error["http_status"] == 429 and error["error"].startswith("Error code: 429")


def test_openinference_openllmetry_and_event_conventions_in_one_document():
    result = scan("mixed_conventions.json")
    assert result.rejects.is_empty()
    by_task = {
        t: result.turns.filter(result.turns["task_id"] == t)
        for t in result.turns["task_id"].unique()
    }
    oi = by_task["03cb2eb84dd52ac9bc1496a99c733880"]  # base64 ids decoded to hex
    assert oi["role"].to_list() == ["system", "user", "assistant"]
    assert oi.row(2, named=True)["content"] == "Hey there! 😊👋 What’s up? 🌟"
    assert oi.row(2, named=True)["finish_reason"] == "stop"  # from the raw response in output.value
    events = by_task["d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6"]
    assert events["content"].to_list() == [
        "Analyze this trace",
        "The trace shows one slow database call in the checkout span.",
    ]
    # Each call is located at its span in the pretty-printed document.
    assert sorted(result.turns["source_line"].unique().to_list()) == [41, 160, 267]
    assert found(result) == [
        ("max-tokens", "mixed_conventions/task-c7ad6b7169203331a1b2c3d4e5f60718/trial-0", 1, 160)
    ]


def test_console_exporter_spans_are_read(tmp_path):
    span = {
        "name": "chat llama3",
        "context": {
            "trace_id": "0x5b8efff798038103d269b633813fc60c",
            "span_id": "0x051581bf3cb55c13",
        },
        "kind": "SpanKind.CLIENT",
        "parent_id": None,
        "start_time": "2025-06-01T10:00:00.000000Z",
        "end_time": "2025-06-01T10:00:02.000000Z",
        "status": {"status_code": "UNSET"},
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "llama3",
            "gen_ai.request.max_tokens": 32,
            "gen_ai.response.finish_reasons": ["length"],
            "gen_ai.usage.output_tokens": 32,
        },
        "events": [],
        "links": [],
        "resource": {"attributes": {"service.name": "bot"}, "schema_url": ""},
    }
    path = tmp_path / "console.json"
    path.write_text(json.dumps(span, indent=4) + "\n" + json.dumps(span | {"name": "x"}, indent=4))
    result = forensics.scan([str(path)])
    assert result.files[0].format == otlp.FORMAT
    # The exporter prints one object per span, one after another: each is read.
    assert result.turns["finish_reason"].to_list() == ["max_tokens", "max_tokens"]
    assert result.rejects.is_empty()
    path.write_text(path.read_text() + "\nnot json")
    result = forensics.scan([str(path)])
    assert result.turns.height == 2 and result.rejects["reason"].to_list() == [
        "data after the end of the JSON document (8 chars) was not read"
    ]


def test_bad_lines_are_rejected_and_the_rest_is_read(tmp_path):
    lines = (OTLP / "file_exporter_genai.jsonl").read_text().splitlines()
    path = tmp_path / "cut.jsonl"
    path.write_text(
        "\n".join([lines[0][:300], json.dumps({"resourceMetrics": []}), lines[1]]) + "\n"
    )
    result = forensics.scan([str(path)])
    assert sorted(result.rejects["source_line"].to_list()) == [1, 2]
    assert result.trajectories.height == 3


def test_a_null_or_scalar_record_is_a_reject_naming_it_not_a_reader_failure(tmp_path):
    lines = (OTLP / "file_exporter_genai.jsonl").read_text().splitlines()
    path = tmp_path / "nulls.jsonl"
    path.write_text("\n".join([lines[0], "null", "3", lines[1]]) + "\n")
    rejects = forensics.scan([str(path)]).rejects.sort("source_line")
    assert rejects["source_line"].to_list() == [2, 3]
    assert rejects["excerpt"].to_list() == ["null", "3"]
    assert not any("bug in forensics" in r for r in rejects["reason"].to_list())


def test_detection():
    for name in ("file_exporter_genai.jsonl", "mixed_conventions.json"):
        fmt, _why = detect((OTLP / name).read_bytes())
        assert fmt is not None and fmt.name == otlp.FORMAT


def test_log_events_of_a_call_are_read_as_that_call():
    result = scan("file_exporter_genai_events.jsonl")
    assert result.rejects.is_empty() and result.files[0].format == otlp.FORMAT
    turns = result.turns
    assert turns["role"].to_list() == ["system", "user", "assistant"]
    assert turns["content"][1].startswith("Explain the CAP theorem")
    assert turns.row(2, named=True)["finish_reason_raw"] == "length"
    assert found(result) == [
        (
            "max-tokens",
            "file_exporter_genai_events/task-7d2a3f9c1b4e5a6d8c0f1e2d3c4b5a69/trial-0",
            2,
            1,
        )
    ]
    assert "1 span(s) or log record(s)" in result.files[0].note


def test_old_content_events_with_plain_text(tmp_path):
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "openai.chat.completions",
        "startTimeUnixNano": "1730000000000000000",
        "attributes": [
            {"key": "gen_ai.system", "value": {"stringValue": "openai"}},
            {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [
                {"stringValue": "length"}]}}},
        ],
        "events": [
            {"name": "gen_ai.content.prompt", "attributes": [
                {"key": "gen_ai.prompt", "value": {"stringValue": "user: What is tracing?"}}]},
            {"name": "gen_ai.content.completion", "attributes": [
                {"key": "gen_ai.completion", "value": {"stringValue": "LLM Observability is"}}]},
        ],
    }  # fmt: skip
    path = tmp_path / "openlit.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    result = forensics.scan([str(path)])
    assert result.turns["role"].to_list() == ["user", "assistant"]
    assert result.turns["content"].to_list() == [
        "user: What is tracing?",
        "LLM Observability is",
    ]
    assert result.turns["finish_reason"].to_list() == [None, "max_tokens"]


def test_vercel_ai_sdk_generate_span():
    result = scan("vercel_ai_sdk.json")
    assert result.rejects.is_empty() and result.findings.is_empty()
    turns = result.turns
    assert turns["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    call = turns.row(2, named=True)["tool_calls"][0]
    assert (call["name"], call["arguments"]) == (
        "get_lat_lng",
        '{"location_description": "London"}',
    )
    answer = turns.row(4, named=True)
    assert (answer["finish_reason"], answer["input_tokens"], answer["output_tokens"]) == (
        "stop", 1507, 416,
    )  # fmt: skip
    assert answer["model"] == "gpt-4-0613" and answer["tools_attached"] is True


def test_events_kept_in_one_span_attribute(tmp_path):
    # The event list shape of pydantic/logfire-js ai-attr-sample.mock.ts (MIT), shortened.
    events = [
        {"content": "You are a weather analysis system.", "event.name": "gen_ai.system.message",
         "role": "system"},
        {"content": ["Analyze the weather in London."], "event.name": "gen_ai.user.message",
         "role": "user"},
        {"content": None, "event.name": "gen_ai.assistant.message", "role": "assistant",
         "tool_calls": [{"function": {"arguments": {"location_description": "London"},
                                      "name": "get_lat_lng"},
                         "id": "call_CxtriP90qBV77ZfK8s2ngg3A", "type": "tool-call"}]},
        {"content": {"lat": 51.5074, "lng": -0.1278}, "event.name": "gen_ai.tool.message",
         "id": "call_CxtriP90qBV77ZfK8s2ngg3A", "role": "tool"},
        {"event.name": "gen_ai.choice", "index": 0,
         "message": {"role": "assistant", "content": "London: 21°C, sunny."}},
    ]  # fmt: skip
    span = {
        "traceId": "6f1c0a9e2d4b4c7a8e3f5a1b2c3d4e5f",
        "spanId": "9c8b7a6f5e4d3c2b",
        "name": "chat gpt-4o",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
            {"key": "events", "value": {"stringValue": json.dumps(events)}},
            {"key": "gen_ai.response.finish_reasons",
             "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}},
        ],
    }  # fmt: skip
    path = tmp_path / "pydantic_ai.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty() and result.findings.is_empty()
    turns = result.turns
    assert turns["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    assert turns["tool_calls"][2][0]["name"] == "get_lat_lng"
    assert turns.row(4, named=True)["finish_reason"] == "stop"


def test_content_in_the_operation_details_log_event_is_read_as_the_call():
    """Conventions 1.37+: one `gen_ai.client.inference.operation.details` event per call holds
    its messages as structured values and the call's attributes (opentelemetry-util-genai)."""
    result = scan("file_exporter_genai_details.jsonl")
    assert result.rejects.height == 0
    turns = result.turns
    assert turns["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    assert turns["span_id"].to_list() == ["eee19b7ec3c1b174"] * 3 + ["a1b2c3d4e5f60718"] * 2
    call = turns.row(2, named=True)
    assert call["tool_calls"] == [
        {
            "id": "call_VSPygqKTWdrhaFErNvMV18Yl",
            "name": "get_weather",
            "arguments": '{"location": "Paris"}',
        }
    ]
    # The semconv spells it tool_call: a call, not an unknown stop.
    assert (call["finish_reason_raw"], call["finish_reason"]) == ("tool_call", "tool_calls")
    assert turns.row(3, named=True)["content"] == "rainy, 57°F"
    answer = turns.row(4, named=True)
    assert (answer["finish_reason"], answer["output_tokens"], answer["max_output_tokens"]) == (
        "max_tokens", 256, 256,
    )  # fmt: skip
    assert answer["reasoning_tokens"] == 0  # gen_ai.usage.reasoning.output_tokens
    assert found(result) == [
        ("max-tokens", "file_exporter_genai_details/task-conv_details_1/trial-0", 4, 1)
    ]


def test_content_in_the_operation_details_span_event_completes_the_span(tmp_path):
    """The same event attached to the inference span: its messages are the span's."""

    def s(v):
        return {"stringValue": v}

    def kv(d):
        return {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in d.items()]}}

    def msg(role, text):
        part = kv({"type": s("text"), "content": s(text)})
        return kv({"role": s(role), "parts": {"arrayValue": {"values": [part]}}})

    span = {
        "traceId": "5b8efff798038103d269b633813fc60d",
        "spanId": "0123456789abcdef",
        "name": "chat gpt-4o-mini",
        "startTimeUnixNano": "1737022800000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": s("chat")},
            {
                "key": "gen_ai.response.finish_reasons",
                "value": {"arrayValue": {"values": [s("stop")]}},
            },
        ],
        "events": [
            {
                "name": "gen_ai.client.inference.operation.details",
                "attributes": [
                    {
                        "key": "gen_ai.input.messages",
                        "value": {"arrayValue": {"values": [msg("user", "hi")]}},
                    },
                    {
                        "key": "gen_ai.output.messages",
                        "value": {"arrayValue": {"values": [msg("assistant", "hello")]}},
                    },
                ],
            }
        ],
    }
    path = tmp_path / "spans.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    result = forensics.scan([str(path)])
    rows = result.turns.select("role", "content", "finish_reason", "span_id").rows()
    assert rows == [
        ("user", "hi", None, "0123456789abcdef"),
        ("assistant", "hello", "stop", "0123456789abcdef"),
    ]
