"""Harbor / Terminal-Bench trials: ATIF trajectories with continuations, trial result.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import forensics

JOB = Path(__file__).parent.parent / "data" / "agents" / "harbor" / "2026-01-05__12-00-00"
TERMINUS = JOB / "hello-world__Xy7Lm2Q"
OPENHANDS = JOB / "hello-world__Ab3Cd4E"
TIMEOUT = JOB / "fix-git__Tq9Rs1U"


def _by_task_model(result):
    return {(r["task_id"], r["agent_model"]): r for r in result.trajectories.iter_rows(named=True)}


def test_a_job_directory_reads_every_file_without_rejects():
    result = forensics.scan([str(JOB)])
    assert result.rejects.is_empty()
    formats = {
        Path(f.path).relative_to(JOB).as_posix(): (f.format, f.records) for f in result.files
    }
    assert formats == {
        "fix-git__Tq9Rs1U/result.json": ("harbor_trial_result", 1),
        "hello-world__Ab3Cd4E/agent/trajectory.json": ("harbor_atif", 1),
        "hello-world__Ab3Cd4E/result.json": ("harbor_trial_result", 0),
        "hello-world__Xy7Lm2Q/agent/trajectory.cont-1.json": ("harbor_atif", 0),
        "hello-world__Xy7Lm2Q/agent/trajectory.json": ("harbor_atif", 1),
        "hello-world__Xy7Lm2Q/result.json": ("harbor_trial_result", 0),
    }
    notes = {f.note for f in result.files if f.records == 0}
    assert notes == {
        "continuation of trajectory.json: read with it",
        "trial result, applied to agent/trajectory.json",
    }


def test_continuation_steps_join_the_episode_located_in_their_own_file():
    result = forensics.scan([str(TERMINUS)])
    turns = result.turns
    main = str(TERMINUS / "agent" / "trajectory.json")
    cont = str(TERMINUS / "agent" / "trajectory.cont-1.json")
    assert turns.height == 16
    assert turns["source_path"].to_list() == [main] * 8 + [cont] * 8
    # the continuation's first steps are copied context: not turns again
    first_cont = turns.row(8, named=True)
    assert (first_cont["actor"], first_cont["source_line"], first_cont["output_tokens"]) == (
        "agent", 39, 420
    )  # fmt: skip
    assert turns["actor"].to_list()[:3] == ["user_sim", "agent", "env"]
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["reward"] == 1.0 and traj["task_id"] == "hello-world"
    assert traj["ingest_note"] == (
        "4 step(s) of continuation files repeat earlier context (is_copied_context), not turns; "
        "1 sub-agent trajectory reference(s) not followed"
    )
    assert result.findings.is_empty()


def test_structured_tool_calls_and_observations():
    result = forensics.scan([str(OPENHANDS)])
    turns = result.turns
    agent = turns.filter(turns["actor"] == "agent")
    assert agent["tool_calls"][0].to_list()[0]["name"] == "str_replace_editor"
    assert agent["tool_calls"][1].to_list()[0]["name"] == "finish"
    env = turns.filter(turns["actor"] == "env")
    assert env["content"].to_list() == ["File created successfully at: /app/hello.txt"]
    assert set(agent["tools_attached"]) == {True}
    assert set(agent["model"]) == {"anthropic/claude-sonnet-4-5"}  # from result.json
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["reward"] == 0.0 and traj["tool_call_count"] == 2


def test_a_trial_without_trajectory_is_an_episode_with_its_exception():
    result = forensics.scan([str(TIMEOUT)])
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["termination_reason"] == "AgentTimeoutError"
    assert traj["error"] == "AgentTimeoutError: Agent execution timed out after 900.0 seconds"
    assert traj["turn_count"] == 0 and traj["reward"] is None
    # the crash, and its class: the harness's time limit ended it (rules-episode's run-exit)
    assert sorted((f["rule"], f["turn_index"]) for f in result.findings.iter_rows(named=True)) == [
        ("episode-crashed", None),
        ("run-exit-infra", None),
    ]


def test_exception_of_a_trial_with_trajectory_is_its_termination(tmp_path):
    trial = tmp_path / "job" / "hello-world__Zz"
    shutil.copytree(OPENHANDS, trial)
    doc = json.loads((trial / "result.json").read_text())
    doc["exception_info"] = {"exception_type": "AgentTimeoutError", "exception_message": "late"}
    (trial / "result.json").write_text(json.dumps(doc))
    result = forensics.scan([str(trial)])
    (traj,) = result.trajectories.iter_rows(named=True)
    assert (traj["termination_reason"], traj["error"]) == (
        "AgentTimeoutError", "AgentTimeoutError: late"
    )  # fmt: skip
    assert traj["run_id"] == "job:anthropic/claude-sonnet-4-5"


def test_a_continuation_alone_is_read_as_a_trajectory(tmp_path):
    cont = tmp_path / "trajectory.cont-1.json"
    shutil.copy(TERMINUS / "agent" / "trajectory.cont-1.json", cont)
    result = forensics.scan([str(cont)])
    assert result.trajectories.height == 1
    assert result.turns.height > 0


def test_a_bad_step_is_rejected_with_its_json_path(tmp_path):
    doc = json.loads((OPENHANDS / "agent" / "trajectory.json").read_text())
    doc["steps"][1] = 42
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    (reject,) = result.rejects.iter_rows(named=True)
    assert (reject["json_path"], reject["reason"]) == ("$.steps[1]", "step is not a JSON object")
    assert result.turns.height == 6


def test_steps_of_the_wrong_type_are_rejected_at_their_path(tmp_path):
    doc = json.loads((OPENHANDS / "agent" / "trajectory.json").read_text())
    doc["steps"] = "none"
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(doc))
    result = forensics.scan([str(path)])
    (reject,) = result.rejects.iter_rows(named=True)
    assert (reject["json_path"], reject["reason"]) == ("$.steps", "steps is not an array")


def test_a_finish_reason_an_agent_keeps_in_step_extra_is_read(tmp_path):
    doc = json.loads((TERMINUS / "agent" / "trajectory.json").read_text())
    doc.pop("continued_trajectory_ref")
    doc["steps"][1]["extra"] = {"stop_reason": "max_tokens"}
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(doc, indent=2))
    result = forensics.scan([str(path)])
    agent = result.turns.filter(result.turns["actor"] == "agent")
    assert agent["finish_reason"].to_list() == ["max_tokens", None, None]


def test_a_cut_result_beside_a_trajectory_is_rejected_not_ignored(tmp_path):
    trial = tmp_path / "job" / "hello-world__Cut"
    shutil.copytree(OPENHANDS, trial)
    text = (trial / "result.json").read_text()
    (trial / "result.json").write_text(text[: len(text) // 2])
    result = forensics.scan([str(trial)])
    (reject,) = result.rejects.iter_rows(named=True)
    assert reject["source_path"] == str(trial / "result.json")
    assert reject["reason"].startswith("not a whole trial result")
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["turn_count"] == 7 and traj["reward"] is None  # the trajectory is still read


# --- one model call written as several steps (issue 21 item 1) -------------------------------

SPLIT = Path(__file__).parent.parent / "data" / "agents" / "harbor" / "2026-02-10__09-00-00"
SPLIT_TRIAL = SPLIT / "fix-tests__Cc5Dd6F"


def _agent_turns(result):
    turns = result.turns.filter(result.turns["actor"] == "agent")
    return [
        (
            t["source_line"],
            t["content"],
            [c["name"] for c in t["tool_calls"]],
            t["input_tokens"],
            t["finish_reason"],
        )
        for t in turns.iter_rows(named=True)
    ]


def test_blocks_of_one_response_are_one_turn_and_raise_no_false_finding():
    # Harbor's Claude Code converter before #1760 wrote a step per content block, each with
    # the message's usage and stop_reason: read as turns they were 4 empty-tool-calls (a text
    # step with stop_reason tool_use) and a silent-prompt-truncation (the same prompt count
    # three times) on a healthy trial.
    result = forensics.scan([str(SPLIT)])
    assert result.rejects.is_empty()
    assert _agent_turns(result) == [
        (27, "I'll run the test suite and read the parser to see what fails.", ["Bash", "Read"],
         11873, "tool_calls"),
        (153, "The parser returns None for an empty line. I'll make it return an empty list "
         "instead.", ["Edit"], 13390, "tool_calls"),
        (217, "Now I'll run the tests again.", ["Bash"], 13761, "tool_calls"),
        (280, "All 14 tests pass: `parse_line('')` now returns an empty list.", [], 14102, "stop"),
    ]  # fmt: skip
    first = result.turns.filter(result.turns["source_line"] == 27).row(0, named=True)
    assert first["reasoning"].startswith("The task says empty lines return None.")
    assert first["output_tokens"] == 212
    # the results of both calls come after the turn that made them
    assert result.turns["actor"].to_list() == [
        "user_sim", "agent", "env", "env", "agent", "env", "agent", "env", "agent",
    ]  # fmt: skip
    (traj,) = result.trajectories.iter_rows(named=True)
    assert traj["reward"] == 1.0 and traj["tool_call_count"] == 4
    assert traj["ingest_note"] == (
        "5 step(s) continue the model call of the step before them (blocks of one response): "
        "one turn each call"
    )
    assert result.findings.is_empty()


def _split_copy(tmp_path, change):
    doc = json.loads((SPLIT_TRIAL / "agent" / "trajectory.json").read_text())
    change(doc["steps"])
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(doc, indent=2))
    return forensics.scan([str(path)])


def test_usage_kept_on_the_first_block_only_still_groups_the_blocks(tmp_path):
    # harbor #905 (2026-03) to #1760: metrics on the first step of a message only
    def first_block_only(steps):
        for i in (2, 3, 4, 6, 8):
            steps[i].pop("metrics")

    result = _split_copy(tmp_path, first_block_only)
    assert [t[2] for t in _agent_turns(result)] == [["Bash", "Read"], ["Edit"], ["Bash"], []]
    assert result.findings.is_empty()


def test_a_shared_message_id_groups_steps_and_different_ids_part_them(tmp_path):
    def ids(steps):
        for i, step in enumerate(steps[1:], 1):
            step.pop("metrics")
            step["extra"]["message_id"] = "msg_A" if i < 5 else f"msg_{i}"

    result = _split_copy(tmp_path, ids)
    assert [t[2] for t in _agent_turns(result)] == [
        ["Bash", "Read"],
        [],
        ["Edit"],
        [],
        ["Bash"],
        [],
    ]


def test_steps_of_different_calls_stay_apart(tmp_path):
    def apart(steps):
        steps[1]["metrics"]["prompt_tokens"] -= 1  # another prompt: another call
        steps[6]["llm_call_count"] = 1  # a writer that counts calls wrote one step per call
        steps[6]["metrics"] = steps[5]["metrics"]

    result = _split_copy(tmp_path, apart)
    assert [(t[1][:20], t[2]) for t in _agent_turns(result)] == [
        ("", []),
        ("I'll run the test su", ["Bash", "Read"]),
        ("The parser returns N", []),
        ("", ["Edit"]),
        ("Now I'll run the tes", ["Bash"]),
        ("All 14 tests pass: `", []),
    ]


def test_same_usage_across_a_returned_result_is_another_call():
    # harbor's terminus-2 golden run repeats a mocked usage (850 prompt tokens) on steps that
    # each got their observation back before the next: three calls, not one
    result = forensics.scan([str(TERMINUS)])
    cont = result.turns.filter(
        (result.turns["actor"] == "agent") & (result.turns["input_tokens"] == 850)
    )
    assert cont.height == 3


# --- issue 21: how a trajectory ended, and terminus-2's format-error replies ---------------

ATIF = Path(__file__).parent.parent / "data" / "corpus" / "files" / "harbor_atif"


def _findings(result) -> list[tuple[str, int, int]]:
    f = result.findings
    return sorted(zip(f["rule"], f["turn_index"], f["source_line"], strict=True))


def test_terminus_2_trajectory_that_stops_on_tool_results_is_cut_off():
    # harbor's golden test `hello-world-timeout`: the agent sleeps, then the trajectory stops
    # after a tool result, with no final message and no mark_task_complete.
    result = forensics.scan(
        [str(ATIF / "wrongbutworks__harbor__terminus_2_hello-world-timeout.trajectory.json")]
    )
    assert _findings(result) == [("run-cut-off", 6, 80)]
    (finding,) = result.findings.iter_rows(named=True)
    assert finding["message"].startswith("run cut off: the ATIF trajectory stops on tool results")
    assert finding["evidence"] == (
        "last agent step: Analysis: Continue working on the task.\nPlan: Sleep for 5 seconds. "
        "(calls bash_command)"
    )


def test_terminus_2_parsing_error_reply_is_found_on_the_rejected_step():
    result = forensics.scan(
        [str(ATIF / "wrongbutworks__harbor__terminus_2_hello-world-invalid-json.trajectory.json")]
    )
    assert _findings(result) == [("format-error-reply", 1, 18)]
    (finding,) = result.findings.iter_rows(named=True)
    assert finding["message"] == (
        "the harness (terminus-2) rejected this reply: Missing required fields: analysis, plan; "
        "the model's reply broke the protocol, no action ran"
    )
    assert finding["evidence"].startswith("harness: Previous response had parsing errors:\nERROR:")


def test_finished_atif_trajectories_are_not_cut_off():
    # Claude Code ends on its summary, terminus-2 on mark_task_complete: both ended.
    for name in (
        "wrongbutworks__harbor__atif2otel_trajectory_pass.json",
        "wrongbutworks__harbor__atif2otel_trajectory_fail.json",
        "wrongbutworks__harbor__terminus_2_hello-world-invalid-json.trajectory.json",
    ):
        result = forensics.scan([str(ATIF / name)])
        assert result.trajectories["termination_reason"].to_list() == [None], name
        assert "run-cut-off" not in result.findings["rule"].to_list()


def test_a_trial_result_says_how_the_trial_ended_whatever_the_last_step(tmp_path):
    trial = tmp_path / "job" / "hello-world__Zz9Yy8X"
    (trial / "agent").mkdir(parents=True)
    shutil.copy(
        ATIF / "wrongbutworks__harbor__terminus_2_hello-world-timeout.trajectory.json",
        trial / "agent" / "trajectory.json",
    )
    (trial / "result.json").write_text(
        json.dumps(
            {
                "task_name": "hello-world",
                "trial_name": trial.name,
                "verifier_result": {"rewards": {"reward": 0.0}},
            }
        )
    )
    result = forensics.scan([str(trial / "agent" / "trajectory.json")])
    assert result.trajectories["termination_reason"].to_list() == [None]
    assert "run-cut-off" not in result.findings["rule"].to_list()
