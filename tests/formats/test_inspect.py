"""Inspect AI logs (.eval ZIP, deflate or zstd members; .json) read into the tables."""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
import zstandard

import forensics
from forensics.ingest import detect, ingest
from forensics.ingest.parse import files

DATA = Path(__file__).parent.parent / "data" / "agents" / "inspect"


def _rows(frame, *cols):
    return [tuple(r) for r in frame.select(*cols).iter_rows()]


def _zstd_copy(src: Path, dst: Path) -> None:
    """The archive with every member recompressed as Inspect >= 0.3.206 writes it (ZIP
    method 93, zstd), written by hand since zipfile can not write that method."""
    local, central = b"", b""
    with zipfile.ZipFile(src) as archive:
        for info in archive.infolist():
            data = archive.read(info)
            packed = zstandard.ZstdCompressor().compress(data)
            name = info.filename.encode()
            crc = zlib.crc32(data)
            head = struct.pack("<4s5H3L2H", b"PK\x03\x04", 63, 0, 93, 0, 0, crc, len(packed),
                               len(data), len(name), 0)  # fmt: skip
            central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 63, 63, 0, 93, 0, 0, crc,
                                   len(packed), len(data), len(name), 0, 0, 0, 0, 0,
                                   len(local)) + name  # fmt: skip
            local += head + name + packed
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, central.count(b"PK\x01\x02"),
                      central.count(b"PK\x01\x02"), len(central), len(local), 0)  # fmt: skip
    dst.write_bytes(local + central + end)


def test_eval_archive_is_claimed_by_its_members_not_called_binary():
    head = files.head(DATA / "log_formats.eval")
    fmt, why = detect(head, DATA / "log_formats.eval")
    assert fmt is not None and fmt.name == "inspect_eval", why
    other = b"PK\x03\x04" + b"\x00" * 22 + struct.pack("<H", 8) + b"\x00\x00" + b"word.xml"
    fmt, why = detect(other, Path("report.docx"))
    assert fmt is None and "binary" in why


def test_eval_members_are_turns_located_by_archive_member_and_line():
    path = DATA / "log_message_deduplication.eval"
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty()
    turns = result.turns
    assert turns.height == 12
    assert set(turns["source_path"]) == {f"{path}!samples/0_epoch_1.json"}
    assert set(turns["source_line"]) == {1}  # Inspect writes members on one line
    assert turns["actor"].to_list()[:3] == ["user_sim", "agent", "env"]
    assert turns["tool_calls"][1].to_list() == [
        {"id": "hardcoded_0", "name": "bash", "arguments": '{"cmd": "ls"}'}
    ]
    # The model calls are matched to their messages by id: the last one stopped.
    assert turns["finish_reason_raw"].to_list()[-1] == "stop"
    assert (
        turns.filter(turns["actor"] == "agent")["tool_count"].to_list() == [2] * 6
    )  # bash and python
    (traj,) = result.trajectories.iter_rows(named=True)
    assert (traj["task_id"], traj["trial"], traj["reward"]) == ("0", 1, 0.0)
    assert traj["ingest_note"] is None  # every model call produced a message of the sample


def test_zstd_members_read_like_deflated_ones(tmp_path, scan_of):
    src = DATA / "websearch.eval"
    zst = tmp_path / "websearch.eval"
    _zstd_copy(src, zst)
    with zipfile.ZipFile(zst) as archive:
        assert {i.compress_type for i in archive.infolist()} == {93}
    deflated, zstd = scan_of(src), forensics.scan([str(zst)])
    assert zstd.rejects.is_empty()
    cols = ("turn_index", "actor", "content", "finish_reason", "output_tokens",
            "max_output_tokens", "model")  # fmt: skip
    assert _rows(zstd.turns, *cols) == _rows(deflated.turns, *cols)
    agent = zstd.turns.filter(zstd.turns["actor"] == "agent").row(0, named=True)
    assert (agent["max_output_tokens"], agent["finish_reason"]) == (32000, "stop")
    assert agent["model"] == "anthropic/claude-sonnet-4-5"


