"""CI outputs besides SARIF: JUnit XML, GitHub annotations, Markdown wiring."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from forensics.cli import cli

from conftest import SAMPLES
from pinned_rules import PINNED


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    shutil.copytree(SAMPLES, tmp_path / "results", ignore=shutil.ignore_patterns("*.py"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_junit_suite_per_run_case_per_trajectory_failure_per_finding(workdir):
    res = run("scan", "--no-report", "--config", PINNED, "results/output2.txt", "--junit", "j.xml")
    assert res.exit_code == 1
    root = ET.parse(workdir / "j.xml").getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "3", "0")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["output2.txt#run1", "output2.txt#run2"]
    control, frustrated = suites
    assert control.get("tests") == "1" and control.get("failures") == "0"
    assert control.get("file") == "results/output2.txt"
    props = {p.get("name"): p.get("value") for p in frustrated.iter("property")}
    assert props == {"agent_model": "Qwen/Qwen3-0.6B", "variant": "frustrated"}
    cases = frustrated.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "task 12 trial 0",
        "task 27 trial 0",
        "task 48 trial 0",
    ]
    assert {c.get("classname") for c in cases} == {"output2.txt#run2"}
    assert [len(c.findall("failure")) for c in cases] == [15, 10, 19]
    assert control.find("testcase").find("failure") is None
    first = cases[0].find("failure")
    assert first.get("type") == "reasoning-leak"
    assert first.get("message").startswith("[medium] reasoning-leak: user-simulator message")
    assert "results/output2.txt:118" in first.text
    assert "</think>" in first.text  # model text escaped by the serializer, intact when parsed


def test_junit_rejects_are_errors_and_control_characters_are_removed(workdir):
    (workdir / "junk.bin").write_bytes(b"\x00\x01" * 40)
    log = workdir / "ctl.txt"
    # JSON-escaped in the log, so the message content carries the raw control characters
    text = (SAMPLES / "output2.txt").read_text()
    log.write_text(text.replace("I need to return", "I need\\u000b\\u001b to return"))
    res = run("scan", "--no-report", "--config", PINNED, "ctl.txt", "junk.bin", "--junit", "j.xml")
    assert res.exit_code == 1
    raw = (workdir / "j.xml").read_text()
    assert "\x0b" not in raw and "\x1b" not in raw
    root = ET.fromstring(raw.encode())  # parses: no XML-illegal characters left
    assert root.get("errors") == "1"
    rejects = [s for s in root.findall("testsuite") if s.get("name") == "rejected records"]
    assert len(rejects) == 1
    error = rejects[0].find("testcase/error")
    assert error.get("message").startswith("binary file")
    assert rejects[0].find("testcase").get("name") == "junk.bin"


def test_junit_is_byte_identical_across_reruns(workdir):
    for n in (1, 2):
        run("scan", "--no-report", "--config", PINNED, "results", "--junit", f"j{n}.xml")
    assert (workdir / "j1.xml").read_bytes() == (workdir / "j2.xml").read_bytes()


def test_github_annotations(workdir):
    res = run("scan", "--no-report", "--config", PINNED, "results/output2.txt", "--github")
    lines = [line for line in res.output.splitlines() if line.startswith("::")]
    assert len(lines) == 44
    assert lines[0] == (
        "::warning file=results/output2.txt,line=118,title=forensics reasoning-leak (medium)::"
        "user-simulator message carries its reasoning in content (1 closed block); 138 chars of "
        "reply follow it [task 12, turn 1]"
    )
    assert lines[1].startswith(
        "::error file=results/output2.txt,line=120,title=forensics unclosed-think (high)::"
    )
    assert sum(line.startswith("::error ") for line in lines) == 18
    assert sum(line.startswith("::warning ") for line in lines) == 26
    # the annotations come before the human summary
    assert res.output.index("::") < res.output.index("forensics: 1 file,")


def test_github_escapes_and_baseline_limits_to_new(workdir):
    from forensics.report.render import github

    model = {
        "findings": [
            {
                "id": "a",
                "rule": "r",
                "severity": "low",
                "task_id": None,
                "trajectory_id": "t:1,2",
                "turn_index": 3,
                "message": "100% sure\nnext line",
                "source": {"path": "x,y:z.txt", "line": 7},
            },
            {
                "id": "b",
                "rule": "r",
                "severity": "info",
                "task_id": "9",
                "trajectory_id": "t",
                "turn_index": 0,
                "message": "m",
                "source": {"path": "a.txt", "line": None},
            },
        ],
        "rejects": [],
    }
    out = github.render(model, workdir)
    assert out.splitlines() == [
        "::warning file=x%2Cy%3Az.txt,line=7,title=forensics r (low)::"
        "100%25 sure%0Anext line [t:1,2, turn 3]",
        "::notice file=a.txt,title=forensics r (info)::m [task 9, turn 0]",
    ]
    assert github.render(model, workdir, only={"b"}).startswith("::notice")

    base = workdir / "b.json"
    shutil.copy(workdir / "results" / "tau_bench_results_truncated.json", workdir / "r.json")
    run("scan", "--no-report", "--config", PINNED, "r.json", "--write-baseline", str(base))
    shutil.copy(workdir / "results" / "tau_bench_results_frustrated.json", workdir / "r.json")
    res = run(
        "scan", "--no-report", "--config", PINNED, "r.json", "--github", "--baseline", str(base)
    )
    annotations = [line for line in res.output.splitlines() if line.startswith("::")]
    assert len(annotations) == 19 and all("[task 48," in line for line in annotations)


def test_md_writes_the_markdown_report(workdir):
    from forensics.report.render import markdown

    res = run(
        "scan",
        "--no-report",
        "--config",
        PINNED,
        "results/output2.txt",
        "--md",
        "r.md",
        "--json",
        "r.json",
        "--json-text",  # the turn openings the Markdown quotes
    )
    assert res.exit_code == 1
    report = json.loads((workdir / "r.json").read_text())
    assert (workdir / "r.md").read_text() == markdown.render(report)
    assert "Output truncated by the output-token limit" in (workdir / "r.md").read_text()


def test_unwritable_output_is_a_usage_error(workdir):
    (workdir / "blocker").write_text("a file, not a directory")
    res = run(
        "scan",
        "--no-report",
        "--config",
        PINNED,
        "results/output2.txt",
        "--sarif",
        "blocker/x.sarif",
    )
    assert res.exit_code == 2
    assert "blocker/x.sarif: cannot write" in res.output
