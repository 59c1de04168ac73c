"""The command line as ruff and semgrep users expect it: stdout for one output, stdin as an
input, rule selection, quiet and statistics modes, colour and wrapping on a terminal only, a
progress line only where a person watches, and the pre-commit hook."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from forensics import progress
from forensics.cli import cli
from forensics.commands.shared import style as _style
from forensics.diagnosis import coverage
from forensics.report.render import text

from conftest import DATA, ROOT, SAMPLES

OUTPUT2 = str(SAMPLES / "output2.txt")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(*args: str, stdin: bytes | None = None):
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


# --- stdout, stdin -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "check"),
    [
        ("--json", lambda out: json.loads(out)["summary"]["findings"] == 47),
        ("--sarif", lambda out: len(json.loads(out)["runs"][0]["results"]) == 47),
        ("--junit", lambda out: out.startswith("<?xml") and "<testsuite" in out),
        ("--md", lambda out: out.startswith("# forensics:")),
    ],
)
def test_dash_writes_to_stdout_and_the_summary_to_stderr(tmp_path, monkeypatch, flag, check):
    monkeypatch.chdir(tmp_path)
    res = run("scan", OUTPUT2, "--no-report", flag, "-")
    assert res.exit_code == 1
    assert check(res.stdout), res.stdout[:300]
    assert "forensics: 1 file, 4 trajectories" in res.stderr
    assert "gate: FAIL" in res.stderr and "gate:" not in res.stdout
    assert not (tmp_path / "-").exists()  # no file named "-"


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit", "github", "md"])
def test_output_format_puts_that_output_on_stdout(fmt):
    res = run("scan", OUTPUT2, "--no-report", "--output-format", fmt)
    assert res.exit_code == 1
    assert "forensics: 1 file" not in res.stdout and "forensics: 1 file" in res.stderr
    if fmt == "github":
        lines = res.stdout.splitlines()
        assert len(lines) == 47 and all(line.startswith("::") for line in lines)
    elif fmt in ("json", "sarif"):
        json.loads(res.stdout)


def test_output_format_text_is_the_summary_on_stdout():
    res = run("scan", OUTPUT2, "--no-report", "--output-format", "text")
    assert res.stdout.startswith("forensics: 1 file, 4 trajectories") and res.stderr == ""


def test_one_output_only_can_have_stdout():
    res = run("scan", OUTPUT2, "--no-report", "--json", "-", "--output-format", "sarif")
    assert res.exit_code == 2 and "only one output can go to stdout" in res.stderr
    assert run("scan", OUTPUT2, "--db", "-").exit_code == 2


def test_html_report_to_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run("scan", OUTPUT2, "-o", "-")
    assert res.stdout.startswith("<!doctype html>") and res.stdout.rstrip().endswith("</html>")
    assert "report:" not in res.stderr and not (tmp_path / "-").exists()


def test_stdin_is_read_like_a_file_and_named_stdin(tmp_path):
    raw = Path(OUTPUT2).read_bytes()
    from_file = json.loads(run("scan", OUTPUT2, "--no-report", "--json", "-").stdout)
    for data in (raw, gzip.compress(raw, mtime=0)):  # gzip is sniffed from the bytes too
        res = run("scan", "-", "--no-report", "--json", "-", stdin=data)
        assert res.exit_code == 1, res.stderr
        doc = json.loads(res.stdout)
        assert doc["files"][0]["path"] == "<stdin>"
        assert doc["files"][0]["format"] == "tau_bench_log"
        assert {f["source"]["path"] for f in doc["findings"]} == {"<stdin>"}
        # The same findings on the same lines as the file itself.
        assert [(f["rule"], f["turn_index"], f["source"]["line"]) for f in doc["findings"]] == [
            (f["rule"], f["turn_index"], f["source"]["line"]) for f in from_file["findings"]
        ]
        assert all(f["trajectory_id"].startswith("<stdin>#") for f in doc["findings"])
        assert "/tmp" not in res.stdout and "forensics-stdin-" not in res.stdout
    # Same input, same output: the spool's temporary name leaves no trace.
    again = run("scan", "-", "--no-report", "--json", "-", stdin=raw).stdout
    assert again == run("scan", "-", "--no-report", "--json", "-", stdin=raw).stdout


def test_stdin_twice_or_from_a_terminal_is_a_usage_error():
    assert run("scan", "-", "-", "--no-report", stdin=b"{}").exit_code == 2


# --- rules, quiet, statistics ---------------------------------------------------------------


def test_select_and_ignore_choose_the_rules():
    doc = json.loads(
        run(
            "scan", OUTPUT2, "--no-report", "--select", "think-*,unclosed-think", "--json", "-"
        ).stdout
    )
    assert set(doc["summary"]["findings_by_rule"]) == {"think-loop", "unclosed-think"}
    assert {r["id"] for r in doc["rules"]} == {"think-loop", "unclosed-think"}
    doc = json.loads(
        run("scan", OUTPUT2, "--no-report", "--ignore", "reasoning-leak", "--json", "-").stdout
    )
    assert "reasoning-leak" not in doc["summary"]["findings_by_rule"]
    assert doc["summary"]["findings"] == 47 - 21
    doc = json.loads(
        run(
            "scan", OUTPUT2, "--no-report", "--select", "think-*", "--ignore", "think-loop",
            "--json", "-",
        ).stdout
    )  # fmt: skip
    assert doc["summary"]["findings"] == 0  # --ignore wins


def test_an_unknown_rule_is_a_usage_error_naming_the_nearest_ones():
    res = run("scan", OUTPUT2, "--no-report", "--select", "unclosed-thnik")
    assert res.exit_code == 2
    assert res.stderr == (
        "forensics: error: --select unclosed-thnik: no such rule; did you mean unclosed-think?\n"
    )  # the nearest id, not the whole pack
    res = run("scan", OUTPUT2, "--no-report", "--ignore", "zzz")
    assert res.stderr == (
        "forensics: error: --ignore zzz: no such rule; `forensics rules` lists them all\n"
    )


def test_quiet_prints_nothing_and_the_exit_code_tells():
    res = run("scan", OUTPUT2, "--no-report", "-q")
    assert (res.exit_code, res.stdout, res.stderr) == (1, "", "")
    control = str(SAMPLES / "tau_bench_results_control.json")
    assert run("scan", control, "--no-report", "--quiet").exit_code == 0


def test_statistics_count_findings_per_rule_most_first():
    res = run("scan", OUTPUT2, "--no-report", "--statistics")
    lines = res.stdout.splitlines()
    assert lines[:4] == [
        "21  reasoning-leak     [medium]  Reasoning markup inside visible content (3 trajectories)",
        "18  unclosed-think     [high]    Reasoning block opened and never closed (3 trajectories)",
        " 5  think-loop         [medium]  Conversation degenerates into repeated reasoning or "
        "monologue (3 trajectories)",
        " 3  no-action-failure  [medium]  Failed episode in which the agent never acted "
        "(3 trajectories)",
    ]
    assert lines[4] == "Found 47 findings in 3 trajectories."
    assert lines[5].startswith("gate: FAIL")


# --- colour, wrapping -----------------------------------------------------------------------


def test_no_colour_and_no_wrapping_off_a_terminal():
    res = run("scan", OUTPUT2, "--no-report")
    assert not ANSI.search(res.stdout)
    assert max(len(line) for line in res.stdout.splitlines()) > 300  # a fix detail, unwrapped


def test_colour_always_paints_severities_and_the_verdict():
    res = run("scan", OUTPUT2, "--no-report", "--color", "always")
    assert "\x1b[31m[high]\x1b[0m" in res.stdout and "\x1b[33m[medium]\x1b[0m" in res.stdout
    assert "\x1b[1;31mgate: FAIL\x1b[0m" in res.stdout
    # Colour is ours only: stripped of it, the text is the plain summary.
    assert ANSI.sub("", res.stdout) == run("scan", OUTPUT2, "--no-report").stdout


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_colour_unless_no_color_and_width_wrapping(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "72")
    style = _style(_Tty(), "auto")
    assert style.color and style.width == 72
    monkeypatch.setenv("NO_COLOR", "1")
    assert not _style(_Tty(), "auto").color
    assert _style(_Tty(), "always").color
    assert not _style(io.StringIO(), "auto").color and _style(io.StringIO(), "auto").width is None


def test_wrapping_keeps_every_line_in_the_width_under_its_indent(output2_scan):
    from forensics.report import model as report

    model = report.build(output2_scan)
    out = text.render(model, None, text.Style(width=60))
    plain = text.render(model, None)
    for line in out.splitlines():
        # A single word longer than the width (a path) is never broken, only left long.
        assert len(line) <= 60 or " " not in line.strip(), line
    assert " ".join(out.split()) == " ".join(plain.split())  # the same words, in order
    # A fix detail continues under its own first line.
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("          18 agent turns"))
    assert lines[at + 1].startswith(" " * 10) and not lines[at + 1].startswith(" " * 11)


# --- not checked ----------------------------------------------------------------------------


def test_not_checked_lists_each_rule_once_grouped_by_the_missing_data():
    capture = str(DATA / "capture" / "vllm_agent_loop.jsonl")
    res = run("scan", OUTPUT2, capture, "--no-report")
    block = res.stdout.split("not checked (these files lack the data the rules read):\n")[1]
    block = block.split("\ngate:")[0]
    groups = [line for line in block.splitlines() if line.startswith("   no ")]
    named = [r.split(" (")[0] for line in groups for r in line.split("): ", 1)[1].split(", ")]
    assert len(named) == len(set(named))  # each rule once, however many files lacked it


def test_transport_columns_are_no_news_for_benchmark_files_only():
    rows = [
        {"path": "a.txt", "rule": "retry-storm", "missing": ["request_hash"]},
        {"path": "a.txt", "rule": "max-tokens", "missing": ["finish_reason", "output_tokens"]},
        {
            "path": "b.json",
            "rule": "max-tokens",
            "missing": ["finish_reason", "output_tokens+max_output_tokens"],
        },
        {"path": "c.jsonl", "rule": "retry-storm", "missing": ["request_hash"]},
        {"path": "a.txt", "rule": "http-error", "missing": ["http_status", "finish_reason"]},
    ]
    formats = {"a.txt": "tau_bench_log", "b.json": "tau_bench_results", "c.jsonl": "api_capture"}
    assert coverage.groups(rows, formats) == [
        {
            "missing": ["finish_reason"],
            "rules": ["http-error"],
            "files": 1,
            "paths": ["a.txt"],
            "of_files": 3,
            "ran_on": {"http-error": 2},
        },
        {
            "missing": ["finish_reason", "output_tokens"],
            "rules": ["max-tokens"],
            "files": 2,
            "paths": ["a.txt", "b.json"],
            "of_files": 3,
            "ran_on": {"max-tokens": 1},
        },
        {
            "missing": ["request_hash"],
            "rules": ["retry-storm"],
            "files": 1,
            "paths": ["c.jsonl"],
            "of_files": 3,
            "ran_on": {"retry-storm": 1},
        },
    ]
    benchmark_only = {p: "tau_bench_log" for p in formats}
    assert all("retry-storm" not in g["rules"] for g in coverage.groups(rows, benchmark_only))


# --- progress -------------------------------------------------------------------------------


def test_progress_only_on_a_terminal_outside_ci_and_not_quiet():
    assert progress.wanted(_Tty(), quiet=False, env={})
    assert not progress.wanted(_Tty(), quiet=True, env={})
    assert not progress.wanted(_Tty(), quiet=False, env={"CI": "true"})
    assert not progress.wanted(_Tty(), quiet=False, env={"TERM": "dumb"})
    assert not progress.wanted(io.StringIO(), quiet=False, env={})


def test_progress_line_counts_files_bytes_turns_rate_and_reading_left():
    now = [100.0]
    meter = progress.Meter(io.StringIO(), width=120, clock=lambda: now[0])
    meter.files_total, meter.bytes_total = 4, 400_000_000
    meter.file(100_000_000)
    meter.file(100_000_000)  # the first is done
    meter.turns = lambda: 12_345
    now[0] = 110.0
    assert meter.line() == (
        "forensics: file 2/4 · 100/400 MB · 12,345 turns · 10.0 MB/s · reading ~30 s left"
    )
    # The last bytes are in (a file read whole is still being parsed): no "0 s left" is
    # claimed for a scan whose rules have yet to run.
    meter.file(200_000_000)
    meter.offset = 199_999_000
    now[0] = 140.0
    assert meter.line() == "forensics: file 3/4 · 400/400 MB · 12,345 turns · 10.0 MB/s"
    # The stages after reading keep the count of turns read.
    meter.stage_name = "checking rules"
    assert meter.line() == "forensics: checking rules · 12,345 turns read … 40 s"
    progress_stage = progress.Meter(io.StringIO(), clock=lambda: 5.0)
    progress_stage.started = 0.0
    progress_stage.stage_name = "checking rules"
    assert progress_stage.line() == "forensics: checking rules … 5 s"


def test_a_scan_reports_to_the_meter_and_the_line_is_erased(tmp_path):
    import forensics

    stream = _Tty()
    with progress.shown(stream, width=100, delay=0, interval=0.01) as meter:
        forensics.scan([OUTPUT2, str(SAMPLES / "tau_bench_results_control.json")])
        assert meter.files_total == 2
        assert meter.bytes_total == sum(
            p.stat().st_size for p in (Path(OUTPUT2), SAMPLES / "tau_bench_results_control.json")
        )
        assert meter.stage_name == "diagnosing"
        assert meter.turns() == 122
    out = stream.getvalue()
    assert out.endswith("\r\x1b[2K")  # nothing left on the line
    # Outside a meter the hooks do nothing.
    progress.file(Path(OUTPUT2))
    progress.stage("x")


def test_no_progress_in_cli_runs_that_are_not_a_terminal():
    res = run("scan", OUTPUT2, "--no-report")
    assert "\r" not in res.stderr and "MB/s" not in res.stderr


# --- the pre-commit hook --------------------------------------------------------------------


def test_pre_commit_hook_runs_the_scan_over_the_files_at_once():
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "forensics" and hook["language"] == "python"
    assert hook["entry"].split()[:2] == ["forensics", "scan"]
    assert hook["require_serial"] is True and hook["pass_filenames"] is True
    files = re.compile(hook["files"])
    for name in ("results/run.json", "logs/output2.txt", "cap.jsonl.gz", "a.har"):
        assert files.search(name), name
    assert not files.search("src/app.py")
    # The command it runs is a valid scan invocation.
    res = run(*hook["entry"].split()[1:], *hook["args"], OUTPUT2)
    assert res.exit_code == 1 and "gate: FAIL" in res.stdout


def test_the_docs_pre_commit_example_uses_the_hook():
    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = doc[doc.index("as a [pre-commit]") :]
    block = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, flags=re.S).group(1))
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert block["repos"][0]["hooks"][0]["id"] == hook["id"]


def test_write_baseline_to_stdout_is_the_baseline_document(tmp_path):
    res = run("scan", OUTPUT2, "--no-report", "--write-baseline", "-")
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    out = tmp_path / "b.json"
    run("scan", OUTPUT2, "--no-report", "--write-baseline", str(out))
    assert doc == json.loads(out.read_text())
    assert "baseline: wrote 47 findings to stdout" in res.stderr
