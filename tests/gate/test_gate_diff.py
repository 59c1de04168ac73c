"""forensics diff: two scans or two JSON results -> new, fixed, persistent; reward per task."""

from __future__ import annotations

import json

from click.testing import CliRunner

from forensics.cli import cli

from conftest import SAMPLES
from pinned_rules import PINNED

OUTPUT2 = str(SAMPLES / "output2.txt")
FRUSTRATED = str(SAMPLES / "tau_bench_results_frustrated.json")
TRUNCATED = str(SAMPLES / "tau_bench_results_truncated.json")
CONTROL = str(SAMPLES / "tau_bench_results_control.json")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def diff(tmp_path, a: str, b: str):
    out = tmp_path / "d.json"
    res = run("diff", "--config", PINNED, a, b, "--json", str(out))
    return res, json.loads(out.read_text())


def test_same_run_from_two_formats_is_all_persistent(tmp_path):
    # the console log and the checkpoint of run 2 hold the same 44 findings (rule, task, turn)
    res, d = diff(tmp_path, OUTPUT2, FRUSTRATED)
    assert res.exit_code == 0
    assert (len(d["findings"]["new"]), len(d["findings"]["fixed"])) == (0, 0)
    assert len(d["findings"]["persistent"]) == 44
    assert [(c["id"], c["state"], c["trajectories"]) for c in d["causes"]] == [
        ("reasoning-in-content", "persistent", [3, 3]),
        ("truncated-output", "persistent", [3, 3]),
    ]
    assert "findings: 0 new, 0 fixed, 44 persistent" in res.output
    assert d["reward_by_task"] == [
        {"task_id": "5", "a": 1.0, "b": None, "delta": None, "n": [1, 0], "not_rerun": True},
        {"task_id": "12", "a": 0.0, "b": 0.0, "delta": 0.0, "n": [1, 1]},
        {"task_id": "27", "a": 0.0, "b": 0.0, "delta": 0.0, "n": [1, 1]},
        {"task_id": "48", "a": 0.0, "b": 0.0, "delta": 0.0, "n": [1, 1]},
    ]


def test_new_findings_exit_1_and_are_listed(tmp_path):
    res, d = diff(tmp_path, TRUNCATED, FRUSTRATED)
    assert res.exit_code == 1
    assert len(d["findings"]["new"]) == 19 and len(d["findings"]["persistent"]) == 25
    assert {f["task_id"] for f in d["findings"]["new"]} == {"48"}
    assert "new findings:" in res.output and "… and" not in res.output.split("new findings:")[0]
    # The cut file lacks task 48: its 19 findings were not rerun, not fixed.
    res, d = diff(tmp_path, FRUSTRATED, TRUNCATED)
    assert res.exit_code == 0
    assert d["findings"]["fixed"] == [] and d["findings"]["new"] == []
    assert len(d["findings"]["not_rerun"]) == 19
    assert {f["task_id"] for f in d["findings"]["not_rerun"]} == {"48"}


def test_json_result_against_a_rerun_of_another_task(tmp_path):
    """Before: the JSON result of the broken run. After: a healthy run of task 5 only, which
    had no finding: tasks 12, 27 and 48 were not rerun, so nothing of theirs is fixed."""
    before = tmp_path / "before.json"
    run("scan", "--no-report", "--config", PINNED, OUTPUT2, "--json", str(before))
    res, d = diff(tmp_path, str(before), CONTROL)
    assert res.exit_code == 0
    assert [(c["id"], c["state"], c["trajectories"]) for c in d["causes"]] == [
        ("reasoning-in-content", "not rerun", [3, 0]),
        ("truncated-output", "not rerun", [3, 0]),
    ]
    assert d["findings"]["fixed"] == [] and len(d["findings"]["not_rerun"]) == 44
    assert d["reward_by_task"][0] == {"task_id": "5", "a": 1.0, "b": 1.0, "delta": 0.0, "n": [1, 1]}
    assert "  not rerun   truncated-output: Output truncated" in res.output
    assert "fixed findings:" not in res.output
    assert "episodes (task, trial): 1 in both, 3 of A not rerun in B (tasks 12, 27, 48)" in (
        res.output
    )


def test_reward_delta_per_task(tmp_path):
    after = tmp_path / "rerun.json"
    records = json.loads((SAMPLES / "tau_bench_results_frustrated.json").read_text())
    for r in records:  # task 12 now succeeds; tau-bench keeps the reward in both places
        if r["task_id"] == 12:
            r["reward"] = r["info"]["reward_info"]["reward"] = 1.0
    after.write_text(json.dumps(records))
    res, d = diff(tmp_path, FRUSTRATED, str(after))
    rows = {r["task_id"]: r for r in d["reward_by_task"]}
    assert rows["12"]["delta"] == 1.0 and rows["27"]["delta"] == 0.0
    assert "  12        0.00   1.00   +1.00" in res.output


def test_diff_errors_exit_2(tmp_path):
    assert run("diff", "--config", PINNED, OUTPUT2, str(tmp_path / "missing")).exit_code == 2
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    res = run("diff", "--config", PINNED, OUTPUT2, str(junk))
    assert res.exit_code == 2
    assert f"{junk}: no readable input" in res.output
    bad = tmp_path / "rules"
    bad.mkdir()
    (bad / "x.toml").write_text("id = 1\n")
    assert run("diff", "--config", PINNED, "--rules", str(bad), OUTPUT2, CONTROL).exit_code == 2
