"""A directory mixing every trace/transcript/rollout format: each file detected as its format,
nothing rejected, exactly the failures the files hold found, the healthy files clean."""

from __future__ import annotations

from collections import Counter

import forensics

from conftest import DATA

TRACES = DATA / "traces"

EXPECTED_FORMATS = {
    "atropos/cybersec_objreward_group1.jsonl": "atropos_groups",
    "atropos/math_groups.jsonl": "atropos_groups",
    "claude_code/session_errors.jsonl": "claude_code",
    "claude_code/simonw_sample_session.jsonl": "claude_code",
    "claude_code/stream_json_output_cap.jsonl": "claude_code",
    "otlp/file_exporter_genai.jsonl": "otlp_traces",
    "otlp/file_exporter_genai_details.jsonl": "otlp_traces",
    "otlp/file_exporter_genai_events.jsonl": "otlp_traces",
    "otlp/mixed_conventions.json": "otlp_traces",
    "otlp/vercel_ai_sdk.json": "otlp_traces",
    "sdk_repr/langgraph_prints.log": "tau_bench_log",
    "sdk_repr/qwen3_truncated_print.log": "tau_bench_log",
    "sharegpt/glaive_chatml_card.jsonl": "sharegpt",
    "sharegpt/hermes_agent_trajectories.jsonl": "sharegpt",
    "sharegpt/hermes_fc_v1_card.json": "sharegpt",
    "trail/gaia_0ebe673d.json": "trail_spans",
    "trail/gaia_a96c6811_tool_error.json": "trail_spans",
    "trail/swe_f12834d0_rate_limit.steps1and8.json": "trail_spans",
}


def test_mixed_directory_scan():
    result = forensics.scan([str(TRACES)])
    formats = {f.path.split("data/traces/", 1)[1]: f.format for f in result.files}
    assert formats == EXPECTED_FORMATS
    assert result.rejects.is_empty()
    by_file = Counter(
        (path.split("data/traces/", 1)[1], rule)
        for path, rule in zip(result.findings["source_path"], result.findings["rule"], strict=True)
    )
    assert by_file == Counter(
        {
            ("atropos/math_groups.jsonl", "malformed-tool-call"): 1,
            ("atropos/math_groups.jsonl", "unclosed-think"): 1,
            ("claude_code/session_errors.jsonl", "http-error"): 2,
            ("claude_code/session_errors.jsonl", "max-tokens"): 1,
            ("claude_code/stream_json_output_cap.jsonl", "max-tokens"): 1,
            ("otlp/file_exporter_genai.jsonl", "http-error"): 1,
            ("otlp/file_exporter_genai.jsonl", "max-tokens"): 1,
            ("otlp/file_exporter_genai_details.jsonl", "max-tokens"): 1,
            ("otlp/file_exporter_genai_events.jsonl", "max-tokens"): 1,
            ("otlp/mixed_conventions.json", "max-tokens"): 1,
            ("sdk_repr/langgraph_prints.log", "malformed-tool-call"): 1,
            ("sdk_repr/langgraph_prints.log", "max-tokens"): 1,
            ("sdk_repr/qwen3_truncated_print.log", "max-tokens"): 1,
            ("sdk_repr/qwen3_truncated_print.log", "thinking-budget-exhausted"): 1,
            ("sdk_repr/qwen3_truncated_print.log", "unclosed-think"): 1,
            ("sharegpt/hermes_agent_trajectories.jsonl", "malformed-tool-call"): 1,
            # completed: false without an iteration notice: it ended without its answer
            ("sharegpt/hermes_agent_trajectories.jsonl", "run-cut-off"): 1,
            ("sharegpt/hermes_agent_trajectories.jsonl", "unclosed-think"): 1,
            ("sharegpt/hermes_fc_v1_card.json", "malformed-tool-call"): 1,
            # the SWE run that died of a rate limit inside smolagents' AgentGenerationError
            ("trail/swe_f12834d0_rate_limit.steps1and8.json", "env-rate-limited"): 1,
        }
    )
