"""Claude Code session transcripts: block lines merged into turns, tool results, synthetic API
errors (529, the output-token cap), sidechains, metadata lines."""

from __future__ import annotations

import functools
import json

import forensics
from forensics.ingest import detect
from forensics.ingest.formats import claude_code

from conftest import DATA

CC = DATA / "traces" / "claude_code"
SESSION = "session_errors/task-7c1e2d9a-4b3f-4e21-9a55-0d6f2b8c1e77/trial-0"


@functools.cache  # one scan per file for the module: the tests only read it
def scan(name: str) -> forensics.ScanResult:
    return forensics.scan([str(CC / name)])


def test_blocks_of_one_response_are_one_turn_with_the_last_stop_reason_and_usage():
    result = scan("session_errors.jsonl")
    turns = result.turns.filter(result.turns["trajectory_id"] == SESSION)
    assert turns["role"].to_list() == [
        "user", "assistant", "tool", "assistant", "user", "assistant", "user", "assistant",
        "assistant",
    ]  # fmt: skip
    first = turns.row(1, named=True)
    assert first["source_line"] == 3  # where the response's first block was written
    assert first["reasoning"] == "The user wants the tests run. I'll use pytest."
    assert first["content"] == "I'll run the tests."
    assert [c["name"] for c in first["tool_calls"]] == ["Bash"]
    assert json.loads(first["tool_calls"][0]["arguments"])["command"] == "pytest -q"
    assert (first["finish_reason"], first["finish_reason_raw"]) == ("tool_calls", "tool_use")
    assert (first["input_tokens"], first["output_tokens"]) == (4 + 1210 + 15002, 95)
    assert first["model"] == "claude-sonnet-4-5-20250929" and first["tools_attached"] is True
    tool = turns.row(2, named=True)
    assert tool["actor"] == "env" and tool["error"].startswith("Exit code 1")


def test_synthetic_api_errors_become_failed_turns_and_are_found():
    result = scan("session_errors.jsonl")
    turns = result.turns.filter(result.turns["trajectory_id"] == SESSION)
    overloaded, capped = turns.row(5, named=True), turns.row(7, named=True)
    assert overloaded["http_status"] == 529 and overloaded["model"] is None
    assert overloaded["error"].startswith("server_error · API Error: 529")
    assert capped["finish_reason"] == "max_tokens" and capped["max_output_tokens"] == 32000
    assert capped["output_tokens"] is None  # the synthetic line's zero usage is not the call's
    f = result.findings
    assert sorted(
        zip(f["rule"], f["trajectory_id"], f["turn_index"], f["source_line"], strict=True)
    ) == [
        ("http-error", SESSION, 5, 10),
        ("http-error", SESSION, 8, 15),
        ("max-tokens", SESSION, 7, 12),
    ]
    retry = turns.row(8, named=True)  # a system api_error line: the attempt before a retry
    assert (retry["http_status"], retry["error"]) == (529, "Overloaded (retry 1 of 10)")


def test_sidechain_is_its_own_trajectory_and_metadata_lines_are_noted():
    result = scan("session_errors.jsonl")
    assert sorted(result.trajectories["task_id"].to_list()) == [
        "7c1e2d9a-4b3f-4e21-9a55-0d6f2b8c1e77",
        "7c1e2d9a-4b3f-4e21-9a55-0d6f2b8c1e77/agent-ab12cd34",
    ]
    assert result.rejects.is_empty()
    assert "2 session metadata line(s)" in result.files[0].note


def test_healthy_public_sample_is_read_whole_and_stays_clean():
    result = scan("simonw_sample_session.jsonl")
    assert result.files[0].format == claude_code.FORMAT
    assert result.trajectories.height == 1 and result.turns.height == 7
    assert result.findings.is_empty() and result.rejects.is_empty()


def test_broken_lines_are_rejected_and_the_rest_is_read(tmp_path):
    lines = (CC / "session_errors.jsonl").read_text().splitlines()
    lines[3] = lines[3][:50]  # a line cut by a crash
    lines.insert(5, json.dumps({"type": "assistant", "sessionId": "x", "parentUuid": None}))
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = forensics.scan([str(path)])
    assert sorted(result.rejects["source_line"].to_list()) == [4, 6]
    assert result.turns.height == 11  # the cut line was a block of a response still read


def test_detection_from_the_first_line():
    for name in ("session_errors.jsonl", "simonw_sample_session.jsonl"):
        fmt, _why = detect((CC / name).read_bytes())
        assert fmt is not None and fmt.name == claude_code.FORMAT


def test_stream_json_output_ends_with_its_result_line():
    result = scan("stream_json_output_cap.jsonl")
    assert result.files[0].format == claude_code.FORMAT and result.rejects.is_empty()
    (episode,) = result.trajectories.to_dicts()
    assert episode["termination_reason"] == "success"
    assert episode["error"].startswith("API Error: Claude's response exceeded the 32000")
    turns = result.turns
    assert turns["role"].to_list() == ["assistant", "tool", "assistant"]
    assert [c["name"] for c in turns["tool_calls"][0]] == ["Bash"]
    f = result.findings
    assert list(zip(f["rule"], f["turn_index"], f["source_line"], strict=True)) == [
        ("max-tokens", 2, 5)
    ]


