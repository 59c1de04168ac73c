"""Records and files are isolated; paths are walked as users expect; caps and damage are
rejects, never the end of the scan. The cases the hardening issue reported, one by one."""

from __future__ import annotations

import gzip
import json
import os
import shutil

import pytest

import forensics
from forensics.config import Settings
from forensics.ingest.parse import files

from conftest import DATA, SAMPLES, run_cli

CONTROL = SAMPLES / "tau_bench_results_control.json"
OUTPUT2 = SAMPLES / "output2.txt"


def findings_of(result):
    return sorted(result.findings.select("rule", "task_id", "turn_index", "source_line").rows())


@pytest.fixture(scope="module")
def output2_alone(output2_scan):
    return findings_of(output2_scan)


def _control_with(edit) -> str:
    doc = json.loads(CONTROL.read_text())
    edit(doc[0])
    return json.dumps(doc, indent=2)


@pytest.mark.parametrize(
    ("name", "text", "line", "json_path", "reason"),
    [
        (
            "role_bool.json",
            _control_with(lambda r: r["traj"][1].update(role=True)),
            102,
            "$[0].traj[1]",
            "message 1 of the episode: role: expected a string, got boolean",
        ),
        (
            "huge_trial.json",
            _control_with(lambda r: r.update(trial=2**70)),
            2,
            "$[0]",
            "episode not read: trial: an integer out of the 64-bit range",
        ),
        (
            "surrogate.json",
            _control_with(lambda r: r["traj"][2].update(content="\ud800 broken")),
            106,
            "$[0].traj[2]",
            "message 2 of the episode: content: a string that is not valid Unicode",
        ),
    ],
)
def test_one_bad_value_rejects_its_record_and_nothing_else(
    tmp_path, output2_alone, name, text, line, json_path, reason
):
    bad = tmp_path / name
    bad.write_text(text, encoding="utf-8", errors="surrogatepass")
    result = forensics.scan([str(bad), str(OUTPUT2)])
    (reject,) = result.rejects.to_dicts()
    assert (reject["source_line"], reject["json_path"]) == (line, json_path)
    assert reject["reason"].startswith(reason)
    assert findings_of(result) == output2_alone
    code, _out, err = run_cli("scan", str(bad), str(OUTPUT2), "--no-report")
    assert code == 1 and err == ""


def test_a_bad_message_leaves_its_episode_with_a_note(tmp_path, scan_of):
    bad = tmp_path / "role_bool.json"
    bad.write_text(_control_with(lambda r: r["traj"][1].update(role=True)))
    (episode,) = forensics.scan([str(bad)]).trajectories.to_dicts()
    good = scan_of(CONTROL).trajectories.to_dicts()[0]
    assert episode["turn_count"] == good["turn_count"] - 1
    assert episode["ingest_note"] == "1 message(s) rejected (see rejects)"


def test_nesting_beyond_the_parser_is_a_reject_per_line(tmp_path, scan_of):
    capture = (DATA / "capture" / "vllm_agent_loop.jsonl").read_text().splitlines()
    deep = '{"request": ' + "[" * 5000 + "]" * 5000 + "}"
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join([capture[0], deep, *capture[1:]]) + "\n")
    result = forensics.scan([str(path)])
    assert result.rejects.select("source_line", "reason").rows() == [
        (2, "JSON nested deeper than the parser's limit (about 990 levels)")
    ]
    alone = scan_of(DATA / "capture" / "vllm_agent_loop.jsonl")
    assert result.turns.height == alone.turns.height


def test_a_reader_that_crashes_costs_its_file_only(tmp_path, monkeypatch, output2_alone):
    from forensics.ingest.formats import tau_results

    def broken(*_args, **_kwargs):
        raise TypeError("unexpected shape")

    monkeypatch.setattr(tau_results, "add_record", broken)
    result = forensics.scan([str(CONTROL), str(OUTPUT2)])
    (reject,) = result.rejects.to_dicts()
    assert reject["source_line"] == 2 and reject["json_path"] == "$[0]"
    assert "bug in forensics" in reject["reason"] and "TypeError" in reject["reason"]
    assert findings_of(result) == output2_alone


