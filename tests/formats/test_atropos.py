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


# --- issue 21: roles an environment names itself --------------------------------------------

RUBIKS = (
    DATA
    / "corpus"
    / "files"
    / "atropos_groups"
    / "NousResearch__atropos__rubiks_process_results_20.jsonl"
)


def test_environment_role_names_are_read_from_the_rollout_structure():
    # The Rubik's cube environment writes its own role names, agent and environment: the agent
    # side calls apply_move through <tool_call> markup, so it is the policy.
    result = forensics.scan([str(RUBIKS)])
    assert result.rejects.is_empty()
    turns = result.turns
    assert set(turns["role"].unique()) == {"system", "user", "assistant"}
    assert set(zip(turns["role"], turns["actor"], strict=True)) == {
        ("system", "system"),
        ("user", "env"),
        ("assistant", "agent"),
    }
    assert result.files[0].note == (
        "the environment's own role names read by the rollouts' structure: agent as "
        "assistant, environment as user (the policy calls the tools, or answers the opening "
        "message)"
    )
    # The 11 replies that stop at "<think>\n" (4 generated tokens, the labels say) were
    # invisible to every agent-turn rule while the actors were unknown.
    f = result.findings
    places = zip(
        f["rule"], f["task_id"], f["trial"], f["turn_index"], f["source_line"], strict=True
    )
    assert sorted(places) == [
        ("unclosed-think", "group-2", 3, 4, 2),
        ("unclosed-think", "group-3", 0, 6, 3),
        ("unclosed-think", "group-3", 2, 6, 3),
        ("unclosed-think", "group-3", 3, 6, 3),
        ("unclosed-think", "group-4", 0, 8, 4),
        ("unclosed-think", "group-4", 2, 8, 4),
        ("unclosed-think", "group-4", 3, 8, 4),
        ("unclosed-think", "group-6", 0, 4, 6),
        ("unclosed-think", "group-6", 1, 4, 6),
        ("unclosed-think", "group-6", 2, 4, 6),
        ("unclosed-think", "group-6", 3, 4, 6),
    ]


def test_roles_that_the_structure_cannot_assign_are_said_loudly(tmp_path):
    # Three sides of made-up names, none calling a tool: no way to tell the policy.
    rollout = [
        {"role": "system", "content": "A debate."},
        {"role": "moderator", "content": "Topic: tabs or spaces?"},
        {"role": "pro", "content": ""},
        {"role": "con", "content": "Spaces."},
    ]
    path = tmp_path / "debate.jsonl"
    path.write_text(
        json.dumps(
            {"tokens": [[1, 2]], "masks": [[-100, 2]], "scores": [0.0], "messages": [rollout]}
        )
        + "\n"
    )
    result = forensics.scan([str(path)])
    assert set(result.turns.filter(result.turns["role"] != "system")["actor"]) == {"unknown"}
    (note,) = [f.note for f in result.files]
    assert note == (
        "ACTORS NOT ASSIGNED in 1 rollout(s), roles con, moderator, pro: 3 sides (moderator, "
        "pro, con) and no single one calls tools: their turns are actor unknown and no rule "
        "that reads agent turns checked them"
    )


def test_a_name_that_contradicts_the_structure_leaves_the_roles_alone(tmp_path):
    # Two sides where the one answering the opening is named like an environment.
    rollout = [
        {"role": "agent", "content": "What is 2 + 2?"},
        {"role": "environment", "content": "4"},
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text(
        json.dumps({"tokens": [[1]], "masks": [[1]], "scores": [1.0], "messages": [rollout]}) + "\n"
    )
    result = forensics.scan([str(path)])
    assert set(result.turns["actor"]) == {"unknown"}
    assert "ACTORS NOT ASSIGNED in 1 rollout(s)" in result.files[0].note
