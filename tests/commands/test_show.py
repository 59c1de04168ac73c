"""`forensics show` (one trajectory on the terminal) and `forensics view` (the report in the
browser)."""

from __future__ import annotations

import json
import webbrowser

from click.testing import CliRunner

from forensics.cli import cli

from conftest import DATA, SAMPLES

OUTPUT2 = str(SAMPLES / "output2.txt")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_show_by_task_id_prints_the_turns_in_order_with_findings_inline():
    res = run("show", "12", OUTPUT2)
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    head = out.splitlines()[0]
    assert head.startswith("task 12 trial 0 · ") and "reward 0 · " in head
    assert "14 turns · 16 findings" in head
    assert "source: " in out and "output2.txt:115" in out
    turns = [int(line.split()[0][1:]) for line in out.splitlines() if line.startswith("#")]
    assert turns == list(range(14))
    # The cut-off agent turn: its finding right under its header, then its text.
    block = out.split("\n#2 assistant/agent")[1].split("\n#3 ")[0]
    assert "cap 512" in block.splitlines()[0] and "output2.txt:120" in block.splitlines()[0]
    assert block.splitlines()[1].startswith("   ✗ unclosed-think [high]: assistant turn opens")
    assert "<think>" in block and "chars not shown (--full shows them)" in block
    # A tau-bench console log records no finish reason: no turn says "finish".
    assert "finish" not in out.replace("finished", "")
    full = run("show", "12", OUTPUT2, "--full").stdout
    assert "chars not shown" not in full and len(full) > len(out)


def test_show_by_id_prefix_and_task_trial_and_from_a_database(tmp_path):
    db = tmp_path / "scan.duckdb"
    out = tmp_path / "r.json"
    run("scan", OUTPUT2, "--no-report", "--db", str(db), "--json", str(out))
    ids = sorted(t["trajectory_id"] for t in json.loads(out.read_text())["trajectories"])
    one = "output2.txt#run2/task-12/trial-0"
    assert one in ids
    from_scan = run("show", one, OUTPUT2).stdout
    assert run("show", one, "--db", str(db)).stdout == from_scan
    # The shortest prefix no other id shares names it too.
    prefix = next(
        one[:n] for n in range(1, len(one)) if sum(i.startswith(one[:n]) for i in ids) == 1
    )
    assert run("show", prefix, "--db", str(db)).stdout == from_scan
    assert run("show", "12:0", "--db", str(db)).stdout == from_scan
    assert run("show", "12:5", "--db", str(db)).exit_code == 2


def test_an_ambiguous_or_unknown_trajectory_is_a_usage_error_with_candidates():
    res = run("show", "output2.txt#run", OUTPUT2)
    assert res.exit_code == 2
    assert "names 4 trajectories: output2.txt#run" in res.stderr
    res = run("show", "nope", OUTPUT2)
    assert res.exit_code == 2 and "no trajectory 'nope' among 4" in res.stderr
    res = run("show", "12")
    assert res.exit_code == 2 and "give --db FILE" in res.stderr
    res = run("show", "12", "--db", "missing.duckdb")
    assert res.exit_code == 2 and "no such database" in res.stderr


def test_a_capture_is_named_by_its_trajectory_not_task_none():
    capture = str(DATA / "capture" / "vllm_agent_loop.jsonl")
    doc = json.loads(run("scan", capture, "--no-report", "--json", "-").stdout)
    tid = doc["trajectories"][0]["trajectory_id"]
    out = run("show", tid, capture).stdout
    assert out.splitlines()[0].startswith(tid + " · ")
    assert "None" not in out and "task " not in out.splitlines()[0]
    assert "finish " in out  # a capture records finish reasons: they are shown


def test_show_makes_hostile_text_visible_not_obeyed(tmp_path):
    record = {
        "task_id": 1,
        "trial": 0,
        "reward": 0.0,
        "info": {},
        "traj": [
            {"role": "user", "content": "hi \x1b[2J\x1b]52;c;cHduZWQ=\x07 \u202eevil\n::error::x"},
            {"role": "assistant", "content": "ok"},
        ],
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps([record]))
    out = run("show", "1", str(path)).stdout
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b[2J" in out and "\\u202e" in out
    assert "\n   \\::error::x" in out  # its own line, defused as a workflow command


def test_view_opens_the_report_in_the_browser(tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    monkeypatch.chdir(tmp_path)
    run("scan", OUTPUT2)
    res = run("view")
    assert res.exit_code == 0
    assert opened == [(tmp_path / "forensics-report" / "report.html").resolve().as_uri()]
    assert run("view", "forensics-report/report.html").exit_code == 0 and len(opened) == 2
    res = run("view", "--print-url")
    assert res.stdout.strip() == opened[0] and len(opened) == 2


def test_view_without_a_report_or_a_browser(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run("view")
    assert res.exit_code == 2 and "no report there" in res.stderr
    run("scan", OUTPUT2, "-o", "out")
    monkeypatch.setattr(webbrowser, "open", lambda url: False)
    res = run("view", "out")
    assert res.exit_code == 0 and res.stdout.strip().startswith("file://")
    assert "no browser could be started" in res.stderr
