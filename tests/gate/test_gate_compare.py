"""forensics compare: many runs side by side, a runs × causes matrix with Wilson intervals."""

from __future__ import annotations

import json

import pytest

from forensics.tools import compare

from conftest import ROOT, run_cli
from pinned_rules import PINNED

# One benchmark (tau-bench retail) under three settings: the gpt-4.1-mini control, the Qwen3 run
# at max_tokens=512 without a reasoning parser, and that run's checkpoint cut by a kill.
CONTROL = "sample_logs/tau_bench_results_control.json"
FRUSTRATED = "sample_logs/tau_bench_results_frustrated.json"
TRUNCATED = "sample_logs/tau_bench_results_truncated.json"

TOP_KEYS = [
    "runs",
    "reference",
    "interval",
    "has_rewards",
    "episodes_in_every_run",
    "causes",
    "changes",
    "worse",
]
RUN_KEYS = [
    "label",
    "input",
    "run_ids",
    "trajectories",
    "scored",
    "mean_reward",
    "findings",
    "rejects",
    "rejected_files",
    "agent_models",
    "variants",
]
CELL_KEYS = [
    "affected",
    "episodes",
    "rate",
    "ci95",
    "rank",
    "reward_lost",
    "scored_affected",
    "mean_reward_affected",
    "mean_reward_unaffected",
    "fixes",
    "change",
    "beyond_ci",
    "fixes_changed",
]
CHANGE_KEYS = [
    "cause",
    "run",
    "change",
    "beyond_ci",
    "rate",
    "affected",
    "fixes_added",
    "fixes_removed",
]


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the runs as a user names them: relative paths


def run(tmp_path, *runs: str, extra: tuple[str, ...] = ()):
    out = tmp_path / "c.json"
    code, stdout, stderr = run_cli("compare", "--config", PINNED, *runs, "--json", str(out), *extra)
    return code, stdout, stderr, json.loads(out.read_text(encoding="utf-8"))


def matrix(d):
    return [
        (c["id"], [(x["affected"], x["episodes"], x["ci95"], x["change"]) for x in c["cells"]])
        for c in d["causes"]
    ]


def test_three_runs_of_one_benchmark_exact_matrix(tmp_path):
    code, out, err, d = run(tmp_path, CONTROL, FRUSTRATED, TRUNCATED)
    assert code == 1 and err == ""  # causes appeared after the control
    assert [(r["label"], r["input"], r["trajectories"], r["mean_reward"]) for r in d["runs"]] == [
        ("R1", CONTROL, 1, 1.0),
        ("R2", FRUSTRATED, 3, 0.0),
        ("R3", TRUNCATED, 2, 0.0),
    ]
    assert [r["rejects"] for r in d["runs"]] == [0, 0, 1]  # the cut record of task 48
    # Wilson 95%: 0 of 1 is [0, 0.79], 3 of 3 [0.44, 1], 2 of 2 [0.34, 1] (rounded outward).
    cells = [(0, 1, [0.0, 0.7935], None), (3, 3, [0.4385, 1.0], "appeared")]
    cells.append((2, 2, [0.3423, 1.0], "appeared"))
    assert matrix(d) == [("truncated-output", cells), ("reasoning-in-content", cells)]
    truncated = d["causes"][0]["cells"]
    assert [
        (x["reward_lost"], x["mean_reward_affected"], x["mean_reward_unaffected"])
        for x in (truncated)
    ] == [(None, None, 1.0), (3.0, 0.0, None), (2.0, 0.0, None)]
    assert [(c["run"], c["cause"], c["change"], c["beyond_ci"]) for c in d["changes"]] == [
        ("R2", "truncated-output", "appeared", False),
        ("R2", "reasoning-in-content", "appeared", False),
        ("R3", "truncated-output", "appeared", False),
        ("R3", "reasoning-in-content", "appeared", False),
    ]
    assert d["changes"][0]["fixes_added"][0] == (
        "Raise the output-token limit (max_tokens) of the agent"
    )
    assert d["episodes_in_every_run"] == 0 and d["worse"] is True
    assert out.splitlines()[:5] == [
        "forensics: 3 runs compared, R1 the reference; rates are affected episodes with 95% "
        "Wilson intervals",
        f"  R1  {CONTROL}: 1 episode, mean reward 1.00 (1 scored), 0 findings",
        f"  R2  {FRUSTRATED}: 3 episodes, mean reward 0.00 (3 scored), 44 findings",
        f"  R3  {TRUNCATED}: 2 episodes, mean reward 0.00 (2 scored), 25 findings, "
        "1 rejected record",
        "episodes (task, trial) in every run: 0",
    ]
    assert "  truncated-output      0/1 0% [0–80]  3/3 100% [43–100]  2/2 100% [34–100]" in out
    assert (
        "  R2  truncated-output: appeared (0 -> 3 episodes, 0% -> 100%, within the intervals' "
        "overlap)" in out
    )


