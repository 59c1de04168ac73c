"""Evidence fusion: an episode seen in several artifacts of a run is one trajectory.

sample_logs/ holds one run's console log (output2.txt), its results checkpoint, the same
checkpoint cut mid-write, and the proxy capture of the run's calls to vLLM
(vllm_capture_frustrated.jsonl, see sample_logs/README.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forensics
from forensics.cli import cli
from forensics.diagnosis.result import runs_frame

from hostile import mutation

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
LOG = SAMPLES / "output2.txt"
CAPTURE = SAMPLES / "vllm_capture_frustrated.jsonl"
# Agent turns of run 2 in output2.txt: tasks 12, 27 and 48 (sample_logs/README.md).
AGENT_LINES = [*range(120, 141, 4), *range(150, 163, 4), *range(172, 201, 4)]


def rel(path: Path) -> str:
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def test_a_folder_of_one_runs_artifacts_counts_each_episode_once(monkeypatch):
    monkeypatch.chdir(SAMPLES.parent)
    result = forensics.scan(["sample_logs/"])
    traj = result.trajectories.sort("trajectory_id")
    assert traj["trajectory_id"].to_list() == [
        "output2.txt#run1/task-5/trial-0",
        "output2.txt#run2/task-12/trial-0",
        "output2.txt#run2/task-27/trial-0",
        "output2.txt#run2/task-48/trial-0",
    ]
    assert traj["reward"].to_list() == [1.0, 0.0, 0.0, 0.0]
    assert traj["sources"].to_list() == [
        ["sample_logs/output2.txt", "sample_logs/tau_bench_results_control.json"],
        *[
            [
                "sample_logs/output2.txt",
                "sample_logs/tau_bench_results_frustrated.json",
                "sample_logs/tau_bench_results_truncated.json",
                "sample_logs/vllm_capture_frustrated.jsonl",
            ]
        ]
        * 2,
        # task 48 is the record the truncated checkpoint lost
        [
            "sample_logs/output2.txt",
            "sample_logs/tau_bench_results_frustrated.json",
            "sample_logs/vllm_capture_frustrated.jsonl",
        ],
    ]
    assert traj["disagreements"].null_count() == 4
    # every finding is on the console log's lines, once
    assert set(result.findings["source_path"]) == {"sample_logs/output2.txt"}
    assert result.findings.filter(pl.col("rule") == "unclosed-think").height == 18
    notes = {f.path: f.note for f in result.files}
    assert notes["sample_logs/tau_bench_results_frustrated.json"] == (
        "episodes also read from sample_logs/output2.txt: counted once there"
    )
    runs = runs_frame(result).sort("run_id")
    assert runs.select("run_id", "domain", "started", "trajectories").rows() == [
        ("output2.txt#run1", "retail", "11-18 10:15:02", 1),
        ("output2.txt#run2", "retail", "11-18 11:33:44", 3),
    ]


def test_the_capture_of_the_same_run_proves_the_cut_off_turns_hit_max_tokens(output2_scan):
    alone = output2_scan
    assert "max-tokens" not in set(alone.findings["rule"])
    assert "max-tokens" in alone.not_checked[str(LOG)]

    fused = forensics.scan([str(LOG), str(CAPTURE)])
    hits = fused.findings.filter(pl.col("rule") == "max-tokens").sort("source_line")
    assert hits["source_path"].unique().to_list() == [str(LOG)]
    assert hits["source_line"].to_list() == AGENT_LINES
    agent = fused.turns.filter(
        (pl.col("actor") == "agent") & pl.col("source_line").is_in(AGENT_LINES)
    )
    assert agent.height == 18
    assert set(agent["finish_reason"]) == {"max_tokens"}
    assert set(agent["finish_reason_raw"]) == {"length"}
    assert set(agent["output_tokens"]) == set(agent["max_output_tokens"]) == {512}
    assert all(f.startswith(f"{CAPTURE}:") for f in agent["fused_from"])
    # the user simulator's own calls complete its turns: they stopped normally
    user = fused.turns.filter(
        (pl.col("actor") == "user_sim") & pl.col("trajectory_id").str.contains("run2")
    )
    assert set(user["finish_reason"]) == {"stop"} and user["fused_from"].null_count() == 0
    # the log's findings stay, once each
    assert fused.findings.filter(pl.col("rule") == "reasoning-leak").height == 21
    assert fused.trajectories.height == 4


def test_fusion_can_be_switched_off(monkeypatch):
    monkeypatch.chdir(SAMPLES.parent)
    res = CliRunner().invoke(cli, ["scan", "sample_logs/", "--no-report", "--no-fuse"])
    assert res.output.startswith("forensics: 5 files, 16 trajectories"), res.output


def _results(path: Path, edit) -> Path:
    records = json.loads((SAMPLES / "tau_bench_results_control.json").read_text())
    edit(records)
    path.write_text(json.dumps(records, indent=2))
    return path


def test_two_artifacts_that_disagree_on_the_reward_are_reported(tmp_path):
    def fail(records):
        records[0]["reward"] = 0.0
        records[0]["info"]["reward_info"]["reward"] = 0.0

    results = _results(tmp_path / "results.json", fail)
    result = forensics.scan([str(LOG), str(results)])
    row = result.trajectories.filter(pl.col("task_id") == "5").to_dicts()
    assert len(row) == 1
    # the results file is what the benchmark scored into: its reward wins, the conflict shows
    assert row[0]["reward"] == 0.0
    assert row[0]["disagreements"] == f"reward: 0 in {results}, 1 in {LOG}"
    res = CliRunner().invoke(cli, ["scan", str(LOG), str(results), "--no-report"])
    assert f"sources disagree: output2.txt#run1/task-5/trial-0: reward: 0 in {results}" in (
        res.output
    )


def test_identical_trials_pair_one_to_one_and_different_episodes_stay_apart(tmp_path):
    def two_trials(records):
        records.append({**records[0], "trial": 1})

    a = _results(tmp_path / "a.json", two_trials)
    shutil.copy(a, tmp_path / "b.json")
    result = forensics.scan([str(a), str(tmp_path / "b.json")])
    assert result.trajectories.height == 2
    assert result.trajectories["sources"].to_list() == [[str(a), str(tmp_path / "b.json")]] * 2

    def other_episode(records):
        for msg in records[0]["traj"]:
            if msg["role"] != "system" and msg.get("content"):
                msg["content"] = "A different conversation: " + msg["content"][::-1]

    c = _results(tmp_path / "c.json", other_episode)
    result = forensics.scan([str(LOG), str(c)])
    assert result.trajectories.filter(pl.col("task_id") == "5").height == 2


def test_a_capture_of_another_run_is_not_fused(tmp_path, scan_of):
    capture = Path(__file__).parent.parent / "data" / "capture" / "vllm_agent_loop.jsonl"
    result = forensics.scan([str(LOG), str(capture)])
    alone = scan_of(capture)
    assert result.trajectories.height == 4 + alone.trajectories.height
    assert result.trajectories["sources"].list.len().max() == 1


PROPERTY = settings(
    max_examples=8,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(
    "partner", ["vllm_capture_frustrated.jsonl", "tau_bench_results_frustrated.json"]
)
@PROPERTY
@given(data=st.data())
def test_a_damaged_partner_artifact_never_loses_or_doubles_an_episode(
    partner, data, tmp_path_factory
):
    """Whatever happened to the second artifact, the log's episodes are each counted once,
    every artifact is either a source of some trajectory or accounted for by rejects, and the
    scan ends normally."""
    work = tmp_path_factory.mktemp("fuse")
    path = work / partner
    path.write_bytes(data.draw(mutation((SAMPLES / partner).read_bytes()), label="partner"))
    result = forensics.scan([str(LOG), str(path)])
    traj = result.trajectories
    from_log = traj.filter(pl.col("sources").list.contains(str(LOG)))
    assert sorted(from_log["task_id"]) == ["12", "27", "48", "5"]
    assert from_log["source_path"].unique().to_list() == [str(LOG)]
    sources = set(traj["sources"].explode().drop_nulls())
    assert sources <= {str(LOG), str(path)}
    report = {f.path: f for f in result.files}[str(path)]
    assert (
        str(path) in sources
        or report.records == 0
        or (result.rejects.filter(pl.col("source_path") == str(path)).height > 0)
    )