def test_truncated_gzip_keeps_the_lines_before_the_damage(tmp_path):
    packed = gzip.compress(OUTPUT2.read_bytes(), mtime=0)
    cut = tmp_path / "output2.txt.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    code, out, err = run_cli("scan", str(cut), str(CONTROL), "--no-report")
    assert "Aborted" not in out + err and err == ""
    assert code == 0  # the half of the log that was read holds no finding: the gate passes
    assert f"rejected: {cut}: truncated gzip stream" in out
    result = forensics.scan([str(cut), str(CONTROL)])
    (reject,) = result.rejects.to_dicts()
    assert reject["source_line"] is None
    assert reject["reason"].startswith("truncated gzip stream")
    assert "the lines before it were read" in reject["reason"]
    assert result.turns.filter(result.turns["source_format"] == "tau_bench_log").height > 10


def test_corrupt_gzip_and_a_gzip_bomb_are_rejects(tmp_path):
    packed = bytearray(gzip.compress(OUTPUT2.read_bytes(), mtime=0))
    packed[len(packed) // 2] ^= 0xFF
    (tmp_path / "corrupt.txt.gz").write_bytes(bytes(packed))
    record = b'{"request": {"model": "m", "messages": []}}\n'
    (tmp_path / "bomb.jsonl.gz").write_bytes(gzip.compress(record * 100_000, mtime=0))
    settings = Settings(limits=files.Limits(max_decompressed_bytes=files.MIB))
    result = forensics.scan([str(tmp_path)], settings=settings)
    files_level = result.rejects.filter(result.rejects["source_line"].is_null()).to_dicts()
    reasons = {r["source_path"].rsplit("/", 1)[1]: r["reason"] for r in files_level}
    assert reasons["bomb.jsonl.gz"].startswith("inflates to more than 1 MiB")
    assert reasons["corrupt.txt.gz"].startswith("corrupt gzip stream")
    (tmp_path / "bomb.jsonl.gz").unlink()
    head_only = bytearray(gzip.compress(OUTPUT2.read_bytes(), mtime=0))
    head_only[12] ^= 0xFF  # inside the first deflate block: nothing inflates
    (tmp_path / "corrupt.txt.gz").write_bytes(bytes(head_only))
    (reject,) = forensics.scan([str(tmp_path / "corrupt.txt.gz")]).rejects.to_dicts()
    assert reject["reason"].startswith("corrupt gzip stream")
    assert reject["reason"].endswith("nothing before it could be read")


def test_a_document_over_the_cap_is_rejected(tmp_path):
    big = tmp_path / "big.json"
    shutil.copy(CONTROL, big)
    settings = Settings(limits=files.Limits(max_document_bytes=1000))
    result = forensics.scan([str(big), str(OUTPUT2)], settings=settings)
    (reject,) = result.rejects.to_dicts()
    assert reject["reason"].startswith("a document larger than 1,000 bytes (the document cap")
    assert result.trajectories.height == 4


def test_concatenated_arrays_are_read_in_full_and_trailing_junk_is_rejected(tmp_path):
    text = CONTROL.read_text()
    twice = tmp_path / "twice.json"
    twice.write_text(text + text)
    assert forensics.scan([str(twice)]).trajectories.height == 2
    junk = tmp_path / "junk_after.json"
    junk.write_text(text + "\n{oops}\n")
    result = forensics.scan([str(junk)])
    assert result.trajectories.height == 1
    (reject,) = result.rejects.to_dicts()
    last_line = text.count("\n") + 2
    assert reject["source_line"] == last_line and "data after the end" in reject["reason"]


def test_two_hars_back_to_back_reject_the_second_instead_of_ignoring_it(tmp_path):
    har = (DATA / "capture" / "agent.har").read_text()
    path = tmp_path / "two.har"
    path.write_text(har + har)
    result = forensics.scan([str(path)])
    trailing = [r for r in result.rejects.to_dicts() if "data after the end" in r["reason"]]
    assert len(trailing) == 1 and trailing[0]["source_line"] == har.count("\n") + 1


def test_jsonl_with_broken_first_lines_is_read_line_by_line(tmp_path, scan_of):
    lines = (DATA / "capture" / "vllm_agent_loop.jsonl").read_text().splitlines()
    path = tmp_path / "broken_head.jsonl"
    path.write_text("\n".join(['"request": {"model": "cut', "{broken", *lines]) + "\n")
    result = forensics.scan([str(path)])
    assert result.files[0].format == "api_capture"
    assert sorted(result.rejects["source_line"].to_list()) == [1, 2]
    alone = scan_of(DATA / "capture" / "vllm_agent_loop.jsonl")
    assert result.turns.height == alone.turns.height


def test_gemini_jsonl_whose_first_line_is_a_chunk_array_reads_every_line(tmp_path):
    chunks = json.loads((DATA / "gemini" / "stream_json_array.json").read_text())
    single = json.loads((DATA / "gemini" / "rest_max_tokens.json").read_text())
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(chunks) + "\n" + json.dumps(single) + "\n")
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty()
    assert result.trajectories["source_line"].to_list() == [1, 2]