def test_reference_is_the_first_run_and_absence_in_a_partial_rerun_is_not_rerun(tmp_path):
    code, out, _, d = run(tmp_path, FRUSTRATED, TRUNCATED, CONTROL)
    assert code == 0  # nothing got worse than the first run
    cells = [(3, 3, [0.4385, 1.0], None), (2, 2, [0.3423, 1.0], "unchanged")]
    # The control ran task 5 only: it holds none of the episodes the causes touched.
    cells.append((0, 1, [0.0, 0.7935], "not rerun"))
    assert matrix(d) == [("truncated-output", cells), ("reasoning-in-content", cells)]
    assert [(c["run"], c["cause"], c["change"]) for c in d["changes"]] == [
        ("R3", "truncated-output", "not rerun"),
        ("R3", "reasoning-in-content", "not rerun"),
    ]
    assert d["worse"] is False
    assert "  R3  truncated-output: not rerun (3 -> 0 episodes, 100% -> 0%)" in out


def test_by_run_splits_one_scan_into_its_runs(tmp_path):
    """The console log holds two runs: the gpt-4.1-mini control and the Qwen3 run."""
    code, out, _, d = run(tmp_path, "sample_logs/output2.txt", extra=("--by-run",))
    assert code == 1
    assert [(r["run_ids"], r["trajectories"], r["findings"]) for r in d["runs"]] == [
        (["output2.txt#run1"], 1, 0),
        (["output2.txt#run2"], 3, 44),
    ]
    cells = [(0, 1, [0.0, 0.7935], None), (3, 3, [0.4385, 1.0], "appeared")]
    assert matrix(d) == [("truncated-output", cells), ("reasoning-in-content", cells)]
    assert out.splitlines()[1:3] == [
        "  R1  sample_logs/output2.txt: run output2.txt#run1, 1 episode, mean reward 1.00 "
        "(1 scored), 0 findings, control, gpt-4.1-mini",
        "  R2  sample_logs/output2.txt: run output2.txt#run2, 3 episodes, mean reward 0.00 "
        "(3 scored), 44 findings, frustrated, Qwen/Qwen3-0.6B",
    ]
    # A scan of one run is one column: nothing to compare.
    code, out, err = run_cli("compare", "--config", PINNED, "--by-run", CONTROL)
    assert code == 2 and "compare needs two runs or more, not 1" in err


def test_json_keys_are_stable(tmp_path):
    _, _, _, d = run(tmp_path, CONTROL, FRUSTRATED)
    assert list(d) == TOP_KEYS
    assert all(list(r) == RUN_KEYS for r in d["runs"])
    assert all(list(x) == CELL_KEYS for c in d["causes"] for x in c["cells"])
    assert [list(c) for c in d["causes"]] == [["id", "title", "cells"]] * 2
    assert all(list(c) == CHANGE_KEYS for c in d["changes"])
    assert d["interval"] == {"method": "wilson", "level": 0.95}


def test_output_is_the_same_bytes_every_time(tmp_path):
    first = run_cli("compare", "--config", PINNED, CONTROL, FRUSTRATED, TRUNCATED, "--md", "-")
    again = run_cli("compare", "--config", PINNED, CONTROL, FRUSTRATED, TRUNCATED, "--md", "-")
    assert first == again
    code, md, summary = first
    assert code == 1 and md.startswith("# forensics compare: 3 runs\n")
    assert "| truncated-output | 0/1 0% [0–80] | 3/3 100% [43–100] | 2/2 100% [34–100] |" in md
    assert "&lt;family&gt;" in md  # fix text escaped as Markdown
    assert summary.startswith("forensics: 3 runs compared")  # the summary moved to stderr


