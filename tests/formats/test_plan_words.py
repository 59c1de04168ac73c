"""The validation plan speaks of what was scanned in the words its format declares."""

from __future__ import annotations

import forensics
from forensics import ingest

from conftest import DATA


def plan(path) -> list[str]:
    return forensics.scan(str(path)).diagnosis.validation


def test_an_inspect_log_is_rerun_by_sample_id_and_scanned_again_as_a_log():
    steps = plan(DATA / "agents" / "inspect" / "synthetic_failures.json")
    assert "(inspect eval: --sample-id apierror,condensed)" in steps[0]
    scans = [s for s in steps if s.startswith("Scan the new")]
    assert scans and all(s.startswith("Scan the new log:") for s in scans)


def test_a_transcript_names_no_harness_and_is_no_capture():
    steps = plan(DATA / "traces" / "claude_code" / "stream_json_output_cap.jsonl")
    assert "--task-ids" not in " ".join(steps) and "--sample-id" not in " ".join(steps)
    scans = [s for s in steps if s.startswith("Scan the new")]
    assert scans and all(s.startswith("Scan the new transcript:") for s in scans)


def test_only_api_captures_are_called_captures():
    capture_formats = {
        "gemini", "http_cassette", "har", "litellm_log", "ollama_ndjson", "api_capture",
        "sse_capture",
    }  # fmt: skip
    called = {spec.name for spec in ingest.FORMATS if spec.artifact == "capture"}
    assert called == capture_formats