@pytest.mark.parametrize(
    "seed",
    [
        OUTPUT2,
        CONTROL,
        DATA / "capture" / "vllm_agent_loop.jsonl",
        DATA / "capture" / "agent.har",
        DATA / "gemini" / "rest_max_tokens.json",
        DATA / "gemini" / "stream_alt_sse.txt",
        DATA / "tau2" / "leaderboard-trimmed_toolorchestra_airline.subset2.json",
    ],
    ids=lambda p: p.name,
)
def test_a_utf8_bom_changes_nothing(tmp_path, seed, scan_of):
    with_bom = tmp_path / seed.name
    with_bom.write_bytes(b"\xef\xbb\xbf" + seed.read_bytes())
    a, b = scan_of(seed), forensics.scan([str(with_bom)])
    assert b.rejects.height == a.rejects.height
    assert (
        b.turns.select("content", "source_line").rows()
        == a.turns.select("content", "source_line").rows()
    )


# --- paths ------------------------------------------------------------------------------------


def test_a_directory_named_with_dotdot_or_hidden_is_walked(tmp_path, monkeypatch):
    results = tmp_path / ".runs" / "results"
    results.mkdir(parents=True)
    shutil.copy(CONTROL, results / "r.json")
    (results / ".cache").mkdir()
    shutil.copy(OUTPUT2, results / ".cache" / "old.txt")
    work = tmp_path / ".runs" / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = forensics.scan(["../results"])
    assert result.trajectories.height == 1
    assert result.skipped == [("../results/.cache", "hidden")]


def test_a_walk_skips_outputs_and_non_artifacts_so_reruns_are_identical(tmp_path, monkeypatch):
    shutil.copy(OUTPUT2, tmp_path / "output2.txt")
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "plot.png").write_bytes(b"\x89PNG\r\n")
    monkeypatch.chdir(tmp_path)
    args = ["scan", ".", "--json", "r.json", "--md", "r.md", "--sarif", "r.sarif"]
    first = run_cli(*args)
    second = run_cli(*args)
    second_json = (tmp_path / "r.json").read_text()
    third = run_cli(*args)
    assert second == third and first[0] == second[0] == 1
    assert (tmp_path / "r.json").read_text() == second_json
    assert "rejected" not in second[1]
    # The first run's outputs are met by the walk of the next: skipped and listed, never read.
    skipped = {s["path"]: s["reason"] for s in json.loads(second_json)["skipped"]}
    assert skipped == {
        "forensics-report": "an output of this scan",
        "notes.md": "not a run artifact (.md file)",
        "plot.png": "not a run artifact (.png file)",
        "r.json": "an output of this scan",
        "r.md": "an output of this scan",
        "r.sarif": "an output of this scan",
    }


def test_outputs_of_this_scan_found_in_a_walk_are_skipped(tmp_path, monkeypatch):
    shutil.copy(OUTPUT2, tmp_path / "output2.txt")
    monkeypatch.chdir(tmp_path)
    run_cli("scan", ".", "--json", "r.json")
    result = forensics.scan(["."], exclude=[tmp_path / "r.json", tmp_path / "forensics-report"])
    assert sorted(result.skipped) == [
        ("forensics-report", "an output of this scan"),
        ("r.json", "an output of this scan"),
    ]