def test_json_to_stdout(tmp_path):
    code, out, err = run_cli("compare", "--config", PINNED, CONTROL, FRUSTRATED, "--json", "-")
    assert code == 1 and list(json.loads(out)) == TOP_KEYS and "forensics: 2 runs compared" in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((CONTROL,), "compare needs two runs or more"),
        ((CONTROL, "no/such/run.json"), "no/such/run.json"),
        ((CONTROL, "--json", "-", "--md", "-", FRUSTRATED), "both ask for stdout"),
    ],
)
def test_usage_errors_exit_2(args, says):
    code, out, err = run_cli("compare", "--config", PINNED, *args)
    assert code == 2 and out == "" and says in err


def test_a_run_with_nothing_readable_exits_2(tmp_path):
    junk = tmp_path / "notes.bin"
    junk.write_bytes(b"\x00\x01\x02 not an agent run \xff" * 10)
    code, out, err = run_cli("compare", "--config", PINNED, CONTROL, str(junk))
    assert code == 2 and out == ""
    assert err.startswith(f"forensics: error: {junk}: no readable input")


def test_untrusted_run_names_are_escaped(tmp_path):
    hostile = tmp_path / "run\x1b[31m.json"
    hostile.write_bytes((ROOT / CONTROL).read_bytes())
    code, out, _ = run_cli("compare", "--config", PINNED, CONTROL, str(hostile))
    assert code == 0 and "\x1b" not in out and "run\\x1b[31m.json" in out
    assert "causes: none in any run" in out


def _model(n: int, affected: int, fixes: list[str], rewards: bool = True) -> dict:
    """A report model of n episodes (tasks 0..n-1), the first `affected` of them with cause
    `c` (reward 0), the others reward 1."""
    ids = [f"run/task-{i}/trial-0" for i in range(n)]
    return {
        "summary": {"trajectories": n, "runs": []},
        "findings": [],
        "trajectories": [
            {
                "trajectory_id": t,
                "task_id": str(i),
                "trial": 0,
                "reward": 0.0 if i < affected else 1.0,
            }
            for i, t in enumerate(ids)
        ],
        "causes": (
            [
                {
                    "id": "c",
                    "title": "a cause",
                    "rank": 1,
                    "trajectories": affected,
                    "trajectory_ids": ids[:affected],
                    "fixes": [{"action": a} for a in fixes],
                }
            ]
            if affected
            else []
        ),
    }


def test_rates_beyond_the_intervals_rise_and_fall_and_fixes_change():
    d = compare.compare(
        [
            ("a", _model(40, 4, ["raise max_tokens"])),
            ("b", _model(40, 30, ["raise max_tokens", "bound the reasoning"])),  # 10% -> 75%
            ("c", _model(40, 7, ["raise max_tokens"])),  # 17.5%: the intervals overlap
            ("d", _model(40, 0, [])),  # every episode rerun, none affected
        ]
    )
    assert [x["change"] for x in d["causes"][0]["cells"]] == [
        None,
        "rose",
        "unchanged",
        "disappeared",
    ]
    assert [(c["run"], c["change"], c["beyond_ci"]) for c in d["changes"]] == [
        ("R2", "rose", True),
        ("R4", "disappeared", False),  # 4 of 40 vs 0 of 40: the intervals still overlap
    ]
    assert d["changes"][0]["fixes_added"] == ["bound the reasoning"]
    assert d["causes"][0]["cells"][1]["fixes_changed"] is True
    assert d["causes"][0]["cells"][1]["reward_lost"] == 30.0
    assert d["worse"] is True
    fell = compare.compare([("b", _model(40, 30, ["x"])), ("a", _model(40, 4, ["x"]))])
    assert [(c["change"], c["beyond_ci"]) for c in fell["changes"]] == [("fell", True)]
    assert fell["worse"] is False


def test_wilson_interval():
    assert compare.wilson(0, 0) is None
    assert compare.wilson(5, 10) == (0.2365, 0.7635)
    assert compare.wilson(0, 40) == (0.0, 0.0877)