def test_damaged_member_is_rejected_and_the_others_read(tmp_path):
    zst = tmp_path / "run.eval"
    _zstd_copy(DATA / "log_formats.eval", zst)
    raw = bytearray(zst.read_bytes())
    with zipfile.ZipFile(zst) as archive:
        info = archive.getinfo("samples/1_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename)
    raw[start + 20 : start + 40] = b"\x00" * 20  # inside the sample's compressed bytes
    zst.write_bytes(bytes(raw))
    result = forensics.scan([str(zst)])
    assert result.turns.is_empty()
    (reject,) = result.rejects.iter_rows(named=True)
    assert reject["source_path"] == f"{zst}!samples/1_epoch_1.json"
    assert reject["reason"].startswith("damaged member")
    assert result.files[0].format == "inspect_eval"


def test_cut_archive_is_one_reject_never_a_crash(tmp_path):
    cut = tmp_path / "cut.eval"
    cut.write_bytes((DATA / "log_formats.eval").read_bytes()[:1500])
    result = forensics.scan([str(cut)])
    assert result.turns.is_empty()
    assert result.rejects.height == 1
    assert result.rejects["reason"][0].startswith("not a readable ZIP archive (BadZipFile")


def test_length_stop_reason_of_an_old_json_log_is_a_max_tokens_finding():
    """inspect_ai's own fixture: `max_tokens: 1` in the plan, the answer stopped at `length`."""
    path = DATA / "log_length_stop_reason.json"
    result = forensics.scan([str(path)])
    agent = result.turns.filter(result.turns["actor"] == "agent").row(0, named=True)
    assert (agent["finish_reason_raw"], agent["finish_reason"]) == ("length", "max_tokens")
    assert (agent["output_tokens"], agent["max_output_tokens"]) == (1, 1)
    assert _rows(result.findings, "rule", "turn_index", "source_path", "source_line") == [
        ("max-tokens", 1, str(path), 87)
    ]


def test_tool_errors_of_every_type_reach_the_tool_turns():
    result = forensics.scan([str(DATA / "log_tool_call_error.json")])
    errors = result.turns["error"].to_list()
    assert [e.split(":")[0] for e in errors] == [
        "parsing", "timeout", "parsing", "unicode_decode", "permission", "file_not_found",
        "is_a_directory", "limit", "approval", "unknown", "output_limit",
    ]  # fmt: skip
    assert set(result.turns["actor"]) == {"env"}


FAILURES = DATA / "synthetic_failures.json"


def test_failure_shapes_become_turn_and_trajectory_columns(scan_of):
    result = scan_of(FAILURES)
    assert result.rejects.is_empty()
    turns = {(r["task_id"], r["turn_index"]): r for r in result.turns.iter_rows(named=True)}
    truncated = turns[("truncated", 1)]
    assert truncated["reasoning"] == "The test fails because the parser"
    assert truncated["content"] == "Let me look at the parser first. I will run"
    assert (truncated["finish_reason"], truncated["output_tokens"]) == ("max_tokens", 512)
    assert (truncated["max_output_tokens"], truncated["reasoning_tokens"]) == (512, 400)
    assert truncated["tools_attached"] is True and truncated["tool_choice"] == "auto"
    parse = turns[("toolfail", 1)]
    assert parse["error"].startswith("tool call bash arguments did not parse: Expecting ','")
    assert turns[("toolfail", 4)]["error"] == "timeout: Command timed out before completing."
    condensed = turns[("condensed", 1)]
    # attachment:// references resolved; a redacted reasoning block reads as its summary
    assert condensed["content"] == "The document is about"
    assert condensed["reasoning"] == "Considered the context budget."
    assert turns[("condensed", 0)]["content"].startswith("Summarise this very long document")
    assert condensed["finish_reason"] == "model_length"
    assert turns[("filtered", 1)]["finish_reason"] == "content_filter"
    trajs = {r["task_id"]: r for r in result.trajectories.iter_rows(named=True)}
    assert trajs["toolfail"]["termination_reason"] == "token_limit"
    assert trajs["toolfail"]["trial"] == 2
    assert trajs["condensed"]["termination_reason"] == "error"
    assert trajs["condensed"]["error"] == "RuntimeError: sandbox container exited (137)"
    assert trajs["condensed"]["ingest_note"].startswith("1 model call(s) produced no message")
    assert {t: r["reward"] for t, r in trajs.items()} == {
        "truncated": 0.0, "toolfail": 0.0, "condensed": None, "filtered": 1.0, "apierror": 0.0
    }  # fmt: skip
    assert set(result.trajectories["agent_model"]) == {"openai/qwen3-8b"}


def test_failure_shapes_are_found_at_their_turns(scan_of):
    result = scan_of(FAILURES)
    found = {
        (r["rule"], r["task_id"], r["turn_index"], r["source_line"])
        for r in result.findings.iter_rows(named=True)
    }
    assert {
        ("max-tokens", "truncated", 1, 135),
        ("context-overflow", "condensed", 1, 424),
        ("content-filtered", "filtered", 1, 537),
        ("context-overflow", "apierror", 1, 607),
    } <= found


@pytest.mark.parametrize("name", ["log_formats.eval", "websearch.eval"])
def test_healthy_real_logs_have_no_findings(name, scan_of):
    result = scan_of(DATA / name)
    assert result.turns.height > 0
    assert result.findings.is_empty()
    assert result.rejects.is_empty()


def test_a_json_log_without_samples_is_a_note_not_a_reject(tmp_path):
    doc = json.loads(FAILURES.read_text())
    doc.pop("samples")
    doc["status"] = "error"
    doc["error"] = {"message": "ValueError: no API key", "traceback": ""}
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty()
    assert (
        result.files[0].note
        == "Inspect AI log without samples (status error: ValueError: no API key)"
    )


def test_calls_are_matched_by_content_when_message_ids_differ(tmp_path):
    doc = json.loads(FAILURES.read_text())
    for sample in doc["samples"]:
        for event in sample["events"]:
            if event["event"] == "model" and event["output"]["choices"]:
                event["output"]["choices"][0]["message"]["id"] = "regenerated"
    doc["samples"][2]["events"][0]["output"]["choices"][0]["message"]["content"] = [
        {"type": "text", "text": "attachment://9a1e"}  # resolved before it is compared
    ]
    path = tmp_path / "ids.json"
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    agent = result.turns.filter(result.turns["actor"] == "agent")
    assert agent["finish_reason"].to_list() == [
        "max_tokens", "tool_calls", "tool_calls", "model_length", "content_filter", None
    ]  # fmt: skip


def test_a_failed_model_call_is_an_agent_turn_with_its_error_at_its_event(scan_of):
    result = scan_of(FAILURES)
    failed = result.turns.filter(result.turns["task_id"] == "apierror").row(1, named=True)
    assert failed["actor"] == "agent" and failed["content"] is None
    assert failed["error"] == "BadRequestError: prompt is too long: 210417 tokens > 200000 maximum"
    assert (failed["source_line"], failed["max_output_tokens"]) == (607, 512)


def test_the_limit_event_ends_a_sample_without_sample_limit(tmp_path):
    doc = json.loads(FAILURES.read_text())
    del doc["samples"][1]["limit"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc, indent=2))
    trajs = forensics.scan([str(path)]).trajectories
    assert trajs.filter(trajs["task_id"] == "toolfail")["termination_reason"].to_list() == [
        "token_limit"
    ]


