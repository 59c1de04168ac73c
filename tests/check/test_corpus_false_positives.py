"""Regression tests for the real corpus's false positives (tests/data/corpus/FALSE_POSITIVES.md).

Each test scans the corpus file and holds the rule silent at the place the adjudication found
it wrong, and where the same file has a true incident, keeps that finding.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from conftest import ROOT

_spec = importlib.util.spec_from_file_location(
    "accuracy_real", ROOT / "benchmarks" / "accuracy_real.py"
)
assert _spec and _spec.loader
ar = importlib.util.module_from_spec(_spec)
sys.modules["accuracy_real"] = ar  # dataclasses resolve their module by name
_spec.loader.exec_module(ar)

SK = "microsoft__semantic-kernel__openai_"
SK_CAPTURE = f"files/api_capture/{SK}chat_completion_multiple_function_calls.json"
SK_STREAM = f"files/sse_capture/{SK}streaming_multiple_function_calls.txt"
AZURE_FILTER = "files/sse_capture/microsoft__semantic-kernel__azure_streaming_async_filter.txt"
HAIKU_JSON = (
    "files/http_cassette/alexrudall__anthropic__claude-3-haiku_malformed_streaming_json.yml"
)
HARBOR_FAIL = "files/harbor_atif/wrongbutworks__harbor__atif2otel_trajectory_fail.json"


def _scan(file: str) -> list[tuple[str, int | None, int | None]]:
    found = ar.scan_corpus([file], jobs=1)[file]["findings"]
    return sorted((f.rule, f.turn_index, f.source_line) for f in found)


@pytest.mark.parametrize("file", [SK_CAPTURE, SK_STREAM])
def test_bare_word_arguments_are_malformed_not_cut_off(file):
    """`"invalid_arguments_format"` is no JSON prefix and no cap was hit: malformed-tool-call
    reports it (turn 0, line 1), length-as-tool-calls does not."""
    assert _scan(file) == [("malformed-tool-call", 0, 1)]


def test_azure_content_filter_chunks_belong_to_the_stream():
    """The prompt-filter chunk before the answer and the asynchronous filter annotations after
    the finish chunk carry an empty id: one complete stream, no stream-cut-off."""
    assert _scan(AZURE_FILTER) == []


def test_json_answer_without_tools_is_no_text_tool_call():
    """The request offers no tools and asks for JSON: the streamed objects (turn 2, line 3) are
    the answer, not a tool call written as text."""
    assert ("invalid-text-tool-call", 2, 3) not in _scan(HAIKU_JSON)


def test_prompt_growing_on_every_call_is_no_plateau():
    """Prompt tokens 106370, 106458, 106548 (turn 39, line 723): within 2% but growing."""
    assert not [f for f in _scan(HARBOR_FAIL) if f[0] == "silent-prompt-truncation"]


GLAIVE = "files/sharegpt/hiyouga__LLaMA-Factory__glaive_toolcall_en_demo.json"
CTF_EPS = "files/swe_agent_traj/SWE-agent__SWE-agent__ctf_crypto_eps.traj"


@pytest.mark.parametrize("file", [GLAIVE, CTF_EPS])
def test_data_literals_are_no_repetition(file):
    """A pasted hex registry value (glaive trial 243, turns 0 and 1) and a binary CTF payload
    (ctf_crypto_eps turn 16) compress like loops; they are one word of data each."""
    assert not [f for f in _scan(file) if f[0] == "think-loop"]


TAU_FORK = (
    "files/tau_bench_results/avaljotsingh__tau-bench__tool-calling-preconditions_0627144318.json"
)


def test_result_named_after_another_tool_is_an_id_mismatch():
    """The think call's id is answered first by a result named list_all_product_types (turn
    3), then reused by the next think call (turn 4, line 128): tool-call-ids reports it there."""
    hits = [f for f in _scan(TAU_FORK) if f[0] == "tool-call-ids"]
    assert ("tool-call-ids", 4, 128) in hits
    assert len(hits) == 9


MINI_SWE = "files/mini_swe_agent/SWE-agent__mini-swe-agent__local.traj.json"


def test_a_harness_observation_is_no_user_simulator():
    """mini-swe-agent's `user` messages are its environment's observations: the last, empty one
    (turn 5, line 22) is the output of the submit command, not a silent user simulator."""
    assert not [f for f in _scan(MINI_SWE) if f[0] == "user-sim-fault"]


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_a_context_overflow_is_one_incident_not_also_an_http_error(provider):
    """The one 400 of each cassette (turn 11, line 3) is the prompt overflowing the window:
    context-overflow reports it, http-error does not count it a second time."""
    file = f"files/http_cassette/crmne__ruby_llm__{provider}_context_length_exceeded.yml"
    found = _scan(file)
    assert ("context-overflow", 11, 3) in found
    assert not [f for f in found if f[0] == "http-error"]
