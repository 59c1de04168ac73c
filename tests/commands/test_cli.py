"""The CLI as a user meets it: exit codes, outputs, determinism."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from forensics.cli import cli

from conftest import SAMPLES

OUTPUT2 = str(SAMPLES / "output2.txt")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_scan_output2_exit_1_summary_report_json(tmp_path):
    out = tmp_path / "report"
    res = run("scan", OUTPUT2, "-o", str(out), "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 1
    text = res.output
    assert text.startswith(
        "forensics: 1 file, 4 trajectories, 82 turns, 47 findings (41 incidents), 0 rejects"
    )
    assert "1. Output truncated by the output-token limit" in text
    assert "2. Reasoning markup leaks into message content" in text
    assert "fix 1: Serve the model with a reasoning parser: --reasoning-parser qwen3" in text
    # Each rule that could not run is named once, under the data it lacked.
    assert "   no finish_reason or output_tokens: max-tokens\n" in text
    not_checked = text.split("not checked (the inputs lack the data these rules read):\n")[1]
    not_checked = not_checked.split("gate:")[0]
    assert not_checked.count("max-tokens") == 1
    assert "retry-storm" not in not_checked  # request hashes exist only in API captures
    assert f"report: {out / 'report.html'}" in text
    assert (out / "report.html").is_file()

    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["summary"] == {
        **doc["summary"],
        "files": 1,
        "trajectories": 4,
        "turns": 82,
        "findings": 47,
        "rejects": 0,
    }
    assert [c["id"] for c in doc["causes"]] == ["truncated-output", "reasoning-in-content"]
    assert [c["rank"] for c in doc["causes"]] == [1, 2]
    assert [f["rank"] for f in doc["causes"][0]["fixes"]] == [1, 2]
    first = doc["findings"][0]
    assert set(first) >= {
        "rule",
        "severity",
        "confidence",
        "trajectory_id",
        "task_id",
        "trial",
        "turn_index",
        "role",
        "actor",
        "source",
        "message",
        "evidence",
    }
    assert first["source"] == {"path": OUTPUT2, "line": 118}
    assert doc["rejects"] == []


def test_fail_on_threshold_and_exit_zero_when_clean(tmp_path):
    assert run("scan", OUTPUT2, "--no-report", "--fail-on", "critical").exit_code == 0
    assert run("scan", OUTPUT2, "--no-report", "--fail-on", "high").exit_code == 1
    clean = run("scan", str(SAMPLES / "tau_bench_results_control.json"), "--no-report")
    assert clean.exit_code == 0
    assert "No findings in 1 trajectory." in clean.output


def test_missing_path_exits_2_and_unreadable_input_fails_the_gate(tmp_path):
    res = run("scan", str(tmp_path / "missing.txt"))
    assert res.exit_code == 2
    assert "no such file or directory" in res.output
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01\x02" * 100)
    res = run("scan", str(junk), "--no-report")
    assert res.exit_code == 1
    assert f"rejected: {junk}: binary file" in res.output
    assert "no readable input" in res.output
    assert run("scan", OUTPUT2, "--fail-on", "bogus").exit_code == 2


def test_bad_and_good_files_together_exit_1_not_2(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00" * 10)
    res = run("scan", OUTPUT2, str(junk), "--no-report")
    assert res.exit_code == 1


def test_explain_formats():
    res = run(
        "scan",
        OUTPUT2,
        str(SAMPLES / "tau_bench_results_control.json"),
        "--no-report",
        "--explain-formats",
    )
    assert f"{OUTPUT2}: tau_bench_log — text" in res.output
    assert "tau_bench_results_control.json: tau_bench_results — JSON array" in res.output


def test_same_input_same_output_byte_for_byte(tmp_path):
    for n in (1, 2):
        run(
            "scan",
            OUTPUT2,
            str(SAMPLES / "tau_bench_results_truncated.json"),
            "-o",
            str(tmp_path / f"r{n}"),
            "--json",
            str(tmp_path / f"r{n}.json"),
        )
    assert (tmp_path / "r1.json").read_bytes() == (tmp_path / "r2.json").read_bytes()
    assert (tmp_path / "r1" / "report.html").read_bytes() == (
        tmp_path / "r2" / "report.html"
    ).read_bytes()


def test_schema_documents_every_column():
    from forensics import schema

    res = run("schema")
    assert res.exit_code == 0
    for table, sch in schema.TABLES.items():
        assert f"\n{table}\n" in "\n" + res.output
        for name in sch.names:
            assert f"  {name} " in res.output


def test_rules_list_and_explain():
    res = run("rules")
    ids = [line.split()[0] for line in res.output.splitlines()]
    # the pack's own ids, whatever rules it holds (a new rule is its files, no list to extend)
    from forensics.check import engine

    assert ids == [r.id for r in engine.load_rules()] and len(ids) >= 23
    res = run("rules", "explain", "unclosed-think")
    assert res.exit_code == 0
    for section in ("detects", "why", "example", "fix", "false positives"):
        assert f"## {section}" in res.output
    assert run("rules", "explain", "nope").exit_code == 2


def test_user_rules_dir(tmp_path):
    (tmp_path / "long-user.toml").write_text(
        'id = "long-user"\ntitle = "t"\nseverity = "low"\nconfidence = "heuristic"\n'
        'cause = "custom"\nsummary = "s"\nrequires = [["content"]]\n'
        '[query]\nsql = """select trajectory_id, turn_index, \'long user turn\' as message, '
        "'' as evidence from turns where actor = 'user_sim' and content_chars > 150\"\"\"\n"
    )
    control = str(SAMPLES / "tau_bench_results_control.json")
    res = run(
        "scan",
        control,
        "--no-report",
        "--rules",
        str(tmp_path),
        "--fail-on",
        "low",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert res.exit_code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {f["rule"] for f in doc["findings"]} == {"long-user"}
    assert [c["id"] for c in doc["causes"]] == ["custom"]
    assert run("scan", control, "--no-report", "--fail-on", "low").exit_code == 0
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.toml").write_text("id = 1\n")
    res = run("scan", OUTPUT2, "--no-report", "--rules", str(bad))
    assert res.exit_code == 2 and "rule pack" in res.output


@pytest.mark.parametrize("argv", [["-m", "forensics", "--help"], ["-m", "forensics", "rules"]])
def test_python_dash_m(argv):
    res = subprocess.run([sys.executable, *argv], capture_output=True, text=True, check=False)
    assert res.returncode == 0 and res.stdout


def test_a_reader_that_leaves_early_ends_the_scan_quietly():
    """`forensics scan … | head`: no traceback, no "internal error", the SIGPIPE exit code."""
    import shutil
    import subprocess

    exe = shutil.which("forensics")
    proc = subprocess.Popen(
        [exe, "scan", OUTPUT2, "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait() == 141 and err == ""


def test_error_messages_show_escapes_not_raw_control_characters(tmp_path):
    from conftest import run_cli

    code, _out, err = run_cli("scan", str(tmp_path / "\x1b]0;owned\x07.log"))
    assert code == 2
    assert "\x1b" not in err and "\\x1b]0;owned\\x07.log: no such file" in err
