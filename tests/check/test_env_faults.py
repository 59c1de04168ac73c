"""Environment faults in tool results (issue 22 item 2), through whole scans: the env-* rules
find a fault the agent never got past at its turn and source line, its cause is plumbing with
a fix that names the tool, and they stay silent on real runs whose agent met a missing file, a
DNS failure or a 404 and went on (tests/data/corpus, healthy or recovered)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import forensics

from conftest import DATA

CORPUS = DATA / "corpus" / "files"
TOO_MANY = (
    "Error: 429 Client Error: Too Many Requests for url: "
    "https://serpapi.com/search.json?q=Lyon+population+2020"
)


def _call(i: int, name: str, args: dict[str, str]) -> dict[str, object]:
    function = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{i}", "type": "function", "function": function}],
    }


def _result(i: int, name: str, text: str) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": text}


def _episode(task_id: int, second_search: str) -> dict[str, object]:
    question = {"role": "user", "content": "Find the population of Lyon in 2020."}
    return {
        "task_id": task_id,
        "reward": 0.0,
        "info": {},
        "traj": [
            {"role": "system", "content": "You are a research agent."},
            question,
            _call(1, "web_search", {"query": "Lyon population 2020"}),
            _result(1, "web_search", TOO_MANY),
            _call(2, "web_search", {"query": "Lyon 2020 census"}),
            _result(2, "web_search", second_search),
            {"role": "assistant", "content": "Lyon had about 520,000 inhabitants."},
        ],
    }


def _env_findings(result: forensics.Scan) -> set[tuple[str, str, int, int]]:
    return {
        (r["rule"], r["task_id"], r["turn_index"], r["source_line"])
        for r in result.findings.iter_rows(named=True)
        if r["rule"].startswith("env-")
    }


def test_a_rate_limit_the_tool_never_got_past_is_plumbing_a_recovered_one_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.json"
    episodes = [_episode(1, TOO_MANY), _episode(2, "Lyon: 522,250 inhabitants (2020 census)")]
    path.write_text(json.dumps(episodes, indent=1), encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines()
    # the record of the first 429: its opening brace, four lines above its content
    first_429 = 1 + next(i for i, line in enumerate(lines) if "Too Many Requests" in line) - 4
    assert lines[first_429 - 1].strip() == "{"
    result = forensics.scan([str(path)])
    # the finding points at the first 429 of episode 1; episode 2's search worked the second time
    assert _env_findings(result) == {("env-rate-limited", "1", 3, first_429)}
    (cause,) = [c for c in result.diagnosis.causes if c.id == "env-rate-limited"]
    assert cause.trajectories == 1
    assert cause.fixes[0]["action"] == "Back off and lower the load on web_search"
    split = result.diagnosis.score
    assert split is not None
    assert split.episode_class["results/task-1/trial-0"] == "infra"
    assert "results/task-2/trial-0" not in split.episode_class or (
        split.episode_class["results/task-2/trial-0"] != "infra"
    )


def test_a_sandbox_timeout_that_ended_the_episode_is_found_at_its_turn() -> None:
    # Inspect's tool error of type timeout, the last thing the bash tool returned
    result = forensics.scan([str(DATA / "agents" / "inspect" / "synthetic_failures.json")])
    assert _env_findings(result) == {("env-timeout", "toolfail", 4, 271)}


@pytest.mark.parametrize(
    "name",
    [
        # a coding agent cats the path the issue quotes, gets "No such file", finds tests/…
        "mini_swe_agent/SWE-agent__mini-swe-agent__github_issue.traj.json",
        # ls of a directory that is not there, apt's DNS failure, then the shell works on
        "openhands_legacy/OpenHands__OpenHands__multi_swe_bench_example_output.jsonl",
        # an OpenHands agent writes to /workspace/hello.py before the directory exists
        "api_capture/OpenHands__software-agent-sdk__llmlog_claude-sonnet-4-1757015046.707.json",
        # tau-bench domain errors ("Error: user not found") are answers
        "tau_bench_results/avaljotsingh__tau-bench__task_38.json",
        # a document the tool read mentions 501 errors and a retrieval timeout
        "harbor_atif/wrongbutworks__harbor__atif2otel_trajectory_fail.json",
    ],
)
def test_faults_the_agent_got_past_are_no_finding(name: str) -> None:
    result = forensics.scan([str(CORPUS / name)])
    assert result.turns.height > 0
    assert _env_findings(result) == set()


@pytest.mark.parametrize(
    "fault",
    [
        # Who&When Algorithm-Generated/120: the agent's own code kept the template's key
        "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n"
        "    gmaps = googlemaps.Client(key='YOUR_API_KEY') # Replace 'YOUR_API_KEY'\n"
        "ValueError: Invalid API key provided.",
        # Who&When Algorithm-Generated/83: curl run on the template's address
        "curl: (6) Could not resolve host: <URL>",
    ],
)
def test_a_placeholder_the_agent_ran_as_written_is_its_own_fault(
    tmp_path: Path, fault: str
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps([_episode(1, fault)], indent=1), encoding="utf-8")
    assert _env_findings(forensics.scan([str(path)])) == set()
    # the same refusal without the placeholder is the environment's
    real = fault.replace("YOUR_API_KEY", "AIzaSyD3xample").replace("<URL>", "maps.example.org")
    path.write_text(json.dumps([_episode(1, real)], indent=1), encoding="utf-8")
    assert {f[0] for f in _env_findings(forensics.scan([str(path)]))} == {
        "env-auth-failed" if "key" in fault else "env-unreachable"
    }