def _line(kind, content, msg_id=None, stop=None, n=0):
    message = {"role": kind, "content": content}
    if kind == "assistant":
        usage = {"input_tokens": 3, "cache_read_input_tokens": 9000, "output_tokens": 80}
        message |= {"id": msg_id, "model": "claude-sonnet-4-5", "stop_reason": stop, "usage": usage}
    return json.dumps(
        {"type": kind, "sessionId": "s1", "parentUuid": None, "uuid": f"u{n}", "message": message}
    )


def test_a_block_written_after_the_result_of_an_earlier_call_still_joins_its_response(tmp_path):
    # Claude Code runs a call as soon as its block is complete: its result can be written
    # before the response's next tool_use block (same message.id), which is the same turn.
    call = {"type": "tool_use", "id": "toolu_A", "name": "Read", "input": {"file_path": "/a"}}
    other = {"type": "tool_use", "id": "toolu_B", "name": "Read", "input": {"file_path": "/b"}}
    lines = [
        _line("user", "Compare /a and /b.", n=1),
        _line("assistant", [{"type": "text", "text": "Reading both."}], "msg_1", None, 2),
        _line("assistant", [call], "msg_1", None, 3),
        _line("user", [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "a"}], n=4),
        _line("assistant", [other], "msg_1", "tool_use", 5),
        _line("assistant", [call], "msg_1", "tool_use", 6),  # written again: not a third call
        _line("user", [{"type": "tool_result", "tool_use_id": "toolu_B", "content": "b"}], n=7),
        _line("assistant", [{"type": "text", "text": "They differ."}], "msg_2", "end_turn", 8),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = forensics.scan([str(path)])
    turns = result.turns
    assert turns["role"].to_list() == ["user", "assistant", "tool", "tool", "assistant"]
    first = turns.row(1, named=True)
    assert [c["id"] for c in first["tool_calls"]] == ["toolu_A", "toolu_B"]
    assert (first["content"], first["finish_reason_raw"]) == ("Reading both.", "tool_use")
    assert turns["tool_call_id"].to_list()[2:4] == ["toolu_A", "toolu_B"]


# --- issue 21: a stream-json run that stops without its result line -------------------------

ROAST = DATA / "corpus" / "files" / "claude_code" / "Shopify__roast__simple_agent.stdout.txt"


def test_a_whole_stream_json_run_is_not_cut_off():
    result = forensics.scan([str(ROAST)])
    assert result.trajectories["termination_reason"].to_list() == ["success"]
    assert result.findings.is_empty()


def test_stream_json_without_its_result_line_is_one_cut_off_finding(tmp_path):
    # The real Roast output with its closing result line gone, as a killed `claude -p` leaves it.
    lines = ROAST.read_text().splitlines(keepends=True)
    cut = tmp_path / "killed.stdout.txt"
    cut.write_text("".join(lines[:3]))
    result = forensics.scan([str(cut)])
    assert result.rejects.is_empty()
    f = result.findings
    assert list(zip(f["rule"], f["turn_index"], f["source_line"], strict=True)) == [
        ("run-cut-off", 0, 2)
    ]
    assert f["message"][0] == (
        "run cut off: the Claude Code stream-json output ends without its closing `result` line"
    )
    assert f["evidence"][0].startswith('last line: {"message": {"content": [{"text": "Caspian')


def test_a_crash_written_between_the_stream_lines_is_the_evidence(tmp_path):
    lines = ROAST.read_text().splitlines(keepends=True)
    crash = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/roast/workflow.py", line 88, in run\n'
        "    result = step.call()\n"
        "BrokenPipeError: [Errno 32] Broken pipe\n"
    )
    cut = tmp_path / "crashed.stdout.txt"
    cut.write_text("".join(lines[:2]) + crash)
    result = forensics.scan([str(cut)])
    # The crash lines are rejected as lines (nothing is lost) and quoted once, as the cut-off's
    # evidence, instead of standing alone.
    assert result.rejects["source_line"].to_list() == [3, 4, 5, 6]
    (finding,) = result.findings.iter_rows(named=True)
    assert (finding["rule"], finding["turn_index"], finding["source_line"]) == ("run-cut-off", 0, 2)
    assert finding["evidence"].startswith("line 3: Traceback (most recent call last):\n")
    assert finding["evidence"].endswith("BrokenPipeError: [Errno 32] Broken pipe")
    assert json.loads(finding["details"]) == {"crash": True}


def test_a_session_file_has_no_closing_line_to_miss():
    # Native session transcripts are not streams: a later session may resume them.
    result = scan("simonw_sample_session.jsonl")
    assert result.trajectories["termination_reason"].to_list() == [None]
    assert result.findings.is_empty()
