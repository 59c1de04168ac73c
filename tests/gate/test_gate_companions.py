"""Companion files beside a run's artifact do not fail the gate; an unreadable artifact does.

A results folder holds the artifact and a config.json, config.yaml, run.log, scores.csv,
notes.txt. A file that no format claims and in which nothing looks like the record of an agent
run is skipped and listed with the reason (ingest/companions.py); anything that looks like one,
or that a format claims, still fails when nothing in it can be read.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

import forensics
from forensics import distributed
from forensics.cli import main
from forensics.ingest import companions

from conftest import ROOT, SAMPLES, run_cli

CONTROL = SAMPLES / "tau_bench_results_control.json"

# What a harness and the person running it leave beside the results.
COMPANIONS = {
    "config.json": '{"model": "gpt-4o", "temperature": 0.0, "max_output_tokens": 4096,\n'
    ' "tools": ["search", "refund"], "seed": 7}\n',
    "config.yaml": "model: gpt-4o\nmax_tokens: 4096\ntemperature: 0\nparser: hermes\n",
    "run.log": "2024-05-01 12:00:00 INFO starting 50 tasks\n"
    "2024-05-01 12:31:07 INFO done in 1867s, 0 errors\n",
    "scores.csv": "task,reward\n1,1.0\n2,0.0\n",
    "notes.txt": "Rerun after fixing the parser.\nError messages: none. The assistant was fine.\n",
}

# Not plainly unrelated: each looks like an agent's record, and no format reads it (tau-bench's
# console log, printed reasoning, an API log line, a ReAct transcript, a prompt file, a JSON
# object with messages/role/content keys): unreadable, and the gate fails.
AGENTISH = {
    "msgs.json": ('{"messages": [{"role": "user", "content": "hi"}], "n": 1}\n', 1, '"messages":'),
    "hist.json": (
        '{\n  "id": "x",\n  "history": [{"role": "user", "content": "hi"}]\n}\n',
        3,
        '"role":',
    ),
    "prompt.yaml": ("version: 2\nmessages:\n  - role: system\n", 2, "messages:"),
    "think.log": ("INFO step 3\nINFO <think> planning the refund\n", 2, "<think>"),
    "api.log": ("12:00 POST done finish_reason=length\n", 1, "finish_reason="),
    "react.txt": ("Thought: look it up\nAction: get_order[W1]\n", 1, "Thought:"),
    "tau.log": ("starting\n✅ task_id=5 reward=1\n", 2, "task_id=5"),
    "sdk.log": ("litellm: ModelResponse(id='x', choices=[])\n", 1, "ModelResponse("),
}


def results_folder(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(CONTROL, directory / "results.json")
    for name, text in COMPANIONS.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


def gate_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("gate:")]


def test_companion_files_are_skipped_and_listed_not_failed(tmp_path):
    results = results_folder(tmp_path / "results")
    code, out, err = run_cli(
        "scan", "--no-config", "--no-report", "--fail-on", "critical", "--explain-formats",
        "--json", str(tmp_path / "r.json"), str(results),
    )  # fmt: skip
    assert code == 0, out + err
    assert gate_lines(out) == ["gate: pass — no finding at or above critical"]
    for name in COMPANIONS:
        assert f"{results / name}: skipped — {companions.REASON}\n" in out
    assert f"skipped: 5 (5 {companions.REASON})\n" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["skipped"] == [
        {"path": str(results / name), "reason": companions.REASON} for name in sorted(COMPANIONS)
    ]
    assert [f["path"] for f in doc["files"]] == [str(results / "results.json")]
    assert doc["rejects"] == [] and doc["gate"]["unreadable"] == []


@pytest.mark.parametrize("name", sorted(AGENTISH))
def test_a_file_that_looks_like_an_agent_record_still_fails(tmp_path, name):
    text, line, marker = AGENTISH[name]
    (tmp_path / name).write_text(text, encoding="utf-8")
    assert companions.record_marker(tmp_path / name) == (
        f"line {line} looks like an agent's record (`{marker}`)"
    )
    code, out, _ = run_cli("scan", "--no-config", "--no-report", str(CONTROL), str(tmp_path / name))
    assert code == 1, out
    assert gate_lines(out)[0] == (
        f"gate: FAIL — {tmp_path / name}: nothing readable: no recognizable records (unknown "
        f"format); line {line} looks like an agent's record (`{marker}`)"
    )


def test_a_file_a_format_claims_and_cannot_read_still_fails(tmp_path):
    # Named like a config, but a tau-bench results array cut short: the format claims it.
    cut = tmp_path / "config.json"
    cut.write_text(CONTROL.read_text()[:400])
    # An object that looks like a message but lacks its fields: the text scanner rejects it.
    (tmp_path / "notes.txt").write_text('just prose\n{"role": "assistant"}\n')
    code, out, _ = run_cli("scan", "--no-config", "--no-report", str(CONTROL), str(tmp_path))
    assert code == 1
    lines = gate_lines(out)
    assert lines[0].startswith(f"gate: FAIL — {cut}: nothing readable: line 2: object never")
    assert lines[1] == (
        f"gate: FAIL — {tmp_path / 'notes.txt'}: nothing readable: line 2: object looks like a "
        "message or result but lacks the fields to read it"
    )
    # the FAIL line for unreadable inputs says how to accept them, or leave them out
    assert lines[2] == (
        "gate: FAIL — 2 inputs with nothing readable: --allow-unreadable (allow-unreadable = "
        "true) passes with them listed; the ignore-paths config key leaves them out"
    )


def test_a_folder_of_only_companion_files_is_no_readable_input(tmp_path):
    # A run that crashed before writing its artifact: a gate that passes must have looked.
    for name, text in COMPANIONS.items():
        (tmp_path / name).write_text(text)
    code, out, _ = run_cli("scan", "--no-config", "--no-report", str(tmp_path))
    assert code == 1
    assert gate_lines(out) == [
        "gate: FAIL — no readable input: nothing could be checked (the 5 files found were "
        "skipped: see skipped)"
    ]
    # A glob is a search too: it found no artifact.
    code, out, _ = run_cli("scan", "--no-config", "--no-report", str(tmp_path / "*.json"))
    assert code == 1
    assert gate_lines(out) == [
        "gate: FAIL — no readable input: nothing could be checked (the file found was "
        "skipped: see skipped)"
    ]


def test_companion_files_named_by_path_alone_are_nothing_to_check(tmp_path, monkeypatch):
    """As the pre-commit hook names the files a commit touches: a commit of a config alone
    holds no artifact, and is not blocked (a max-rate rule with no input to run on either)."""
    results = results_folder(tmp_path / "results")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(
        "scan", "--no-config", "--no-report", "--max-rate", "max-tokens=0.05",
        "./results/config.json",
    )  # fmt: skip
    assert code == 0, out
    assert gate_lines(out) == [
        "gate: pass — nothing to check: the file named is skipped, no agent artifact (see skipped)"
    ]
    assert f"skipped: 1 (1 {companions.REASON})\n" in out
    code, out, _ = run_cli(
        "scan", "--no-config", "--no-report", "--json", "r.json", *(str(results / n) for n in
        ("config.json", "notes.txt", "run.log")),
    )  # fmt: skip
    assert code == 0, out
    assert gate_lines(out)[-1].startswith("gate: pass — nothing to check: the 3 files named are")
    gate = json.loads(Path("r.json").read_text())["gate"]
    assert (gate["failed"], gate["no_readable_input"], gate["exit_code"]) == (False, False, 0)
    # A file with nothing readable among them still fails: it is no companion.
    (results / "results.json").write_text("")
    code, out, _ = run_cli(
        "scan", "--no-config", "--no-report", str(results / "config.json"),
        str(results / "results.json"),
    )  # fmt: skip
    assert code == 1
    assert (
        gate_lines(out)[0]
        == f"gate: FAIL — {results / 'results.json'}: nothing readable: empty file"
    )
    assert "gate: FAIL — no readable input: nothing could be checked" in gate_lines(out)


def test_empty_and_binary_files_stay_unreadable(tmp_path):
    (tmp_path / "results.json").write_text("")
    (tmp_path / "scores.bin").write_bytes(bytes(range(256)))
    code, out, _ = run_cli("scan", "--no-config", "--no-report", str(CONTROL), str(tmp_path))
    assert code == 1
    assert [line.split(": nothing readable: ")[1] for line in gate_lines(out)[:2]] == [
        "empty file",
        "binary file (NUL bytes), not a log or JSON",
    ]


def test_the_distributed_scan_skips_the_same_files(tmp_path):
    results = results_folder(tmp_path / "results")
    one = forensics.scan(str(results))
    spread = distributed.scan(str(results), runner=distributed.processes(1), shards=3)
    assert spread.skipped == one.skipped and len(one.skipped) == 5
    assert [f.path for f in spread.files] == [f.path for f in one.files]


def test_the_pre_commit_hook_accepts_a_healthy_results_folder(tmp_path, monkeypatch):
    # As pre-commit runs the hook: its entry and args, then the staged files its `files`
    # pattern selects, relative to the repository root.
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    results_folder(tmp_path / "results")
    monkeypatch.chdir(tmp_path)
    staged = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "results").iterdir())
    selected = [p for p in staged if re.search(hook["files"], p)]
    assert selected == [
        "results/config.json", "results/notes.txt", "results/results.json", "results/run.log",
    ]  # fmt: skip
    entry = shlex.split(hook["entry"])
    assert entry[0] == "forensics"
    code, out, err = run_cli(*entry[1:], *hook["args"], *selected)
    assert code == 0, out + err
    assert "gate: pass — no finding at or above high\n" in out
    assert not os.path.exists("forensics-report")  # --no-report, as the hook says
    # and a broken artifact among them is still caught
    Path("results/results.json").write_text(CONTROL.read_text()[:300])
    code, out, _ = run_cli(*entry[1:], *hook["args"], *selected)
    assert code == 1 and "gate: FAIL — results/results.json: nothing readable" in out
    # A commit that touches only the run's config: nothing to check, the commit goes through.
    code, out, _ = run_cli(*entry[1:], *hook["args"], "results/config.json")
    assert code == 0, out
    assert gate_lines(out) == [
        "gate: pass — nothing to check: the file named is skipped, no agent artifact (see skipped)"
    ]


def test_main_is_the_hooks_entry_point():
    # The hook's `forensics` is the console script this test drives in-process.
    scripts = (ROOT / "pyproject.toml").read_text()
    assert 'forensics = "forensics.cli:main"' in scripts and callable(main)
