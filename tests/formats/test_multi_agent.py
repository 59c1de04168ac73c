"""AG2 and Magentic-One histories (Who&When, AgentRx): one entry one turn, turn_index the
0-based history index the labels count steps by, the speaker kept in agent_name."""

from __future__ import annotations

import functools
import json

import pytest

import forensics
from forensics.ingest import detect

from conftest import DATA

MULTI = DATA / "agents" / "multi_agent"
AG2 = MULTI / "whowhen_algorithm_generated_1.json"
MAGENTIC = MULTI / "whowhen_hand_crafted_1.json"
AGENTRX = MULTI / "agentrx_magentic_f88066d2.json"
CRASHED = MULTI / "whowhen_hand_crafted_23_excerpt.json"


@functools.cache
def scan(path) -> forensics.ScanResult:
    return forensics.scan([str(path)])


def speakers(path) -> list[tuple[int, str, str, str | None, int]]:
    rows = scan(path).turns.to_dicts()
    return [
        (r["turn_index"], r["role"], r["actor"], r["agent_name"], r["source_line"]) for r in rows
    ]


@pytest.mark.parametrize("path", [AG2, MAGENTIC, AGENTRX], ids=lambda p: p.stem)
def test_detected_read_whole_and_clean(path):
    fmt, why = detect(path.read_bytes()[:65536], path)
    assert fmt is not None and fmt.name == "multi_agent_history", why
    result = scan(path)
    assert result.rejects.height == 0
    # AgentRx's run stops mid-run (its labelled System Failure): one finding, tested below
    assert result.findings.height == (1 if path == AGENTRX else 0)
    history = json.loads(path.read_text())
    history = history["history"] if isinstance(history, dict) else history
    # Every entry is exactly one turn, in order: the labels' step numbers are turn indices.
    assert result.turns["content"].to_list() == [e["content"] for e in history]


def test_an_ag2_group_chat_keeps_each_experts_name_and_the_executor_is_the_environment():
    # The executor reports what the experts' code did, as AG2 sends it: a user message.
    assert speakers(AG2) == [
        (0, "assistant", "agent", "Excel_Expert", 8),
        (1, "user", "env", "Computer_terminal", 13),
        (2, "assistant", "agent", "BusinessLogic_Expert", 18),
        (3, "user", "env", "Computer_terminal", 23),
        (4, "assistant", "agent", "DataVerification_Expert", 28),
        (5, "assistant", "agent", "DataVerification_Expert", 33),
    ]
    traj = scan(AG2).trajectories.row(0, named=True)
    # Who&When names the question; is_correct: false is the run's reward.
    assert (traj["task_id"], traj["reward"]) == ("4d51c4bf-4b0e-4f3d-897b-3f6687a7d9f2", 0.0)
    executor = scan(AG2).turns.row(1, named=True)
    assert executor["content"].startswith("exitcode: 0 (execution succeeded)\nCode output:")


def test_a_magentic_one_log_keeps_the_speaker_as_written_at_the_labelled_step():
    rows = speakers(MAGENTIC)
    assert len(rows) == 29
    assert rows[0] == (0, "user", "user_sim", "human", 3)
    assert rows[1:4] == [
        (1, "assistant", "agent", "Orchestrator (thought)", 7),
        (2, "assistant", "agent", "Orchestrator (thought)", 11),
        (3, "assistant", "agent", "Orchestrator (-> WebSurfer)", 15),
    ]
    # Who&When labels this run mistake_agent WebSurfer, mistake_step "12": turn 12.
    label = json.loads(MAGENTIC.read_text())
    assert (label["mistake_agent"], label["mistake_step"]) == ("WebSurfer", "12")
    # WebSurfer's messages are what its browser did and showed: the environment's.
    assert rows[12] == (12, "user", "env", "WebSurfer", 51)
    assert rows[12 - 1] == (11, "assistant", "agent", "Orchestrator (thought)", 47)
    assert scan(MAGENTIC).trajectories["reward"].to_list() == [None]  # no is_correct key


def test_agentrx_bare_array_and_its_labelled_system_failure_step():
    rows = speakers(AGENTRX)
    assert len(rows) == 17
    assert {r[3] for r in rows} == {
        "human",
        "Orchestrator (thought)",
        "Orchestrator (-> WebSurfer)",
        "WebSurfer",
    }
    # AgentRx's ground truth: step_number 17 (1-based), failed_agent WebSurfer, System Failure.
    assert rows[17 - 1] == (16, "user", "env", "WebSurfer", 66)
    assert scan(AGENTRX).trajectories["task_id"].to_list() == ["agentrx_magentic_f88066d2"]


