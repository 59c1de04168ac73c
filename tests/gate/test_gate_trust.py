"""A gate that fails when it should: it must have looked before it passes.

Each test here failed on the gate as it was before: a --max-rate rule that could run nowhere
passed as "0%", an unreadable checkpoint next to a good file passed, unreadable input said
"gate: pass" before exit 1, a subset rerun called the tasks it never ran "fixed", writing a
baseline exited 1, and the README's configuration example could not be used as written (it is
in docs/ci.md now).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import forensics
from forensics import config
from forensics.cli import cli

from conftest import DATA, ROOT, SAMPLES
from pinned_rules import PINNED, disable_line

OUTPUT2 = str(SAMPLES / "output2.txt")
CONTROL = str(SAMPLES / "tau_bench_results_control.json")
FRUSTRATED = SAMPLES / "tau_bench_results_frustrated.json"
TAU2 = DATA / "tau2"
EMPTY_CHECKPOINT = TAU2 / "qwen2.5-7b_telecom_solo.EMPTY-CHECKPOINT.json"
QWEN = TAU2 / "qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset6.json"
NO_READABLE_INPUT = "gate: FAIL — no readable input: nothing could be checked"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def scan(*args: str):
    return run("scan", "--no-report", "--config", PINNED, *args)


def gate_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("gate: ")]


def pinned_config(tmp_path: Path, extra: str) -> str:
    path = tmp_path / "forensics-ci.toml"
    path.write_text(disable_line() + extra)
    return str(path)


@pytest.fixture
def cut_checkpoint(tmp_path) -> Path:
    """A tau-bench checkpoint cut off inside its first record: nothing in it can be read."""
    path = tmp_path / "checkpoint.json"
    path.write_text(FRUSTRATED.read_text()[:200])
    return path


# --- 1. a rule named by the gate that could run on none of the inputs ------------------------


def test_max_rate_on_a_rule_that_can_run_nowhere_fails(tmp_path):
    # output2.txt carries no finish_reason and no output_tokens: max-tokens can not run on it,
    # so "0 of 4 trajectories" would prove nothing.
    res = scan(OUTPUT2, "--fail-on", "critical", "--max-rate", "max-tokens=0.05")
    assert res.exit_code == 1, res.output
    assert gate_lines(res.output) == [
        "gate: FAIL — max-tokens cannot be checked: no finish_reason or output_tokens in these "
        "inputs"
    ]
    # the opt-out is explicit, and the gate still says what it could not check
    res = scan(
        OUTPUT2, "--fail-on", "critical", "--max-rate", "max-tokens=0.05", "--allow-unchecked"
    )
    assert res.exit_code == 0, res.output
    assert gate_lines(res.output) == [
        "gate: allowed — max-tokens cannot be checked: no finish_reason or output_tokens in "
        "these inputs (allow-unchecked)",
        "gate: pass — no finding at or above critical",
    ]
    cfg = pinned_config(tmp_path, "allow-unchecked = true\n")
    args = ["--fail-on", "critical", "--max-rate", "max-tokens=0.05"]
    res = run("scan", "--no-report", "--config", cfg, OUTPUT2, *args)
    assert res.exit_code == 0, res.output


def test_the_docs_example_of_a_rule_that_cannot_be_checked():
    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    command = "forensics scan sample_logs/output2.txt --fail-on critical --max-rate max-tokens=0.05"
    assert f"`{command}` fails:" in " ".join(doc.split())
    block = doc[doc.index("--max-rate max-tokens=0.05` fails:") :].split("```")[1]
    block = block.removeprefix("text")  # the fence's language tag
    args = [OUTPUT2 if a == "sample_logs/output2.txt" else a for a in command.split()[2:]]
    res = run("scan", "--no-report", "--no-config", *args)
    assert res.exit_code == 1
    # The block's gate lines, after a … for the summary above them (test_docs.py's convention).
    assert gate_lines(res.output) == [x for x in block.strip().splitlines() if x != "…"]


def test_the_json_result_says_which_rate_was_not_checked(tmp_path):
    out = tmp_path / "r.json"
    scan(OUTPUT2, "--fail-on", "critical", "--max-rate", "max-tokens=0", "--json", str(out))
    (rate,) = json.loads(out.read_text())["gate"]["rates"]
    assert rate["rule"] == "max-tokens" and rate["checked"] is False
    assert rate["missing"] == ["finish_reason", "output_tokens"] and rate["exceeded"] is None


def test_a_rule_that_ran_on_some_input_is_judged_by_its_rate():
    # max-tokens runs on the tau2 file (finish_reason), not on output2.txt: it ran somewhere.
    res = scan(OUTPUT2, str(QWEN), "--fail-on", "critical", "--max-rate", "max-tokens=0")
    assert "cannot be checked" not in res.output
    assert "gate: ok — within max-rate max-tokens=0: 0 of 10 trajectories (0.0%)" in res.output


def test_a_run_without_turns_checks_no_rule_that_reads_them():
    # A voice run: one episode, no text turns. No rule that reads a turn column ran.
    res = scan(str(TAU2 / "dir_voice_run"), "--max-rate", "max-tokens=0")
    assert res.exit_code == 1, res.output
    assert "gate: FAIL — max-tokens cannot be checked: no finish_reason or " in res.output


def test_fail_on_names_a_severity_not_a_rule():
    # Rules that could not run are listed ("not checked"), but only a rule the gate names by
    # --max-rate has to run: --fail-on judges the findings of the rules that could.
    res = scan(OUTPUT2, "--fail-on", "critical")
    assert res.exit_code == 0
    assert "   no finish_reason or output_tokens: max-tokens\n" in res.output


# --- 2. input files that yield nothing readable; rejected records ----------------------------


def test_an_unreadable_checkpoint_next_to_a_good_file_fails(cut_checkpoint):
    res = scan(CONTROL, str(cut_checkpoint))
    assert res.exit_code == 1, res.output
    assert gate_lines(res.output) == [
        f"gate: FAIL — {cut_checkpoint}: nothing readable: line 2: object never closes: the file "
        "ends inside it (and 3 more rejects)",
        "gate: FAIL — 1 input with nothing readable: --allow-unreadable (allow-unreadable = "
        "true) passes with it listed; the ignore-paths config key leaves it out",
    ]


def test_an_empty_checkpoint_fails_the_gate_next_to_a_good_file_and_alone():
    res = scan(CONTROL, str(EMPTY_CHECKPOINT))
    assert res.exit_code == 1, res.output
    line, how = gate_lines(res.output)
    assert how.startswith("gate: FAIL — 1 input with nothing readable: --allow-unreadable")
    assert line.startswith(
        f"gate: FAIL — {EMPTY_CHECKPOINT}: nothing readable: empty checkpoint: simulations is []"
    )
    res = scan(str(EMPTY_CHECKPOINT))
    assert res.exit_code == 1, res.output
    assert gate_lines(res.output)[1:] == [NO_READABLE_INPUT]


def test_one_line_per_unreadable_file(tmp_path, cut_checkpoint):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    res = scan(CONTROL, str(cut_checkpoint), str(empty))
    assert res.exit_code == 1
    lines = gate_lines(res.output)
    assert [line.split(": nothing readable: ")[0] for line in lines[:2]] == [
        f"gate: FAIL — {cut_checkpoint}",
        f"gate: FAIL — {empty}",
    ]
    assert lines[2].startswith("gate: FAIL — 2 inputs with nothing readable: ")
    assert lines[1].endswith(": nothing readable: empty file")


def test_run_metadata_without_records_is_readable(tmp_path):
    # A sidecar and a tau2 dir layout's results.json describe a run: read, no rows, no failure.
    (tmp_path / "variant_summary.json").write_text(
        '{"variant": "calm", "status": "completed", "exit_reason": "ok"}'
    )
    shutil.copy(CONTROL, tmp_path / "results.json")
    res = scan(str(tmp_path))
    assert res.exit_code == 0, res.output
    res = scan(str(TAU2 / "dir_voice_run"))
    assert "nothing readable" not in res.output and res.exit_code == 0, res.output


def test_allow_unreadable_lists_the_files_and_passes(tmp_path, cut_checkpoint):
    res = scan(CONTROL, str(cut_checkpoint), "--allow-unreadable")
    assert res.exit_code == 0, res.output
    assert gate_lines(res.output)[0].startswith(
        f"gate: allowed — {cut_checkpoint}: nothing readable"
    )
    assert gate_lines(res.output)[0].endswith(" (allow-unreadable)")
    cfg = pinned_config(tmp_path, "allow-unreadable = true\n")
    assert run("scan", "--no-report", "--config", cfg, CONTROL, str(cut_checkpoint)).exit_code == 0
    # nothing readable at all is never allowed: nothing was checked
    res = scan(str(cut_checkpoint), "--allow-unreadable")
    assert res.exit_code == 1 and NO_READABLE_INPUT in res.output


@pytest.fixture
def one_bad_record(tmp_path) -> Path:
    """The control run with a stray record after its array: one record-level reject."""
    path = tmp_path / "results.json"
    records = json.loads(Path(CONTROL).read_text())
    path.write_text(json.dumps(records) + '{"task_id": 99, "traj": "bad"}')
    return path


def test_rejected_records_are_gated_by_max_rejects(tmp_path, one_bad_record):
    res = scan(str(one_bad_record))
    assert res.exit_code == 0, res.output  # listed, not gated by default
    assert f"rejected: {one_bad_record}:1: " in res.output
    res = scan(str(one_bad_record), "--max-rejects", "0", "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 1
    assert "gate: FAIL — 1 rejected record, above max-rejects 0" in gate_lines(res.output)
    gate = json.loads((tmp_path / "r.json").read_text())["gate"]
    assert gate["rejects"] == {"records": 1, "max_rejects": 0, "exceeded": True}
    res = scan(str(one_bad_record), "--max-rejects", "1")
    assert res.exit_code == 0
    assert "gate: ok — 1 rejected record, within max-rejects 1" in gate_lines(res.output)
    cfg = pinned_config(tmp_path, "max-rejects = 0\n")
    assert run("scan", "--no-report", "--config", cfg, str(one_bad_record)).exit_code == 1
    # the flag wins over the file
    res = run("scan", "--no-report", "--config", cfg, str(one_bad_record), "--max-rejects", "5")
    assert res.exit_code == 0


def test_max_rejects_counts_records_of_files_that_were_read(cut_checkpoint):
    # The cut checkpoint's 4 rejects are the file's own line, not 4 rejected records.
    res = scan(CONTROL, str(cut_checkpoint), "--allow-unreadable", "--max-rejects", "0")
    assert res.exit_code == 0, res.output
    assert "gate: ok — 0 rejected records, within max-rejects 0" in res.output


@pytest.mark.parametrize(
    ("config_text", "message"),
    [
        ("max-rejects = -1\n", "max-rejects must be a whole number, 0 or more"),
        ('max-rejects = "5"\n', "max-rejects must be a whole number, 0 or more"),
        ('allow-unchecked = "yes"\n', "allow-unchecked must be true or false"),
        ("allow-unreadable = 1\n", "allow-unreadable must be true or false"),
    ],
)
def test_bad_gate_keys_are_usage_errors(tmp_path, config_text, message):
    cfg = tmp_path / "forensics.toml"
    cfg.write_text(config_text)
    res = run("scan", "--no-report", "--config", str(cfg), CONTROL)
    assert res.exit_code == 2 and message in res.output


# --- 3. nothing readable says one thing, whatever the input ----------------------------------


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("/dev/null", None, "a device, not a file: not read"),
        ("empty.log", b"", "empty file"),
        ("junk.bin", bytes(range(256)) * 8, "binary file (NUL bytes), not a log or JSON"),
        # (prose alone is a companion file, skipped: tests/gate/test_gate_companions.py)
        (
            "junk.txt",
            b"no records\njust prose <think>\n",
            "no recognizable records (unknown format); line 2 looks like an agent's record "
            "(`<think>`)",
        ),
    ],
)
def test_no_readable_input_is_one_verdict_and_exit_1(tmp_path, name, content, reason):
    path = name if content is None else str(tmp_path / name)
    if content is not None:
        Path(path).write_bytes(content)
    res = scan(path, "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 1, res.output
    assert "gate: pass" not in res.output
    assert res.output.endswith(
        f"gate: FAIL — {path}: nothing readable: {reason}\n{NO_READABLE_INPUT}\n"
    )
    gate = json.loads((tmp_path / "r.json").read_text())["gate"]
    assert gate["no_readable_input"] is True and gate["exit_code"] == 1
    res = scan(path, "--exit-zero")
    assert res.exit_code == 0 and res.output.endswith("gate: exit code 0 (--exit-zero)\n")


# --- 4. diff of a rerun of a subset of the tasks ---------------------------------------------


def rerun_of_tasks_12_and_27(directory: Path) -> Path:
    """output2.txt as a rerun of two of its four tasks writes it: the frustrated variant's
    header and tasks 12 and 27 (task 5, the control, and task 48 were not rerun)."""
    lines = Path(OUTPUT2).read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "variant=frustrated user_strategy" in line)
    task48 = next(i for i, line in enumerate(lines) if line.startswith("Running task 48"))
    end48 = next(i for i, line in enumerate(lines) if line.startswith("❌ task_id=48"))
    path = directory / "rerun" / "output2.txt"
    path.parent.mkdir()
    path.write_text("".join(lines[start:task48] + lines[end48 + 2 :]), encoding="utf-8")
    return path


def diff(tmp_path: Path, *args: str):
    out = tmp_path / "d.json"
    res = run("diff", "--config", PINNED, *args, "--json", str(out))
    return res, json.loads(out.read_text())


def test_rerun_subset_workflow(tmp_path):
    before = tmp_path / "before.json"
    assert scan(OUTPUT2, "--json", str(before)).exit_code == 1
    rerun = rerun_of_tasks_12_and_27(tmp_path)
    after = forensics.scan([str(rerun)])
    assert sorted(after.trajectories["task_id"].to_list()) == ["12", "27"]

    res, d = diff(tmp_path, str(before), str(rerun))
    assert res.exit_code == 0, res.output
    f = d["findings"]
    assert f["new"] == [] and f["fixed"] == []  # nothing was fixed: 48 was not rerun
    assert {x["task_id"] for x in f["not_rerun"]} == {"48"} and len(f["not_rerun"]) == 19
    assert {x["task_id"] for x in f["persistent"]} == {"12", "27"}
    assert d["episodes"] == {
        "common": 2,
        "not_rerun": 2,
        "only_in_b": 0,
        "not_rerun_tasks": ["5", "48"],
        "only_in_b_tasks": [],
    }
    assert "episodes (task, trial): 2 in both, 2 of A not rerun in B (tasks 5, 48)" in res.output
    assert "findings: 0 new, 0 fixed, 25 persistent, 19 not rerun" in res.output
    assert "fixed findings:" not in res.output
    rewards = {r["task_id"]: r for r in d["reward_by_task"]}
    assert rewards["48"]["not_rerun"] and rewards["5"]["not_rerun"]
    assert "  48        0.00      —  not rerun" in res.output

    # --only-common: causes, findings and rewards of the two rerun tasks only
    res, d = diff(tmp_path, str(before), str(rerun), "--only-common")
    assert res.exit_code == 0
    assert d["only_common"] is True
    assert d["findings"]["not_rerun"] == [] and len(d["findings"]["persistent"]) == 25
    assert [r["task_id"] for r in d["reward_by_task"]] == ["12", "27"]
    assert {c["id"]: (c["state"], c["trajectories"]) for c in d["causes"]} == {
        "reasoning-in-content": ("persistent", [2, 2]),
        "truncated-output": ("persistent", [2, 2]),
    }
    assert "--only-common: only the episodes in both are compared" in res.output


def test_diff_exit_codes_with_a_subset_as_a(tmp_path):
    """The other way round: tasks 5 and 48 are only in B. Their findings are new (exit 1)
    unless --only-common leaves them out of the comparison (exit 0)."""
    rerun = rerun_of_tasks_12_and_27(tmp_path)
    res, d = diff(tmp_path, str(rerun), OUTPUT2)
    assert res.exit_code == 1
    assert {x["task_id"] for x in d["findings"]["new"]} == {"48"}
    assert d["episodes"]["only_in_b_tasks"] == ["5", "48"]
    res, d = diff(tmp_path, str(rerun), OUTPUT2, "--only-common")
    assert res.exit_code == 0 and d["findings"]["new"] == []
    # a side with nothing readable is an input error, as scan's gate would fail it
    res = run("diff", "--config", PINNED, OUTPUT2, str(EMPTY_CHECKPOINT))
    assert res.exit_code == 2
    assert f"{EMPTY_CHECKPOINT}: no readable input ({EMPTY_CHECKPOINT}: empty checkpoint" in (
        res.output
    )


def test_diff_help_documents_the_exit_codes():
    text = " ".join(run("diff", "--help").output.split())
    assert "Exit codes: 0 no new finding in B" in text
    assert "1 new findings in B; 2 usage or input error" in text
    assert '"not rerun", never "fixed"' in text


def test_diff_output_shows_control_characters_escaped(tmp_path):
    odd = tmp_path / "\x1b]0;owned\x07.txt"
    shutil.copy(OUTPUT2, odd)
    res = run("diff", "--config", PINNED, OUTPUT2, str(odd))
    assert res.exit_code == 0
    assert "\x1b" not in res.output and "\\x1b]0;owned\\x07.txt" in res.output


# --- 5. writing a baseline is not a gate run -------------------------------------------------


def test_write_baseline_exits_0_and_says_where(tmp_path):
    base = tmp_path / "base.json"
    res = scan(OUTPUT2, "--write-baseline", str(base), "--json", str(tmp_path / "r.json"))
    assert res.exit_code == 0, res.output
    assert res.output.endswith(f"baseline: wrote 44 findings to {base}\n")
    assert gate_lines(res.output) == []
    assert len(json.loads(base.read_text())["findings"]) == 44
    assert "gate" not in json.loads((tmp_path / "r.json").read_text())
    # whatever the gate options say: they are not applied
    res = scan(OUTPUT2, "--write-baseline", str(base), "--max-rate", "max-tokens=0")
    assert res.exit_code == 0
    # a usage error is still one
    assert scan(OUTPUT2, "--write-baseline", str(base), "--max-rate", "nope=0").exit_code == 2


# --- 6. the configuration example of docs/ci.md, parsed and applied ---------------------------


def docs_config() -> str:
    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    start = doc.index("## Configuration")
    section = doc[start : doc.index("\n#", start + 1)]
    return re.search(r"```toml\n(.*?)```", section, flags=re.S).group(1)


def test_docs_configuration_example_is_valid_and_applied(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(docs_config())
    settings = config.load(tmp_path / "pyproject.toml")
    assert not set(settings.disable) & set(settings.max_rate)
    results = tmp_path / "results"
    (results / "smoke").mkdir(parents=True)
    shutil.copy(QWEN, results / "qwen.json")
    shutil.copy(OUTPUT2, results / "smoke" / "output2.txt")  # ignore-paths: results/smoke
    shutil.copy(OUTPUT2, results / "run.partial.json")  # ignore-paths: *.partial.json

    result = forensics.scan([str(results)], settings=settings)
    assert [Path(f.path).name for f in result.files] == ["qwen.json"]
    ran = {r.id for r in result.rules}
    assert ran.isdisjoint(settings.disable) and set(settings.max_rate) <= ran
    for rule, severity in settings.severity.items():
        assert {r.severity for r in result.rules if r.id == rule} == {severity}
    for rule, params in settings.params.items():
        (r,) = [r for r in result.rules if r.id == rule]
        assert {k: r.params[k].value for k in params} == params

    monkeypatch.chdir(tmp_path)  # the file is found as a user's pyproject.toml would be
    res = run("scan", "--no-report", "results", "--json", "r.json")
    assert res.exit_code in (0, 1) and "error" not in res.output, res.output
    gate = json.loads((tmp_path / "r.json").read_text())["gate"]
    assert gate["fail_on"] == settings.fail_on
    assert {r["rule"]: r["max_rate"] for r in gate["rates"]} == settings.max_rate
    assert all(r["checked"] for r in gate["rates"])  # every rate in the example can run here
    assert gate["rejects"]["max_rejects"] == settings.max_rejects


def test_a_rule_both_disabled_and_rate_limited_is_a_config_error(tmp_path):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(
        '[tool.forensics]\ndisable = ["think-loop"]\nmax-rate = { think-loop = "10%" }\n'
    )
    with pytest.raises(config.ConfigError, match="think-loop: both disabled and given a max-rate"):
        config.load(cfg)
    res = run("scan", "--no-report", "--config", str(cfg), OUTPUT2)
    assert res.exit_code == 2
    assert f"{cfg}: think-loop: both disabled and given a max-rate" in res.output
