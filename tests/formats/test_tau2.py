"""tau2-bench results: monolithic files, the dir layout, checkpoints cut or empty."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

import forensics
from forensics.cli import cli
from forensics.ingest import detect

from conftest import DATA, realdata, run_cli

TAU2 = DATA / "tau2"
QWEN = TAU2 / "qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset6.json"
TELECOM = TAU2 / "telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.subset2.json"
HEALTHY_COPIES = [
    TELECOM,
    TAU2 / "gpt-4.1_airline_default_gpt-4.1_1trials.subset2.json",
    TAU2 / "gpt-4.1_telecom_no-user_solo.subset2.json",
    TAU2 / "leaderboard-trimmed_toolorchestra_airline.subset2.json",
]
# The whole files the copies above were cut from, in the optional real-data corpus.
HEALTHY_WHOLE = [
    "2025-08-10T02:44:06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json",
    "gpt-4.1_airline_default_gpt-4.1_1trials.json",
    "gpt-4.1-2025-04-14_telecom_no-user_gpt-4.1-2025-04-14_4trials_5tasks.json",
    "leaderboard-trimmed_toolorchestra_airline.first20.json",
]
# What the healthy whole files really carry: nothing. In gpt-4.1 airline task 26 (reward 0) the
# user simulator answers the agent's offer of a transfer with "Yes, please transfer me …
# ###TRANSFER###", but the reward breakdown shows the agent's own cancellation failed the
# database check (DB 0, COMMUNICATE 1, no action expected): not the simulator's doing (issue 21).
REAL_FINDINGS: dict[str, set[tuple[str, str, int]]] = {}
WHOLE_QWEN = "qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset.json"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def empty_stops(path) -> list[tuple[str, int]]:
    """(task, turn_idx) of agent messages that stopped with nothing: read straight from the JSON."""
    out = []
    for sim in json.loads(path.read_text())["simulations"]:
        for m in sim["messages"]:
            raw = m.get("raw_data") or {}
            if (
                m["role"] == "assistant"
                and raw.get("finish_reason") == "stop"
                and not (m["content"] or "").strip()
                and not m["tool_calls"]
            ):
                out.append((sim["task_id"], m["turn_idx"]))
    return sorted(out)


def test_qwen_empty_stops_are_found_at_their_lines(scan_of):
    result = scan_of(QWEN)
    assert result.rejects.is_empty()
    got = sorted(
        (r["rule"], r["task_id"], r["turn_index"], r["source_line"])
        for r in result.findings.iter_rows(named=True)
        if r["rule"] == "stop-no-tool-calls"
    )
    assert got == [
        ("stop-no-tool-calls", "11", 6, 1103),
        ("stop-no-tool-calls", "19", 6, 1299),
        ("stop-no-tool-calls", "36", 6, 1493),
        ("stop-no-tool-calls", "43", 4, 1637),
        ("stop-no-tool-calls", "6", 12, 906),
    ]
    assert sorted((t, i) for _, t, i, _ in got) == empty_stops(QWEN)
    lines = QWEN.read_text().splitlines()
    for *_, line in got:  # each line opens the empty assistant message itself
        assert lines[line - 1].strip() == "{"
        assert lines[line : line + 2] == [
            '          "role": "assistant",',
            '          "content": "",',
        ]
    first = result.findings.filter(
        (pl.col("task_id") == "6") & (pl.col("rule") == "stop-no-tool-calls")
    ).row(0, named=True)
    assert first["message"].endswith("(167 output tokens spent)")
    ends = dict(
        zip(result.trajectories["task_id"], result.trajectories["termination_reason"], strict=True)
    )
    assert {t for _, t, *_ in got} == {t for t, e in ends.items() if e == "agent_error"}


def test_qwen_turn_columns_come_from_the_message(scan_of):
    result = scan_of(QWEN)
    sims = json.loads(QWEN.read_text())["simulations"]
    expected = []
    for sim in sims:
        for m in sim["messages"]:
            usage = m.get("usage") or {}
            expected.append(
                (
                    sim["task_id"],
                    m["turn_idx"],
                    usage.get("prompt_tokens"),
                    usage.get("completion_tokens"),
                    m.get("cost"),
                    (m.get("raw_data") or {}).get("finish_reason"),
                )
            )
    got = result.turns.select(
        "task_id", "turn_index", "input_tokens", "output_tokens", "cost_usd", "finish_reason_raw"
    ).rows()
    assert sorted(got, key=str) == sorted(expected, key=str)
    agent = result.turns.filter(pl.col("actor") == "agent")
    assert set(agent["model"].drop_nulls()) == {"ollama_chat/qwen2.5:7b"}
    assert set(result.turns.filter(pl.col("actor") == "user_sim")["model"]) == {
        "gpt-4.1-2025-04-14"
    }
    # The hard-coded greeting (raw_data null) was no model call: no model, no tools.
    greetings = agent.filter(pl.col("turn_index") == 0)
    assert set(greetings["content"]) == {"Hi! How can I help you today?"}
    assert greetings["tools_attached"].to_list() == [None] * 6
    assert set(agent.filter(pl.col("turn_index") > 0)["tools_attached"]) == {True}
    # gym-branch `errors` lists become the turn's error; the agent_error trajectory keeps it too
    stopped = result.turns.filter((pl.col("task_id") == "6") & (pl.col("turn_index") == 12))
    assert stopped["error"][0].startswith("Invalid message format.")
    traj = result.trajectories.filter(pl.col("task_id") == "6").row(0, named=True)
    assert traj["error"] == stopped["error"][0]
    assert (traj["termination_reason"], traj["reward"]) == ("agent_error", 0.0)
    labels = {item["key"]: item["value"] for item in traj["labels"]}
    assert labels["domain"] == "airline"
    assert labels["agent_implementation"] == "llm_agent"
    assert (traj["agent_model"], traj["user_model"]) == (
        "ollama_chat/qwen2.5:7b",
        "gpt-4.1-2025-04-14",
    )


def test_telecom_user_tool_calls_and_tool_errors(scan_of):
    result = scan_of(TELECOM)
    turns = result.turns
    user_calls = turns.filter((pl.col("role") == "user") & pl.col("has_tool_calls"))
    assert user_calls.height > 0
    assert set(user_calls["actor"]) == {"user_sim"}
    assert set(turns.filter(pl.col("role") == "tool")["actor"]) == {"env"}
    sims = json.loads(TELECOM.read_text())["simulations"]
    requested = sum(
        1 for s in sims for m in s["messages"] if m["role"] == "tool" and m["requestor"] == "user"
    )
    user_call_count = user_calls["tool_call_count"].sum()
    assert requested == user_call_count  # each user tool call got its result, all actor env
    failed = turns.filter(pl.col("error").is_not_null())
    assert failed.select("role", "actor", "error", "source_line").rows() == [
        ("tool", "env", "Error: Line must be suspended to resume", 2104)
    ]
    # Agent tool-call counts cover the agent's calls only, not the user's.
    by_traj = (
        turns.filter(pl.col("actor") == "agent")
        .group_by("trajectory_id")
        .agg(pl.col("tool_call_count").sum())
    )
    counts = dict(
        zip(
            result.trajectories["trajectory_id"],
            result.trajectories["tool_call_count"],
            strict=True,
        )
    )
    assert dict(by_traj.rows()) == counts


@pytest.mark.parametrize("path", HEALTHY_COPIES, ids=lambda p: p.name)
def test_healthy_copies_parse_completely_without_findings(path, scan_of):
    doc = json.loads(path.read_text())
    result = scan_of(path)
    assert result.rejects.is_empty()
    assert result.trajectories.height == len(doc["simulations"])
    assert result.turns.height == sum(len(s["messages"]) for s in doc["simulations"])
    assert result.findings.is_empty(), result.findings.select("rule", "trajectory_id", "message")


@pytest.mark.parametrize("name", HEALTHY_WHOLE)
def test_healthy_whole_files_have_no_finding_of_any_rule(name):
    path = realdata("tau2", name)
    doc = json.loads(path.read_text())
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty()
    assert result.trajectories.height == len(doc["simulations"]) == 20
    assert result.turns.height == sum(len(s["messages"]) for s in doc["simulations"])
    found = set(result.findings.select("rule", "task_id", "turn_index").iter_rows())
    assert found == REAL_FINDINGS.get(path.name, set()), result.findings.select("rule", "message")


def test_the_reward_breakdown_reaches_the_trajectories_and_the_gate_stays_green():
    path = realdata("tau2", "gpt-4.1_airline_default_gpt-4.1_1trials.json")
    result = forensics.scan([str(path)])
    by_task = {t["task_id"]: t for t in result.trajectories.iter_rows(named=True)}
    task26 = by_task["26"]
    assert task26["reward_breakdown"] == [
        {"key": "DB", "value": 0.0},
        {"key": "COMMUNICATE", "value": 1.0},
    ]
    assert (task26["db_match"], task26["expected_actions"]) == (False, [])
    # action_checks say which expected action a call matched
    assert by_task["13"]["expected_actions"] == [
        {"name": "transfer_to_human_agents", "requestor": "assistant", "matched": False}
    ]
    code, out, _ = run_cli("scan", str(path), "--no-report")
    assert code == 0 and "gate: pass" in out


def test_whole_qwen_file_has_exactly_the_nine_empty_stops():
    qwen = realdata("tau2", WHOLE_QWEN)
    result = forensics.scan([str(qwen)])
    assert result.rejects.is_empty()
    assert result.trajectories.height == 24
    stops = result.findings.filter(pl.col("rule") == "stop-no-tool-calls")
    got = sorted(zip(stops["task_id"], stops["turn_index"], strict=True))
    assert len(got) == 9
    assert got == empty_stops(qwen)
    assert stops["trajectory_id"].n_unique() == 9
    # task 21: the simulator's "Please transfer me … ###TRANSFER###" after the agent, stuck on a
    # reservation it could not find, offered a transfer; the task expected two updates and no
    # transfer, so the simulator cost nothing (issue 21): no user-sim-early-stop
    early = result.findings.filter(pl.col("rule") == "user-sim-early-stop")
    assert early.is_empty(), early.select("task_id", "turn_index")


def test_solo_mode_and_trimmed_files(scan_of):
    solo = scan_of(HEALTHY_COPIES[2])
    assert set(solo.turns["actor"]) == {"agent", "env"}
    assert set(solo.trajectories["termination_reason"]) == {"agent_stop"}
    # The orchestrator rewrites the `done` call to ###STOP###, raw_data keeps tool_calls.
    stop = solo.turns.filter(pl.col("content") == "###STOP###")
    assert set(stop["finish_reason_raw"]) == {"tool_calls"}
    trimmed = scan_of(HEALTHY_COPIES[3])
    assert trimmed.turns["finish_reason"].null_count() == trimmed.turns.height
    assert {"max-tokens", "stop-no-tool-calls"} <= set(trimmed.not_checked[str(HEALTHY_COPIES[3])])


def test_truncated_checkpoint_keeps_complete_simulations_and_rejects_the_cut_one():
    path = TAU2 / "qwen_truncated_checkpoint.json"
    result = forensics.scan([str(path)])
    whole = json.loads(QWEN.read_text())["simulations"]
    assert result.trajectories["task_id"].to_list() == [whole[0]["task_id"], whole[1]["task_id"]]
    assert result.turns.height == len(whole[0]["messages"]) + len(whole[1]["messages"])
    text = path.read_text()
    third = text.index(f'"id": "{whole[2]["id"]}"')
    third_line = text.count("\n", 0, third)  # the line before: the object's opening brace
    last_line = text.count("\n") + 1
    assert result.rejects.select("source_line", "reason").rows() == [
        (
            third_line,
            f"truncated file: it ends inside simulation 3 (line {last_line}); "
            "2 complete simulations kept",
        )
    ]
    assert text.splitlines()[third_line - 1].strip() == "{"
    # The empty stop of the kept agent_error simulation is still found.
    stops = result.findings.filter(pl.col("rule") == "stop-no-tool-calls")
    assert stops.select("task_id", "source_line").rows() == [("6", 906)]


def test_empty_checkpoint_is_a_note_and_fails_the_gate(tmp_path):
    path = TAU2 / "qwen2.5-7b_telecom_solo.EMPTY-CHECKPOINT.json"
    result = forensics.scan([str(path)])
    assert (result.trajectories.height, result.turns.height, result.rejects.height) == (0, 0, 0)
    assert result.files[0].format == "tau2_results"
    assert result.files[0].note.startswith("empty checkpoint: simulations is [] (5 tasks planned)")
    res = run("scan", str(path), "--no-report", "--json", str(tmp_path / "r.json"))
    # Nothing in it could be checked: the gate fails and says why, the note tells what it is.
    assert res.exit_code == 1, res.output
    assert f"note: {path}: empty checkpoint: simulations is []" in res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["files"][0]["note"] == result.files[0].note


def test_dir_layout_text_run_with_modern_raw_data_and_placeholder(tmp_path):
    run_dir = TAU2 / "dir_text_run"
    result = forensics.scan([str(run_dir)])
    assert sorted(f.format for f in result.files) == [
        "tau2_results",
        "tau2_simulation",
        "tau2_simulation",
    ]
    trajectories = result.trajectories.sort("task_id")
    assert trajectories.select(
        "trajectory_id", "termination_reason", "turn_count", "reward"
    ).rows() == [
        ("dir_text_run/task-48/trial-0", "max_steps", 12, 0.0),
        ("dir_text_run/task-6/trial-0", "infrastructure_error", 0, None),
    ]
    placeholder = trajectories.row(1, named=True)
    assert placeholder["error"] == "AssistantMessage must have either content or tool_calls."
    assert placeholder["ingest_note"] == "simulation has no messages (infrastructure_error)"
    # >=1.0 raw_data: the finish reason under choices[0], reasoning tokens in the usage details
    sim_file = run_dir / "simulations" / "0f6c1e55-0000-4000-8000-000000000001.json"
    messages = json.loads(sim_file.read_text())["messages"]
    last_agent = [m for m in messages if m["role"] == "assistant" and m["raw_data"]][-1]
    assert last_agent["raw_data"]["choices"][0]["finish_reason"] == "length"
    # The placeholder lost its messages to the exception: reported as a whole episode.
    crashed = result.findings.filter(pl.col("rule") == "episode-crashed")
    assert crashed.select("trajectory_id", "turn_index").rows() == [
        ("dir_text_run/task-6/trial-0", None)
    ]
    found = result.findings.filter(pl.col("rule") != "episode-crashed").row(0, named=True)
    assert result.findings.height == 2
    assert (found["rule"], found["source_path"], found["turn_index"]) == (
        "max-tokens",
        str(sim_file),
        last_agent["turn_idx"],
    )
    turn = result.turns.filter(
        pl.col("turn_key") == f"{found['trajectory_id']}#{found['turn_index']}"
    )
    assert turn.select(
        "finish_reason_raw", "output_tokens", "reasoning_tokens", "max_output_tokens"
    ).row(0) == ("length", 1024, 250, 1024)
    # The index names a third simulation whose file is gone: rejected at its index line.
    text = (run_dir / "results.json").read_text()
    missing = "0f6c1e55-0000-4000-8000-000000000003"
    line = text.count("\n", 0, text.index(missing)) + 1
    assert result.rejects.select("source_path", "source_line").rows() == [
        (str(run_dir / "results.json"), line)
    ]
    assert f"simulations/{missing}.json is missing" in result.rejects["reason"][0]
    assert run("scan", str(run_dir), "--no-report").exit_code == 1


@pytest.mark.parametrize(
    ("run_dir", "ticks"),
    [(TAU2 / "dir_voice_run", 20), ("dir_format_voice_testfixture", 973)],
    ids=["copy", "whole"],
)
def test_voice_simulation_without_messages_is_a_trajectory_with_a_note(run_dir, ticks):
    if isinstance(run_dir, str):
        run_dir = realdata("tau2", run_dir)
    result = forensics.scan([str(run_dir)])
    assert result.rejects.is_empty()
    assert result.turns.is_empty()
    traj = result.trajectories.row(0, named=True)
    assert result.trajectories.height == 1
    assert (traj["task_id"], traj["trial"], traj["termination_reason"], traj["turn_count"]) == (
        "40",
        0,
        "user_stop",
        0,
    )
    assert traj["ingest_note"] == (
        f"full_duplex simulation logged as {ticks} audio ticks without text messages: "
        "no turns to read"
    )
    assert (traj["agent_model"], traj["user_model"]) == (
        "openai:gpt-realtime-2",
        "gpt-4.1-2025-04-14",
    )
    notes = {f.path.rsplit("/", 1)[-1]: f.note for f in result.files}
    assert notes["results.json"].startswith("tau2 directory layout")
    res = run("scan", str(run_dir), "--no-report")
    assert res.exit_code == 0, res.output
    assert "audio ticks without text messages" in res.output


def test_detection_of_both_tau2_shapes():
    fmt, why = detect(QWEN.read_bytes()[:65536])
    assert (fmt.name, why) == (
        "tau2_results",
        "JSON object with info, tasks and simulations (tau2-bench results)",
    )
    sim = next((TAU2 / "dir_voice_run" / "simulations").glob("*.json"))
    fmt, _why = detect(sim.read_bytes()[:65536])
    assert fmt.name == "tau2_simulation"
    # results.json of the dir layout: one line, its info larger than the sniffed head
    fmt, _why = detect((TAU2 / "dir_voice_run" / "results.json").read_bytes()[:4096])
    assert fmt.name == "tau2_results"


# Leaderboard submissions (issue 22): the same simulations in a wrapper object of the
# submitter's own keys, or as a bare array.
WRAPPER = TAU2 / "leaderboard-wrapper_adaptive-agent_airline.subset2.json"
BARE_ARRAY = TAU2 / "leaderboard-array_adaptive-agent_airline.subset2.json"


@pytest.mark.parametrize("path", [WRAPPER, BARE_ARRAY], ids=["wrapper", "bare-array"])
def test_leaderboard_submission_forms_are_tau2_results(path):
    fmt, why = detect(path.read_bytes()[:65536], path)
    assert fmt is not None and fmt.name == "tau2_results", why
    result = forensics.scan([str(path)])
    assert result.rejects.height == 0
    simulations = json.loads(path.read_text())
    simulations = simulations["simulations"] if isinstance(simulations, dict) else simulations
    trajectories = result.trajectories.sort("source_line")
    assert trajectories["task_id"].to_list() == [s["task_id"] for s in simulations]
    assert trajectories["turn_count"].to_list() == [len(s["messages"]) for s in simulations]


def test_a_submission_wrapper_names_the_agent_model_and_keeps_the_crashed_simulation():
    result = forensics.scan([str(WRAPPER)])
    crashed, healthy = result.trajectories.sort("source_line").to_dicts()
    assert (crashed["task_id"], crashed["termination_reason"], crashed["turn_count"]) == (
        "7",
        "infrastructure_error",
        0,
    )
    assert crashed["error"].startswith("litellm.RateLimitError: RateLimitError: OpenAIException")
    assert healthy["agent_model"] == "claude-opus-4-6"
    labels = {label["key"]: label["value"] for label in healthy["labels"]}
    assert labels == {"agent": "adaptive_agent", "domain": "airline"}
    # The submitter's agent is no llm_agent: whether it attached tools is not known.
    agent = result.turns.filter(result.turns["actor"] == "agent")
    assert agent["tools_attached"].null_count() == agent.height
    assert sorted(zip(result.findings["rule"], result.findings["task_id"], strict=True)) == [
        ("episode-crashed", "7")
    ]


def test_a_bare_simulation_array_is_read_and_other_arrays_are_not_claimed(tmp_path):
    result = forensics.scan([str(BARE_ARRAY)])
    assert result.trajectories.sort("task_id")["reward"].to_list() == [1.0, 0.0]
    assert result.findings.height == 0
    # A tau-bench results array (task_id, traj) and a list of messages stay theirs.
    tau_bench = tmp_path / "tau_bench.json"
    tau_bench.write_text(json.dumps([{"task_id": 1, "reward": 0.0, "info": {}, "traj": []}]))
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hi", "id": "1"}]))
    assert detect(tau_bench.read_bytes(), tau_bench)[0].name == "tau_bench_results"
    found = detect(messages.read_bytes(), messages)[0]
    assert found is None or found.name != "tau2_results"
