"""The CI gate: exit codes, rate thresholds, baselines, configuration."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from forensics.cli import cli

from conftest import SAMPLES
from pinned_rules import PINNED, disable_line

OUTPUT2 = str(SAMPLES / "output2.txt")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def scan(*args: str):
    return run("scan", "--no-report", "--config", PINNED, *args)


def test_exit_codes_fail_on_and_exit_zero():
    assert scan(OUTPUT2).exit_code == 1
    assert scan(OUTPUT2, "--fail-on", "high").exit_code == 1
    res = scan(OUTPUT2, "--fail-on", "critical")
    assert res.exit_code == 0
    assert "gate: pass — no finding at or above critical" in res.output
    res = scan(OUTPUT2, "--exit-zero")
    assert res.exit_code == 0
    assert "gate: FAIL — 44 findings at or above info" in res.output
    assert "gate: exit code 0 (--exit-zero)" in res.output
    # --exit-zero never hides a usage error
    assert scan("no/such/file.txt", "--exit-zero").exit_code == 2


def test_gate_lines_as_in_the_readme():
    res = scan(OUTPUT2, "--fail-on", "high", "--max-rate", "think-loop=0.8")
    assert res.exit_code == 1
    assert res.output.endswith(
        "gate: FAIL — 18 findings at or above high (unclosed-think 18)\n"
        "gate: ok — within max-rate think-loop=0.8: 3 of 4 trajectories (75.0%)\n"
    )


def test_max_rate_judges_a_rule_by_its_rate_only():
    # 3 of 4 trajectories have each rule: 75%.
    tolerant = ["unclosed-think=0.8", "reasoning-leak=80%", "think-loop=0.75"]
    args = [a for r in tolerant for a in ("--max-rate", r)]
    res = scan(OUTPUT2, *args)
    assert res.exit_code == 0, res.output
    assert "gate: ok — within max-rate think-loop=0.75: 3 of 4 trajectories (75.0%)" in res.output
    args[-1] = "think-loop=0.7"
    res = scan(OUTPUT2, *args)
    assert res.exit_code == 1
    assert "gate: FAIL — above max-rate think-loop=0.7: 3 of 4 trajectories (75.0%)" in res.output
    # a rule that did not fire is within any rate
    res = scan(str(SAMPLES / "tau_bench_results_control.json"), "--max-rate", "think-loop=0")
    assert res.exit_code == 0
    assert "within max-rate think-loop=0: 0 of 1 trajectories (0.0%)" in res.output


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("think-loop", "expected RULE=RATE"),
        ("think-loop=lots", "is not a number"),
        ("think-loop=1.5", "outside 0..1"),
        ("=0.1", "expected RULE=RATE"),
    ],
)
def test_bad_max_rate_is_a_usage_error(value, message):
    res = scan(OUTPUT2, "--max-rate", value)
    assert res.exit_code == 2
    assert message in res.output


def test_max_rate_for_an_unknown_rule_is_a_usage_error():
    res = scan(OUTPUT2, "--max-rate", "no-such-rule=0.1")
    assert res.exit_code == 2
    assert "--max-rate no-such-rule: no such rule" in res.output


def test_json_carries_the_gate(tmp_path):
    out = tmp_path / "r.json"
    scan(OUTPUT2, "--fail-on", "high", "--max-rate", "think-loop=0.5", "--json", str(out))
    gate = json.loads(out.read_text())["gate"]
    assert gate["exit_code"] == 1 and gate["failed"] is True and gate["fail_on"] == "high"
    assert len(gate["failing"]) == 18
    assert gate["rates"] == [
        {
            "rule": "think-loop",
            "trajectories": 3,
            "total": 4,
            "rate": 0.75,
            "max_rate": 0.5,
            "exceeded": True,
            "checked": True,
            "missing": None,
        }
    ]
    assert gate["baseline"] is None
    assert gate["unreadable"] == [] and gate["no_readable_input"] is False
    assert gate["rejects"] == {"records": 0, "max_rejects": None, "exceeded": False}


def test_baseline_is_byte_identical_across_reruns_and_paths(tmp_path, monkeypatch):
    copy = tmp_path / "logs" / "output2.txt"
    copy.parent.mkdir()
    shutil.copy(OUTPUT2, copy)
    scan(OUTPUT2, "--write-baseline", str(tmp_path / "a.json"))
    scan(OUTPUT2, "--write-baseline", str(tmp_path / "b.json"))
    monkeypatch.chdir(tmp_path)
    scan("logs/output2.txt", "--write-baseline", str(tmp_path / "c.json"))
    a = (tmp_path / "a.json").read_bytes()
    assert a == (tmp_path / "b.json").read_bytes() == (tmp_path / "c.json").read_bytes()
    doc = json.loads(a)
    assert doc["forensics_baseline"] == 2
    assert len(doc["findings"]) == 44
    assert [f["id"] for f in doc["findings"]] == sorted(f["id"] for f in doc["findings"])
    # no directory of the input (sample_logs/, logs/, tmp) leaks into the fingerprints
    assert "logs" not in a.decode() and str(tmp_path) not in a.decode()


def _results(tmp_path, sample: str):
    """A results file of one fixed name, as a rerun overwrites it."""
    path = tmp_path / "results.json"
    shutil.copy(SAMPLES / sample, path)
    return str(path)


def test_baseline_fails_only_on_new_findings_and_reports_fixed(tmp_path):
    base = tmp_path / "baseline.json"
    # Baseline: the full run (tasks 12, 27, 48). Now: the cut file (tasks 12, 27 only).
    full = _results(tmp_path, "tau_bench_results_frustrated.json")
    assert scan(full, "--write-baseline", str(base)).exit_code == 0  # not a gate run
    cut = _results(tmp_path, "tau_bench_results_truncated.json")
    res = scan(cut, "--baseline", str(base), "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output
    assert "baseline: 0 new, 19 fixed, 25 unchanged (against" in res.output
    assert "  fixed: " in res.output and "results/task-48/trial-0" in res.output
    gate = json.loads((tmp_path / "r.json").read_text())["gate"]["baseline"]
    assert gate["new"] == [] and gate["unchanged"] == 25
    assert {f["task_id"] for f in gate["fixed"]} == {"48"}

    # The other way round: task 48's findings are new and fail the gate.
    scan(cut, "--write-baseline", str(base))
    full = _results(tmp_path, "tau_bench_results_frustrated.json")
    res = scan(full, "--baseline", str(base))
    assert res.exit_code == 1
    assert "gate: FAIL — 19 new findings at or above info" in res.output
    assert "baseline: 19 new, 0 fixed, 25 unchanged" in res.output
    # new findings below --fail-on pass
    assert scan(full, "--baseline", str(base), "--fail-on", "critical").exit_code == 0


def test_a_json_result_works_as_a_baseline(tmp_path):
    scan(OUTPUT2, "--json", str(tmp_path / "r.json"))
    res = scan(OUTPUT2, "--baseline", str(tmp_path / "r.json"))
    assert res.exit_code == 0
    assert "baseline: 0 new, 0 fixed, 44 unchanged" in res.output


def test_bad_baseline_is_a_usage_error(tmp_path):
    res = scan(OUTPUT2, "--baseline", str(tmp_path / "missing.json"))
    assert res.exit_code == 2 and "No such file" in res.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"findings": [{"rule": "x"}]}')
    res = scan(OUTPUT2, "--baseline", str(bad))
    assert res.exit_code == 2 and "expected" in res.output
    bad.write_text("not json")
    assert scan(OUTPUT2, "--baseline", str(bad)).exit_code == 2


# --- configuration -------------------------------------------------------------------------


def _project(tmp_path, config: str, name: str = "pyproject.toml"):
    (tmp_path / name).write_text(config)
    (tmp_path / "results" / "old").mkdir(parents=True)
    shutil.copy(OUTPUT2, tmp_path / "results" / "output2.txt")
    shutil.copy(SAMPLES / "tau_bench_results_control.json", tmp_path / "results" / "old")
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    return sub


def test_config_found_upward_from_a_subdirectory(tmp_path, monkeypatch):
    sub = _project(
        tmp_path, '[project]\nname = "x"\n[tool.forensics]\nfail-on = "critical"\n' + disable_line()
    )
    monkeypatch.chdir(sub)
    target = str(tmp_path / "results")
    assert run("scan", "--no-report", target).exit_code == 0
    # flags win over the file
    assert run("scan", "--no-report", target, "--fail-on", "high").exit_code == 1
    assert run("scan", "--no-report", target, "--no-config").exit_code == 1


def test_forensics_toml_wins_over_pyproject_in_the_same_directory(tmp_path, monkeypatch):
    _project(tmp_path, '[tool.forensics]\nfail-on = "critical"\n' + disable_line())
    (tmp_path / "forensics.toml").write_text('fail-on = "medium"\n' + disable_line())
    monkeypatch.chdir(tmp_path)
    assert run("scan", "--no-report", "results").exit_code == 1


def test_pyproject_without_a_forensics_table_is_skipped(tmp_path, monkeypatch):
    (tmp_path / "forensics.toml").write_text('fail-on = "critical"\n' + disable_line())
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    monkeypatch.chdir(sub)
    assert run("scan", "--no-report", OUTPUT2).exit_code == 0


def test_config_disables_overrides_and_ignores(tmp_path, monkeypatch):
    _project(
        tmp_path,
        "[tool.forensics]\n"
        + disable_line("think-loop")
        + 'severity = { unclosed-think = "low", reasoning-leak = "info" }\n'
        'ignore-paths = ["results/old"]\n'
        "max-rate = { reasoning-leak = 1.0 }\n",
    )
    monkeypatch.chdir(tmp_path)
    res = run(
        "scan",
        "--no-report",
        "results",
        "--json",
        "r.json",
        "--sarif",
        "r.sarif",
        "--fail-on",
        "low",
    )
    doc = json.loads((tmp_path / "r.json").read_text())
    # ignore-paths: the control file under results/old was never read
    assert [f["path"] for f in doc["files"]] == ["results/output2.txt"]
    # disable: think-loop did not run, so it is neither a finding nor a rule of the run
    assert doc["summary"]["findings_by_rule"] == {"reasoning-leak": 21, "unclosed-think": 18}
    assert "think-loop" not in {r["id"] for r in doc["rules"]}
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    assert "think-loop" not in {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    # severity overrides reach the findings and the diagnosis
    assert {f["severity"] for f in doc["findings"] if f["rule"] == "unclosed-think"} == {"low"}
    assert {c["id"]: c["severity"] for c in doc["causes"]} == {
        "truncated-output": "low",
        "reasoning-in-content": "info",
    }
    # reasoning-leak is judged by its rate (within 1.0); unclosed-think (low) fails --fail-on low
    assert res.exit_code == 1
    assert "gate: FAIL — 18 findings at or above low (unclosed-think 18)" in res.output
    assert run("scan", "--no-report", "results", "--fail-on", "medium").exit_code == 0


def test_ignore_patterns():
    from pathlib import Path

    from forensics.config import Settings

    s = Settings(ignore_paths=("results/old", "*.partial.json", "smoke"), base=Path("/p"))
    assert s.ignores(Path("/p/results/old/a.json"))
    assert s.ignores(Path("/p/results/old"))
    assert not s.ignores(Path("/p/results/older/a.json"))
    assert s.ignores(Path("/p/x/run.partial.json"))
    assert s.ignores(Path("/p/a/smoke/b.txt"))
    assert not s.ignores(Path("/p/results/new/a.json"))


def test_everything_ignored_is_an_input_error(tmp_path, monkeypatch):
    _project(tmp_path, '[tool.forensics]\nignore-paths = ["results"]\n')
    monkeypatch.chdir(tmp_path)
    res = run("scan", "--no-report", "results")
    assert res.exit_code == 2
    assert "every input file is excluded by ignore-paths" in res.output


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('fail_on = "high"\n', "unknown key fail_on; did you mean fail-on?"),
        ('fail-on = "severe"\n', "fail-on must be one of"),
        ('disable = ["nope"]\n', "disable nope: no such rule"),
        ('severity = { think-loop = "urgent" }\n', "severity.think-loop must be one of"),
        ('severity = { nope = "low" }\n', "severity nope: no such rule"),
        ('max-rate = { think-loop = "a lot" }\n', "max-rate.think-loop"),
        ('ignore-paths = "results"\n', "ignore-paths must be a list of strings"),
        ("fail-on = \n", "forensics.toml"),
    ],
)
def test_bad_config_is_a_usage_error_naming_the_file(tmp_path, monkeypatch, config, message):
    (tmp_path / "forensics.toml").write_text(config)
    monkeypatch.chdir(tmp_path)
    res = run("scan", "--no-report", OUTPUT2)
    assert res.exit_code == 2
    assert message in res.output
    assert str(tmp_path / "forensics.toml") in res.output


def test_flags_win_over_the_file_and_max_rate_merges_entry_by_entry():
    from pathlib import Path

    from forensics import config

    written = {"fail-on": "high", "max-rate": {"a": "10%", "b": 0.5}, "max-document-mb": 3}
    flags = {"fail_on": "low", "max_rate": {"b": 0.9, "c": 0.1}, "fuse": False}
    s = config.parse(written, Path("/p/forensics.toml"), flags)
    assert (s.fail_on, s.max_rate, s.fuse) == ("low", {"a": 0.1, "b": 0.9, "c": 0.1}, False)
    assert s.limits.max_document_bytes == 3 * 1024 * 1024  # the file's, no flag given
    # nothing given anywhere: the defaults, as Settings() has them
    defaults = config.parse({})
    assert defaults == config.Settings(base=defaults.base, origins=defaults.origins)
    # where each came from, as --show-settings says: the flag, the file, the default
    assert set(defaults.origins.values()) == {"default"}
    assert (s.origins["fail-on"], s.origins["max-document-mb"], s.origins["fuse"]) == (
        "--fail-on",
        "/p/forensics.toml",
        "--no-fuse",
    )
    assert [s.origins[f"max-rate.{r}"] for r in "abc"] == [
        "/p/forensics.toml",
        "--max-rate",
        "--max-rate",
    ]


def test_max_rate_flags_merge_over_the_config_file(tmp_path):
    cfg = tmp_path / "ci.toml"
    cfg.write_text('fail-on = "critical"\nmax-rate = { reasoning-leak = 1.0, think-loop = 0.1 }\n')
    out = str(tmp_path / "r.json")
    args = ("scan", "--no-report", OUTPUT2, "--config", str(cfg), "--json", out)
    res = run(*args, "--max-rate", "think-loop=1.0", "--max-rate", "unclosed-think=100%")
    assert res.exit_code == 0, res.output
    gate = json.loads((tmp_path / "r.json").read_text())["gate"]
    rates = {r["rule"]: r["max_rate"] for r in gate["rates"]}
    assert rates == {"reasoning-leak": 1.0, "think-loop": 1.0, "unclosed-think": 1.0}
    assert gate["fail_on"] == "critical"
    assert run(*args).exit_code == 1  # the file's think-loop rate alone: 3 of 4 is above 0.1


def test_explicit_config_file(tmp_path):
    cfg = tmp_path / "ci.toml"
    cfg.write_text('fail-on = "critical"\n' + disable_line())
    assert run("scan", "--no-report", OUTPUT2, "--config", str(cfg)).exit_code == 0
    res = run("scan", "--no-report", OUTPUT2, "--config", str(tmp_path / "none.toml"))
    assert res.exit_code == 2 and "no such config file" in res.output
