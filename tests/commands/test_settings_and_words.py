"""Say what was applied (the config file in every output, --show-settings, the Python API
reading the same settings) and say it in plain words (errors that point at the fix)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

import forensics
from forensics.cli import cli

from conftest import DATA, SAMPLES

OUTPUT2 = str(SAMPLES / "output2.txt")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose pyproject.toml sets [tool.forensics], entered from a subdirectory."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "evals"\n\n[tool.forensics]\nfail-on = "high"\n'
        'disable = ["reasoning-leak"]\nmax-rate = { think-loop = "80%" }\n'
    )
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path / "runs")
    return tmp_path


# --- the config file in use, in every output -----------------------------------------------


def test_the_config_file_is_named_in_the_header_the_json_and_the_page(project):
    res = run("scan", OUTPUT2, "-o", "out", "--json", "r.json")
    lines = res.stdout.splitlines()
    assert lines[1] == "config: ../pyproject.toml"  # under the header, as pytest's configfile
    doc = json.loads((project / "runs" / "r.json").read_text())
    assert doc["config"] == "../pyproject.toml"  # relative: the same bytes on any machine
    assert "reasoning-leak" not in doc["summary"]["findings_by_rule"]  # and it was applied
    page = (project / "runs" / "out" / "report.html").read_text()
    assert "· config <code>../pyproject.toml</code>" in page


def test_without_a_config_file_nothing_is_named_and_the_json_says_null(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run("scan", OUTPUT2, "--no-report", "--json", "r.json")
    assert not any(line.startswith("config:") for line in res.stdout.splitlines())
    assert json.loads((tmp_path / "r.json").read_text())["config"] is None
    res = run("scan", OUTPUT2, "--no-report", "--no-config", "--json", "-", "-q")
    assert json.loads(res.stdout)["config"] is None


def test_show_settings_says_where_each_value_came_from(project):
    res = run("scan", "--show-settings", "--max-rate", "max-tokens=5%", "--no-fuse")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "config: ../pyproject.toml (the nearest from the working directory upward)"
    said = {line.split(" = ")[0]: line.rsplit("# ", 1)[1] for line in lines[1:] if " = " in line}
    assert said["fail-on"] == "../pyproject.toml"
    assert said["disable"] == "../pyproject.toml"
    assert said["max-rate.think-loop"] == "../pyproject.toml"
    assert said["max-rate.max-tokens"] == "--max-rate"  # merged over the file's entry by entry
    assert said["fuse"] == "--no-fuse"
    assert said["max-document-mb"] == "default"
    assert 'fail-on = "high"' in res.stdout and "max-rate.max-tokens = 0.05" in res.stdout
    res = run("scan", "--show-settings", "--no-config")
    assert res.stdout.splitlines()[0].startswith("config: none (--no-config)")
    assert res.stdout.count("# default") == 12  # every key, none from a file
    assert run("scan").exit_code == 2  # without --show-settings PATHS are still needed


def test_the_python_api_applies_the_same_settings_as_the_command_line(project):
    result = forensics.scan(OUTPUT2)
    assert result.config == "../pyproject.toml"
    assert "reasoning-leak" not in result.findings["rule"].to_list()
    plain = forensics.scan(OUTPUT2, config=False)  # as --no-config
    assert plain.config is None and "reasoning-leak" in plain.findings["rule"].to_list()
    chosen = forensics.scan(
        OUTPUT2, select="think-*,unclosed-think", ignore=["think-loop"], config=False
    )
    assert sorted(set(chosen.findings["rule"].to_list())) == ["unclosed-think"]
    # The project's max-rate judges think-loop: leaving it out is the same error as on the
    # command line.
    with pytest.raises(
        forensics.config.ConfigError, match=r"max-rate\.think-loop: the rule does not"
    ):
        forensics.scan(OUTPUT2, ignore="think-loop")
    with pytest.raises(forensics.config.ConfigError, match="did you mean think-loop"):
        forensics.scan(OUTPUT2, select="thnk-loop")


# --- errors that point at the fix -----------------------------------------------------------


def test_a_mistyped_config_key_or_rule_names_the_nearest_and_the_file(project):
    config = project / "pyproject.toml"
    config.write_text('[tool.forensics]\nfail_on = "high"\n')
    res = run("scan", OUTPUT2, "--no-report")
    assert res.exit_code == 2
    assert res.output == f"forensics: error: {config}: unknown key fail_on; did you mean fail-on?\n"
    config.write_text('[tool.forensics]\nmax-rate = { thinkloop = "10%" }\n')
    res = run("scan", OUTPUT2, "--no-report")
    assert res.output == (
        f"forensics: error: {config}: max-rate.thinkloop: no such rule; did you mean think-loop "
        "or action-loop?\n"
    )
    res = run("scan", OUTPUT2, "--no-report", "--no-config", "--max-rate", "unclosed-thnk=0.1")
    assert res.output == (
        "forensics: error: --max-rate unclosed-thnk: no such rule; did you mean unclosed-think?\n"
    )
    res = run("scan", OUTPUT2, "--no-report", "--no-config", "--select", "think-*",
              "--max-rate", "max-tokens=0.1")  # fmt: skip
    assert "--max-rate max-tokens: the rule does not run" in res.output
    res = run("rules", "explain", "think-lop")
    assert res.output == (
        "forensics: error: think-lop: no such rule; did you mean think-loop or action-loop?\n"
    )


def test_rejects_read_without_doubled_or_wrong_words(scan_of):
    reasons = scan_of(DATA / "capture").rejects["reason"].to_list()
    assert "LiteLLM log of an aembedding call: not a chat call" in reasons
    assert "invalid JSON (Unterminated string starting at column 187)" in reasons
    for reason in reasons:
        assert not re.search(r"\b(\w+) \1\b", reason), reason
        assert not re.search(r"\ba [aeiou]", reason), reason


def test_query_says_what_a_file_that_is_no_database_is(tmp_path):
    result = tmp_path / "r.json"
    run("scan", OUTPUT2, "--no-report", "--json", str(result), "--db", str(tmp_path / "r.duckdb"))
    res = run("query", "--db", str(result), "select 1")
    assert res.exit_code == 2
    assert res.output == (
        f"forensics: error: {result}: not a DuckDB database (it looks like JSON: a --json "
        "result is read by forensics diff, not query); query reads the file that "
        "`forensics scan --db FILE` writes\n"
    )
    # DuckDB's error comes as its lines (the query, a caret under the error), no "\n" in them.
    res = run("query", "--db", str(tmp_path / "r.duckdb"), "selec 1")
    assert res.exit_code == 2
    assert res.output.splitlines() == [
        'forensics: error: query failed: Parser Error: syntax error at or near "selec"',
        "  LINE 1: selec 1",
        "          ^^^^^",
    ]


def test_an_empty_directory_is_not_a_file(tmp_path):
    (tmp_path / "empty").mkdir()
    res = run("scan", str(tmp_path / "empty"), "--no-report", "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 1
    assert res.stdout.startswith("forensics: 0 files, 0 trajectories,")
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["files"] == 0


def test_show_takes_the_reports_labels_and_lists_candidates(tmp_path):
    db = tmp_path / "r.duckdb"
    run("scan", OUTPUT2, "--no-report", "--db", str(db))
    # T1 is the report's first card: the trajectory with the most findings (task 48).
    res = run("show", "T1", "--db", str(db), "--color", "never")
    assert res.exit_code == 0 and res.stdout.startswith("task 48 trial 0 ·")
    res = run("show", "T4", OUTPUT2, "--no-config", "--color", "never")
    assert res.stdout.startswith("task 5 trial 0 ·")  # the one without findings comes last
    res = run("show", "task-49", "--db", str(db))
    assert res.exit_code == 2
    assert res.output == (
        "forensics: error: no trajectory 'task-49' among 4; they are: "
        "T1 output2.txt#run2/task-48/trial-0, T2 output2.txt#run2/task-12/trial-0, "
        "T3 output2.txt#run2/task-27/trial-0, T4 output2.txt#run1/task-5/trial-0 (give an id, "
        "its T label in the report, a unique prefix of an id, a task id or TASK:TRIAL)\n"
    )


def test_diff_names_the_records_each_side_rejected(tmp_path):
    res = run(
        "diff",
        str(SAMPLES / "tau_bench_results_truncated.json"),
        str(SAMPLES / "tau_bench_results_frustrated.json"),
        "--json",
        str(tmp_path / "d.json"),
    )
    assert res.stdout.splitlines()[1] == (
        f"rejected records: 1 in A ({SAMPLES / 'tau_bench_results_truncated.json'}), 0 in B: "
        "what they hold is compared on neither side (forensics scan lists each with its reason)"
    )
    sides = json.loads((tmp_path / "d.json").read_text())
    assert (sides["a"]["rejects"], sides["b"]["rejects"]) == (1, 0)