def fault_classes(result: forensics.ScanResult, tmp_path) -> list[str]:
    doc = json.loads(result.write_json(tmp_path / "result.json").read_text())
    return [t["fault_class"] for t in doc["trajectories"]]


def test_a_magentic_one_log_that_stops_on_an_unanswered_reply_is_cut_off_at_that_step(tmp_path):
    """AgentRx labels this run a System Failure at step 17 ("the orchestration did not respond
    to websurfer and the agentic run abruptly stopped"): the log ends on WebSurfer's reply with
    no final answer and no exit line of the runner, which every finished run has."""
    result = scan(AGENTRX)
    traj = result.trajectories.row(0, named=True)
    assert traj["termination_reason"] == "cut_off"
    assert traj["ingest_note"] == (
        "cut off: the Magentic-One log stops on an agent's reply the orchestrator never "
        "answered: no final answer, no exit line of the scenario runner"
    )
    found = result.findings.select("rule", "turn_index", "source_line").rows()
    assert found == [("run-cut-off", 17 - 1, 66)]
    assert fault_classes(result, tmp_path) == ["infra"]


def test_a_crashed_magentic_one_scenario_ends_in_its_exception(tmp_path):
    """The scenario runner's exit code 1 after WebSurfer's download broke: the episode ended in
    ChunkedEncodingError, not in an answer."""
    result = scan(CRASHED)
    traj = result.trajectories.row(0, named=True)
    assert traj["termination_reason"] == "ChunkedEncodingError"
    assert traj["error"] == (
        "requests.exceptions.ChunkedEncodingError: ('Connection broken: IncompleteRead(212570 "
        "bytes read, 3401352 more expected)', IncompleteRead(212570 bytes read, 3401352 more "
        "expected))\nSCENARIO.PY EXITED WITH CODE: 1 !#!#"
    )
    found = result.findings.select("rule", "turn_index").rows()
    assert found == [("run-exit-infra", 4)]
    assert fault_classes(result, tmp_path) == ["infra"]


@pytest.mark.parametrize(
    ("last", "ended"),
    [
        (
            {"content": "page\nFINAL ANSWER: 42\nSCENARIO.PY COMPLETE !#!#", "role": "WebSurfer"},
            None,
        ),
        ({"content": "Next speaker WebSurfer", "role": "Orchestrator (thought)"}, None),
        ({"content": "page\nSCENARIO.PY EXITED WITH CODE: 0 !#!#", "role": "WebSurfer"}, None),
        ({"content": "page", "role": "WebSurfer"}, "cut_off"),
    ],
    ids=["final-answer", "orchestrator-last", "exit-0", "unanswered-reply"],
)
def test_how_a_magentic_one_log_ends(tmp_path, last, ended):
    """Only a log that stops on a reply the orchestrator never answered, without a final answer
    or an exit line, is cut off; a run that reached its answer ended as the runner ends them."""
    path = tmp_path / "run.json"
    history = [{"content": "task", "role": "human"}, last]
    path.write_text(json.dumps({"history": history, "mistake_agent": "x"}))
    traj = forensics.scan([str(path)]).trajectories.row(0, named=True)
    assert traj["termination_reason"] == ended


def test_a_bad_entry_is_rejected_at_its_line_and_said_to_shift_the_indices(tmp_path):
    path = tmp_path / "run.json"
    history = [
        {"content": "task", "role": "human"},
        "not a message",
        {"content": "plan", "role": "Orchestrator (thought)"},
    ]
    path.write_text(json.dumps({"history": history, "mistake_agent": "x"}, indent=2))
    result = forensics.scan([str(path)])
    assert result.rejects.select("source_line", "json_path", "reason").rows() == [
        (7, "$.history[1]", "history entry is not a JSON object")
    ]
    assert result.turns["agent_name"].to_list() == ["human", "Orchestrator (thought)"]
    note = result.trajectories["ingest_note"][0]
    assert note == "history entries 1 rejected: turn_index is the history index before entry 1 only"


def test_other_histories_and_message_lists_are_not_claimed(tmp_path):
    """SWE-agent's history (agent, message_type), a plain OpenAI message list, a history of
    plain chat roles without speakers: not these logs."""
    cases = {
        "swe.traj": {"history": [{"role": "system", "content": "x", "agent": "main"}]},
        "messages.json": [{"role": "system", "content": "x"}, {"role": "user", "content": "y"}],
        "chat.json": {"history": [{"role": "user", "content": "x"}]},
    }
    for name, value in cases.items():
        path = tmp_path / name
        path.write_text(json.dumps(value))
        fmt, _ = detect(path.read_bytes(), path)
        assert fmt is None or fmt.name != "multi_agent_history", name
