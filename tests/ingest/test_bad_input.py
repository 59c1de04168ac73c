"""Bad input: a clear one-line reason with file and line, the rest of the scan goes on."""

from __future__ import annotations

import shutil

import pytest

import forensics
from forensics.config import Settings
from forensics.ingest import companions
from forensics.ingest.parse import files

from conftest import SAMPLES


@pytest.fixture
def messy(tmp_path):
    shutil.copy(SAMPLES / "output2.txt", tmp_path / "output2.txt")
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "junk.bin").write_bytes(bytes(range(256)) * 40)
    (tmp_path / "notes.md").write_text("# nothing here\njust prose, no records\n")
    (tmp_path / "notes.txt").write_text("nothing here\njust prose, no records\n")
    (tmp_path / "broken.log").write_text(
        "Running task 3\n"
        '{"role": "system", "content": "policy"}\n'
        '{"role": "user", "content": "hi", oops}\n'
        '{"content": "<think>\\nOkay", "role": "assistant", "tool_calls": null}\n'
        '{"role": "user", "content": "never closed\n'
    )
    text = (SAMPLES / "tau_bench_results_frustrated.json").read_text()
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    return tmp_path


def test_messy_directory_reads_everything_readable(messy):
    result = forensics.scan([str(messy)])
    by_file = {r["source_path"].split("/")[-1]: r for r in result.rejects.iter_rows(named=True)}
    assert by_file["empty.log"]["reason"] == "empty file"
    assert by_file["junk.bin"]["reason"].startswith("binary file")
    # Markdown in a directory walk is plainly no artifact: listed as skipped, never read; prose
    # that no format reads and nothing in looks like an agent's record is skipped once read.
    assert "notes.md" not in by_file and "notes.txt" not in by_file
    assert [(p.split("/")[-1], r) for p, r in result.skipped] == [
        ("notes.md", "not a run artifact (.md file)"),
        ("notes.txt", companions.REASON),
    ]
    assert by_file["cut.json"]["reason"].startswith("truncated file")
    broken = result.rejects.filter(result.rejects["source_path"].str.ends_with("broken.log"))
    # Line 3 does not parse; line 5 is a message cut short (its string never closes): both
    # are rejects, the second no longer lost without a word.
    assert sorted(broken["source_line"].to_list()) == [3, 5]
    reasons = dict(zip(broken["source_line"], broken["reason"], strict=True))
    assert reasons[3].startswith("invalid JSON")
    assert reasons[5].startswith("message cut short")
    # The good parts still come through: the log's 4 trajectories, and broken.log's task 3
    # with its readable system and assistant messages.
    tasks = sorted(result.trajectories["task_id"].to_list())
    assert tasks.count("3") == 1 and {"5", "12", "27", "48"} <= set(tasks)
    task3 = result.turns.filter(result.turns["task_id"] == "3")
    assert task3["source_line"].to_list() == [2, 4]
    assert "unclosed-think" in set(result.findings["rule"])


def test_every_reject_is_one_line(messy):
    result = forensics.scan([str(messy)])
    for reason in result.rejects["reason"]:
        assert "\n" not in reason and "Traceback" not in reason


def test_huge_line_is_skipped_and_reported(tmp_path):
    log = tmp_path / "huge.log"
    log.write_text(
        "Running task 1\n"
        + '{"role": "user", "content": "'
        + "x" * 5000
        + '"}\n'
        + '{"content": "<think>\\nOkay the", "role": "assistant", "tool_calls": null}\n'
    )
    result = forensics.scan([str(log)], settings=Settings(limits=files.Limits(max_line_bytes=1024)))
    assert result.rejects["source_line"].to_list() == [2]
    assert result.rejects["reason"][0] == (
        "line longer than 1,024 bytes (the line cap, --max-line-mb); skipped"
    )
    assert result.turns["source_line"].to_list() == [3]


def test_unterminated_pretty_printed_object_does_not_swallow_the_rest(tmp_path):
    log = tmp_path / "pretty.log"
    log.write_text(
        "Running task 1\n"
        "{\n"
        '  "role": "user",\n'
        '  "content": "multi-line message"\n'
        "}\n"
        "{\n"
        '  "role": "assistant",\n'
        '{"content": "after the broken one", "role": "assistant", "tool_calls": null}\n'
    )
    result = forensics.scan([str(log)])
    assert result.turns["source_line"].to_list() == [2, 8]
    assert result.turns["content"].to_list() == ["multi-line message", "after the broken one"]
    assert result.rejects["source_line"].to_list() == [6]


def test_gzip_input(tmp_path):
    import gzip

    target = tmp_path / "output2.txt.gz"
    target.write_bytes(gzip.compress((SAMPLES / "output2.txt").read_bytes()))
    result = forensics.scan([str(target)])
    assert result.trajectories.height == 4 and result.rejects.is_empty()


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(files.InputError, match="no such file"):
        forensics.scan([str(tmp_path / "nope.txt")])