def test_samples_and_messages_of_the_wrong_type_are_rejected_at_their_path(tmp_path):
    doc = json.loads(FAILURES.read_text())
    doc["samples"][0]["messages"] = {"role": "user"}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    (reject,) = result.rejects.iter_rows(named=True)
    assert (reject["json_path"], reject["reason"]) == (
        "$.samples[0].messages", "messages is not an array"
    )  # fmt: skip
    assert result.trajectories.height == 5
    doc["samples"] = 5
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    assert result.rejects["json_path"].to_list() == ["$.samples"]


def test_many_members_stop_at_the_decompression_cap(tmp_path):
    """A bomb of many members, each small enough, is cut where their sum passes the cap."""
    with zipfile.ZipFile(DATA / "log_formats.eval") as archive:
        members = {i.filename: archive.read(i) for i in archive.infolist()}
    sample = json.loads(members.pop("samples/1_epoch_1.json"))
    sample["messages"][1]["content"] = "x" * 600_000
    path = tmp_path / "bomb.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for n in range(1, 5):
            archive.writestr(f"samples/{n}_epoch_1.json", json.dumps(sample | {"id": n}))
    limits = files.Limits(max_decompressed_bytes=files.MIB)
    read = ingest([str(path)], limits=limits)
    assert read.trajectories.num_rows == 1  # the first sample fits, the second passes the cap
    (reject,) = read.rejects.to_pylist()
    assert reject["source_path"] == str(path)
    assert reject["reason"].startswith("members inflate to more than 1 MiB")


def test_a_zip_named_eval_without_log_members_is_a_reject(tmp_path):
    path = tmp_path / "notes.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "not a log")
    result = forensics.scan([str(path)])
    assert result.rejects["reason"].to_list() == [
        "ZIP archive without Inspect AI log members (header.json, samples/)"
    ]


def test_a_few_shot_answer_in_the_input_is_prompt_not_agent(tmp_path):
    doc = json.loads(FAILURES.read_text())
    shot = {"id": "fs1", "role": "assistant", "source": "input", "content": "<think>"}
    doc["samples"][3]["messages"].insert(0, shot)
    path = tmp_path / "fewshot.json"
    path.write_text(json.dumps(doc, indent=2))
    turns = forensics.scan([str(path)]).turns
    filtered = turns.filter(turns["task_id"] == "filtered")
    assert filtered["actor"].to_list() == ["system", "user_sim", "agent"]
    assert filtered["finish_reason"].to_list() == [None, None, "content_filter"]
