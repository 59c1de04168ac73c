"""Plain tau-bench console output (no wrapper printing messages), concurrent tasks included."""
# ruff: noqa: E501  (verbatim console lines are long by nature)

from __future__ import annotations

import forensics

CONSOLE = """\
Namespace(num_trials=1, env='airline', model='gpt-4o', model_provider='openai', user_model='gpt-4o', user_model_provider='openai', agent_strategy='tool-calling', temperature=0.0, task_split='test', start_index=0, end_index=-1, task_ids=None, log_dir='results', max_concurrency=2, seed=10, shuffle=0, user_strategy='llm', few_shot_displays_path=None)
Loading user with strategy: llm
Running tasks 0 to 3 (checkpoint path: results/tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_1118113344.json)
Running task 0
Running task 1
✅ task_id=1 {'task': {'user_id': 'u1', 'actions': [], 'instruction': 'I\\'m "here"', 'outputs': []}, 'source': 'user', 'user_cost': 0.001, 'reward_info': {'reward': 1.0, 'info': {'r_actions': 1.0, 'gt_data_hash': 'ab'}, 'actions': []}}
-----
❌ task_id=0 {'error': 'litellm.BadRequestError: context length exceeded', 'traceback': 'Traceback (most recent call last):\\n  File "x.py"'}
-----
Running task 2
Running task 3
❌ task_id=3 {'error': 'litellm.APIConnectionError: Hosted_vllmException - Connection error.', 'traceback': 'Traceback (most recent call last):\\n  File "x.py"'}
-----
❌ task_id=2 {'task': {'user_id': 'u2', 'actions': [], 'instruction': 'x', 'outputs': []}, 'source': 'user', 'user_cost': None, 'reward_info': None}
-----
🏆 Average reward: 0.3333333333333333
"""


def test_console_results_become_trajectories(tmp_path):
    log = tmp_path / "console.txt"
    log.write_text(CONSOLE)
    result = forensics.scan([str(log)])
    assert result.rejects.is_empty()
    rows = {r["task_id"]: r for r in result.trajectories.iter_rows(named=True)}
    assert sorted(rows) == ["0", "1", "2", "3"]
    assert rows["1"]["reward"] == 1.0 and rows["1"]["source_line"] == 5
    assert rows["0"]["reward"] == 0.0 and rows["0"]["termination_reason"] == "error"
    assert rows["0"]["error"].startswith("litellm.BadRequestError")
    assert rows["2"]["termination_reason"] == "max_steps"
    assert {r["trial"] for r in rows.values()} == {0}
    assert rows["1"]["agent_model"] == "gpt-4o"
    assert result.turns.is_empty()
    # Episodes that died in an exception left no turns; they are reported where they start.
    found = {
        (r["rule"], r["task_id"], r["turn_index"], r["source_line"])
        for r in result.findings.iter_rows(named=True)
    }
    assert found == {("context-overflow", "0", None, 4), ("episode-crashed", "3", None, 11)}
    causes = {c.id: c for c in result.diagnosis.causes}
    assert causes["harness-exception"].fixes[0]["action"] == (
        "Fix the exception: litellm.APIConnectionError: Hosted_vllmException - Connection error."
    )
    assert "1 episode that left no turn" in causes["context-overflow"].fixes[0]["detail"]