def test_special_files_named_on_the_command_line_are_rejects(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    dangling = tmp_path / "gone.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    result = forensics.scan([str(fifo), str(dangling), "/dev/null", str(CONTROL)])
    reasons = {r["source_path"]: r["reason"] for r in result.rejects.to_dicts()}
    assert reasons[str(fifo)].startswith("a named pipe (FIFO)")
    assert reasons[str(dangling)] == "dangling symbolic link"
    assert reasons["/dev/null"].startswith("a device")
    assert result.trajectories.height == 1


def test_one_file_by_several_spellings_is_read_once(tmp_path, monkeypatch):
    shutil.copy(CONTROL, tmp_path / "r.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "r.json")
    monkeypatch.chdir(tmp_path)
    result = forensics.scan(["r.json", str(tmp_path / "r.json"), "./r.json", "link.json"])
    assert result.trajectories.height == 1 and len(result.files) == 1


def test_an_empty_directory_is_a_reject_not_silence(tmp_path):
    (tmp_path / "empty").mkdir()
    code, out, _err = run_cli("scan", str(tmp_path / "empty"), str(CONTROL), "--no-report")
    assert f"rejected: {tmp_path / 'empty'}: directory holds no file to read" in out
    # A named input that yields nothing fails the gate, though the control itself is clean.
    assert code == 1
    assert (
        run_cli("scan", str(tmp_path / "empty"), str(CONTROL), "--no-report", "--allow-unreadable")[
            0
        ]
        == 0
    )


# --- interrupts -------------------------------------------------------------------------------


def test_ctrl_c_exits_130_with_one_line_and_no_torn_output(tmp_path, monkeypatch):
    from forensics.report.render import jsonout

    def interrupted(_model, **_options):
        raise KeyboardInterrupt

    monkeypatch.setattr(jsonout, "render", interrupted)
    out = tmp_path / "r.json"
    code, stdout, stderr = run_cli("scan", str(OUTPUT2), "--no-report", "--json", str(out))
    assert (code, stdout, stderr) == (130, "", "forensics: interrupted\n")
    assert list(tmp_path.iterdir()) == []


def test_outputs_are_renamed_into_place(tmp_path):
    out = tmp_path / "r.json"
    run_cli("scan", str(OUTPUT2), "--no-report", "--json", str(out))
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    json.loads(out.read_text())


def test_size_caps_from_the_command_line_and_the_config(tmp_path, monkeypatch):
    record = {"task_id": 1, "reward": 1.0, "traj": [{"role": "user", "content": "x" * 2**21}]}
    big = tmp_path / "big.json"
    big.write_text(json.dumps([record]))
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("scan", str(big), str(CONTROL), "--no-report", "--max-document-mb", "1")
    assert code == 1 and "a document larger than 1 MiB" in out  # an unread input fails the gate
    (tmp_path / "forensics.toml").write_text("max-document-mb = 1\n")
    code, out, _ = run_cli("scan", str(big), str(CONTROL), "--no-report")
    assert "a document larger than 1 MiB" in out
    code, out, _ = run_cli("scan", str(big), "--no-report", "--max-document-mb", "4")
    assert "rejected" not in out and "document larger" not in out


def test_a_file_name_that_is_not_utf8_is_read_and_shown(tmp_path):
    """Linux allows any bytes in a name; Python hands them over as lone surrogates, which no
    table or output could hold. The file is read; its name is shown with a placeholder."""
    raw = os.path.join(os.fsencode(tmp_path), b"run-\xff\xfe.json")
    shutil.copy(CONTROL, raw)
    code, out, err = run_cli("scan", str(tmp_path), "--no-report", "--json", str(tmp_path / "r"))
    assert code == 0 and err == "" and "rejected" not in out
    doc = json.loads((tmp_path / "r").read_text())
    assert [f["path"] for f in doc["files"]] == [f"{tmp_path}/run-??.json"]
    assert doc["summary"]["trajectories"] == 1
