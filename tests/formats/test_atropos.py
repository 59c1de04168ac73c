"""Atropos process-mode dumps: scored groups, rollouts as trajectories, templated texts."""

from __future__ import annotations

import functools
import json

import forensics
from forensics.ingest import detect
from forensics.ingest.formats import atropos

from conftest import DATA

ATROPOS = DATA / "traces" / "atropos"


@functools.cache  # one scan per file for the module: the tests only read it
def scan(name: str) -> forensics.ScanResult:
    return forensics.scan([str(ATROPOS / name)])


def test_real_group_rollouts_are_trajectories_with_their_scores_and_stay_clean():
    result = scan("cybersec_objreward_group1.jsonl")
    assert result.files[0].format == atropos.FORMAT and result.rejects.is_empty()
    trajectories = result.trajectories.sort("trial")
    assert trajectories["trial"].to_list() == list(range(8))
    assert trajectories["task_id"].unique().to_list() == ["group-1"]
    scores = json.loads((ATROPOS / "cybersec_objreward_group1.jsonl").read_text())["scores"]
    assert trajectories["reward"].to_list() == [float(s) for s in scores]
    # The Llama 3 template is split back into its turns; the reasoning leaves the answer.
    first = result.turns.filter(result.turns["trial"] == 0)
    assert first["role"].to_list() == ["system", "user", "assistant"]
    answer = first.row(2, named=True)
    assert answer["content"].startswith("\\boxed{") and answer["reasoning"].startswith(
        "Okay, let's see."
    )
    assert result.findings.is_empty()


def test_chat_message_rollouts_failures_are_found():
    result = scan("math_groups.jsonl")
    f = result.findings
    assert sorted(
        zip(f["rule"], f["trajectory_id"], f["turn_index"], f["source_line"], strict=True)
    ) == [
        ("malformed-tool-call", "math_groups/task-group-1/trial-2", 2, 1),
        ("unclosed-think", "math_groups/task-group-1/trial-1", 2, 1),
    ]
    cut = result.turns.filter((result.turns["trial"] == 1) & (result.turns["role"] == "assistant"))
    assert cut["max_output_tokens"].to_list() == [1024]


def test_a_group_without_messages_keeps_its_rollouts_and_says_why_they_have_no_turns():
    result = scan("math_groups.jsonl")
    second = result.trajectories.filter(result.trajectories["task_id"] == "group-2")
    assert second["reward"].to_list() == [0.5, 0.25] and second["turn_count"].to_list() == [0, 0]
    assert "include_messages off" in second["ingest_note"][0]


def test_split_template_chatml_and_unknown_templates():
    text = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\nhm"
    assert atropos.split_template(text) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>\nhm"},
    ]
    assert atropos.split_template("[INST] hi [/INST] hello") is None


def test_bad_lines_are_rejected(tmp_path):
    path = tmp_path / "groups.jsonl"
    good = (ATROPOS / "math_groups.jsonl").read_text().splitlines()[1]
    path.write_text(
        "\n".join([good, '{"tokens": [[1, 2', json.dumps({"tokens": [[1]], "masks": [[1]]}), good])
        + "\n"
    )
    result = forensics.scan([str(path)])
    assert sorted(result.rejects["source_line"].to_list()) == [2, 3]
    assert result.trajectories.height == 4


def test_detection_even_when_the_head_cuts_the_token_lists():
    head = b'{"tokens": [[128000, 128006, 9125' + b", 1" * 30000
    fmt, _why = detect(head)
    assert fmt is not None and fmt.name == atropos.FORMAT
