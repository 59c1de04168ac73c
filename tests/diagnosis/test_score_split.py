"""Is this score about the model? The failed and penalised episodes split by whose failure
they were (rules/causes.toml `class`), in every output and in the trajectories table."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

import forensics
from forensics.check import engine
from forensics.cli import cli
from forensics.diagnosis import causes, diagnose

from conftest import SAMPLES, realdata


def _groups(split: diagnose.ScoreSplit) -> dict[str, tuple[int, float]]:
    return {g.score_class: (g.episodes, g.reward_lost) for g in split.groups if g.episodes}


def test_every_cause_of_the_pack_has_a_class():
    specs = causes.load_causes(engine.default_rules_dir())
    unclassified = sorted(c.id for c in specs.values() if c.score_class not in causes.SCORE_CLASSES)
    assert not unclassified, f"causes without class = infra|model: {unclassified}"


def test_a_class_outside_infra_and_model_is_refused(tmp_path):
    (tmp_path / "causes.toml").write_text(
        '[[cause]]\nid = "x"\nclass = "user"\ntitle = "X"\norder = 1\n'
    )
    with pytest.raises(engine.RuleError, match="class must be one of infra, model"):
        causes.read_causes(tmp_path / "causes.toml")


def test_output2_loses_all_its_reward_to_plumbing(output2_scan):
    split = output2_scan.diagnosis.score
    assert split.scored == 4 and split.penalised == 3 and split.reward_lost == 3.0
    assert _groups(split) == {"infra": (3, 3.0)}
    assert split.plumbing_share == 1.0
    assert (split.mean_reward, split.mean_reward_without_infra) == (0.25, 1.0)
    assert split.groups[0].causes == ["reasoning-in-content", "truncated-output"]
    rows = output2_scan.sql(
        "select task_id, reward, fault_class from trajectories order by task_id"
    ).fetchall()
    assert rows == [
        ("12", 0.0, "infra"),
        ("27", 0.0, "infra"),
        ("48", 0.0, "infra"),
        ("5", 1.0, None),
    ]


def _cause(cid: str, score_class: str, ids: list[str]) -> diagnose.Cause:
    return diagnose.Cause(
        rank=1, id=cid, title=cid, rules=[cid], trajectories=len(ids), turns=len(ids),
        reward_lost=0.0, severity="high", confidence="hard", why_ranked="", fixes=[],
        evidence=[], trajectory_ids=ids, score_class=score_class,
    )  # fmt: skip


def test_a_mixed_episode_counts_as_plumbing_and_an_untouched_failure_as_unexplained():
    trajectories = pl.DataFrame(
        {"trajectory_id": ["a", "b", "c", "d", "e"], "reward": [0.0, 0.5, 0.0, 1.0, None]}
    )
    found = [
        _cause("loop", "model", ["a", "b"]),
        _cause("cut", "infra", ["a", "d", "e"]),
        _cause("new", causes.UNCLASSIFIED, ["b"]),
    ]
    split = diagnose.score_split(found, trajectories)
    assert split.episode_class == {
        "a": "infra", "b": "model", "c": "unexplained", "d": "infra", "e": "infra"
    }  # fmt: skip
    assert _groups(split) == {"infra": (1, 1.0), "model": (1, 0.5), "unexplained": (1, 1.0)}
    assert split.reward_lost == 2.5 and split.plumbing_share == 0.4
    # d earned full reward although plumbing touched it; it stays out of the clean score
    assert split.scored_without_infra == 2 and split.mean_reward_without_infra == 0.25
    assert split.unscored_infra == 1
    assert split.text == (
        "Of 3 failed or penalised episodes (reward lost 2.5): 1 plumbing (reward lost 1, 40%), "
        "1 model behaviour (reward lost 0.5, 20%), 1 with no finding (reward lost 1, 40%). "
        "40% of the reward lost is plumbing, not the model. Mean reward 0.38 as measured; 0.25 "
        "over the 2 episodes plumbing did not touch. Plumbing faults hit 1 unscored episode."
    )


def test_split_in_json_markdown_terminal_and_html(tmp_path):
    out = tmp_path / "r.json"
    md = tmp_path / "r.md"
    res = CliRunner().invoke(
        cli,
        [
            "scan", str(SAMPLES / "output2.txt"), "-o", str(tmp_path / "rep"),
            "--json", str(out), "--md", str(md),
        ],
    )  # fmt: skip
    doc = json.loads(out.read_text())
    split = doc["score_split"]
    assert split["penalised"] == 3 and split["plumbing_share"] == 1.0
    assert split["episodes"] == {"infra": 3}
    assert [t["fault_class"] for t in doc["trajectories"]].count("infra") == 3
    assert "Is this score about the model? Of 3 failed or penalised episodes" in res.output
    assert "| plumbing | 3 | 3 | 100% | `reasoning-in-content`, `truncated-output` |" in (
        md.read_text()
    )
    page = (tmp_path / "rep" / "report.html").read_text()
    assert '<tr class="split-infra"><td>plumbing</td><td class="r">3</td>' in page


def test_real_tau2_runs_split():
    split = forensics.scan([str(realdata("tau2"))]).diagnosis.score
    assert (split.scored, split.penalised, split.reward_lost) == (104, 46, 46.0)
    # qwen2.5's too_many_errors episode (run-exit-model) and its two other action loops are
    # the model's; the simulator's "please transfer me" in gpt-4.1 task 26 and qwen2.5 task 21
    # is not plumbing: their reward breakdowns fail on the agents' own actions (issue 21)
    assert _groups(split) == {"infra": (3, 3.0), "model": (11, 11.0), "unexplained": (32, 32.0)}
    assert split.plumbing_share == 0.0652
    assert (split.mean_reward, split.mean_reward_without_infra) == (0.5577, 0.57)


def test_healthy_real_tau_bench_runs_have_no_fault_but_their_failures():
    result = forensics.scan([str(realdata("tau_bench"))])
    split = result.diagnosis.score
    assert _groups(split) == {"unexplained": (44, 44.0)}
    assert split.plumbing_share == 0.0
    assert split.mean_reward_without_infra == split.mean_reward == 0.5319


def test_fault_class_is_a_column_of_the_stored_trajectories_table(tmp_path):
    res = CliRunner().invoke(
        cli, ["scan", str(SAMPLES / "output2.txt"), "--no-report", "--parquet", str(tmp_path)]
    )
    assert res.exit_code == 1, res.output  # high findings: the gate fails the scan
    stored = pl.read_parquet(tmp_path / "trajectories.parquet").sort("task_id")
    assert stored.select("task_id", "fault_class").rows() == [
        ("12", "infra"), ("27", "infra"), ("48", "infra"), ("5", None)
    ]  # fmt: skip
