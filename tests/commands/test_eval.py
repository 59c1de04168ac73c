"""`forensics eval`: findings scored against labels through a crosswalk (forensics.tools.evaluate)
and the converters of public datasets' annotations (forensics.tools.public_labels).

The label files here are written by hand, with the numbers they must give worked out from the
definitions in docs/eval.md: a change of the matching or the counting shows as a changed number.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from forensics.check import engine
from forensics.cli import cli
from forensics.tools import evaluate as ev
from forensics.tools import public_labels as pl

from conftest import ROOT

TAU2 = ROOT / "tests" / "data" / "tau2"
SUBSET6 = "qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset6.json"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


# --- matching and counting on a report written by hand ---------------------------------------

PACK = ev.Pack(
    cause={"r-a": "net", "r-b": "think", "r-c": "disk"},
    confidence={"r-a": "hard", "r-b": "hard", "r-c": "hard"},
    preview=set(),
    cause_class={"net": "infra", "think": "model", "disk": "infra"},
)

CROSSWALK = """
[[category]]
name = "Net"
rules = ["r-a"]
class = "infra"
attribution = "infra"
reason = "test"

[[category]]
name = "Think"
rules = ["r-b"]
attribution = "model"
reason = "test"
"""


def _finding(rule: str, task: str, turn: int, line: int, **extra) -> dict:
    return {
        "id": f"{rule}-{task}-{turn}",
        "rule": rule,
        "cause": PACK.cause[rule],
        "trajectory_id": f"a/task-{task}/trial-0",
        "task_id": task,
        "trial": 0,
        "turn_index": turn,
        "source": {"path": "a.json", "line": line},
        "message": "m",
    } | extra


REPORT = {
    "findings": [
        _finding("r-a", "1", 5, 50),  # f1
        _finding("r-a", "1", 7, 70),  # f2
        _finding("r-b", "1", 3, 30, span_path=["root", "agent", "llm1"]),  # f3
        _finding("r-c", "2", 0, 5),  # f4: infra by class only
    ],
    "trajectories": [
        {
            "trajectory_id": "a/task-1/trial-0",
            "task_id": "1",
            "trial": 0,
            "source": {"path": "a.json", "line": 1},
            "fault_class": "infra",
        },
        {
            "trajectory_id": "a/task-2/trial-0",
            "task_id": "2",
            "trial": 0,
            "source": {"path": "a.json", "line": 2},
            "fault_class": "model",
        },
    ],
}

LABELS = [
    {"id": "L1", "file": "a.json", "trajectory": "1", "location": {"step": 5}, "category": "Net"},
    {"id": "L2", "file": "a.json", "trajectory": "1", "location": {"step": 9}, "category": "Net"},
    {
        "id": "L3",
        "file": "a.json",
        "trajectory": "1",
        "location": {"span": "agent"},
        "category": "think",
    },  # categories match whatever their case
    {
        "id": "L4",
        "file": "a.json",
        "trajectory": "1",
        "location": {"span": "llm1"},
        "category": "Think",
    },
    {
        "id": "L5",
        "file": "a.json",
        "trajectory": "1",
        "location": {"line": 33},
        "category": "Think",
    },
    {"id": "L6", "file": "a.json", "trajectory": "2", "category": None, "attribution": "none"},
]


def _score(tmp_path: Path, disputes: list[dict] | None = None) -> ev.Result:
    walk = tmp_path / "walk.toml"
    walk.write_text(CROSSWALK, encoding="utf-8")
    labels = ev.load_labels(_write(tmp_path / "labels.jsonl", LABELS), tmp_path)
    observed = ev.from_report(REPORT, tmp_path, "report")
    dpath = _write(tmp_path / "disputes.jsonl", disputes) if disputes else None
    return ev.evaluate(
        labels,
        observed,
        ev.load_crosswalk(walk),
        PACK,
        ev.load_disputes(dpath, tmp_path),
    )


def _pr(counts: ev.Counts) -> tuple[int, int, int, int]:
    return counts.correct, counts.findings, counts.found, counts.labels


def test_each_level_of_place_counts_what_it_should(tmp_path):
    """exact: f1-L1 (step 5 = turn 5), f3-L4 (its own span). tolerant adds f3-L3 (a span on
    f3's ancestor chain) and f3-L5 (line 33, 3 lines from f3's 30). trajectory: every pair of
    the right kind in task 1. f2 (turn 7) is 2 steps from L1 and L2: beyond ±1. f4 is judged
    because L6 names its trajectory, and counts against no category of its own."""
    res = _score(tmp_path)
    fig = res.raw
    assert _pr(fig.overall["exact"]) == (2, 4, 2, 5)
    assert _pr(fig.overall["tolerant"]) == (2, 4, 4, 5)
    assert _pr(fig.overall["trajectory"]) == (3, 4, 5, 5)
    cats = {k: _pr(v["exact"]) for k, v in fig.per_category.items()}
    assert cats == {
        "Net": (1, 2, 1, 2),
        "Think": (1, 1, 1, 3),
        "other infra findings": (0, 1, 0, 0),
    }
    assert fig.attribution == {("infra", "infra"): 1, ("none", "model"): 1}
    assert [f.rule for f in res.unmatched_findings] == ["r-a", "r-c"]
    assert [lab.id for lab in res.unmatched_labels] == ["L2"]


def test_a_wider_tolerance_takes_the_step_two_away(tmp_path):
    walk = tmp_path / "walk.toml"
    walk.write_text(CROSSWALK, encoding="utf-8")
    labels = ev.load_labels(_write(tmp_path / "labels.jsonl", LABELS), tmp_path)
    res = ev.evaluate(
        labels,
        ev.from_report(REPORT, tmp_path, "r"),
        ev.load_crosswalk(walk),
        PACK,
        tolerance=2,
        line_tolerance=0,
    )
    # f2 (turn 7) now meets L1 (5) and L2 (9); L5 (line 33) is no longer within reach of f3
    assert _pr(res.raw.overall["tolerant"]) == (3, 4, 4, 5)


def test_disputes_are_applied_apart_and_listed(tmp_path):
    disputes = [
        {
            "finding": {"file": "a.json", "rule": "r-c", "trajectory": "2", "turn": 0},
            "verdict": "out-of-scope",
            "reason": "a disk warning the task never needed",
        },
        {"label": "L2", "verdict": "label-wrong", "reason": "step 9 is the agent's summary"},
        {"label": "L5", "verdict": "relabel", "category": "Net", "reason": "the quote is a 429"},
        {"label": "L99", "verdict": "label-wrong", "reason": "names nothing"},
    ]
    res = _score(tmp_path, disputes)
    assert _pr(res.raw.overall["exact"]) == (2, 4, 2, 5)  # raw: as if no dispute
    fig = res.disputed
    # f4 dropped; L2 dropped; L5 is Net now, and f1's line 50 is not near 33: still unfound
    assert _pr(fig.overall["exact"]) == (2, 3, 2, 4)
    assert _pr(fig.overall["trajectory"]) == (3, 3, 4, 4)
    assert fig.dropped == {"finding out-of-scope": 1, "label label-wrong": 1}
    assert [d["line"] for d in res.disputes] == [1, 2, 3]
    assert res.disputes[2]["now"] == {"category": "Net", "attribution": None}
    assert [d.line for d in res.stale] == [4]
    md = ev.markdown(res)
    assert "- relabel L5: the quote is a 429" in md


def test_a_finding_dispute_of_label_wrong_makes_a_found_label(tmp_path):
    """The labels missed what f4 shows: it counts as correct, and as one more label found."""
    res = _score(
        tmp_path,
        [
            {
                "finding": {"file": "a.json", "rule": "r-c", "trajectory": "a/task-2/trial-0"},
                "verdict": "label-wrong",
                "reason": "the trace shows ENOSPC",
            }
        ],
    )
    assert _pr(res.disputed.overall["exact"]) == (3, 4, 3, 6)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"file": "a.json", "category": "x", "location": {"step": -1}}, "0-based"),
        ({"file": "a.json", "category": "x", "location": {"span": 3}}, "span id"),
        ({"file": "a.json", "category": "x", "location": {"step": 1, "turn": 2}}, "one of"),
        ({"file": "a.json", "category": None}, "labels a trajectory"),
        ({"file": "a.json", "category": "x", "attribution": "simulator"}, "attribution"),
        ({"category": "x"}, "no file"),
    ],
)
def test_a_label_line_that_can_not_be_used_names_its_line(tmp_path, line, message):
    path = _write(tmp_path / "l.jsonl", [{"file": "a.json", "category": "x"}, line])
    with pytest.raises(ev.EvalError, match=rf"l.jsonl:2: .*{message}"):
        ev.load_labels(path)


# --- the command, on a tau2 results file ---------------------------------------------------------

TAU2_LABELS = [
    # task 0: a normal end with reward 1 (a control) and its termination reason
    {"id": "c0", "file": SUBSET6, "trajectory": "0", "category": None, "attribution": "none"},
    {"id": "t0", "file": SUBSET6, "trajectory": "0", "trial": 0, "category": "user_stop"},
    {"id": "t6", "file": SUBSET6, "trajectory": "6", "category": "agent_error"},
    {"id": "t11", "file": SUBSET6, "trajectory": "11", "category": "agent_error"},
    # deliberately wrong: task 19 ended with agent_error (an empty stop), not an infra error
    {"id": "t19", "file": SUBSET6, "trajectory": "19", "category": "infrastructure_error"},
]


def test_eval_scores_a_tau2_file_against_termination_labels(tmp_path, monkeypatch):
    """Judged: tasks 0, 6, 11, 19. message-format-violation reports agent_error on 6, 11 and 19;
    on 19 it matches no label (raw: a false positive of agent_error, and the infrastructure_error
    label a miss). The dispute relabels 19: then everything agrees. stop-no-tool-calls and
    announced-action-without-call report no termination reason: outside the crosswalk."""
    monkeypatch.chdir(tmp_path)
    labels = _write(tmp_path / "labels.jsonl", TAU2_LABELS)
    disputes = _write(
        tmp_path / "disputes.jsonl",
        [
            {
                "label": "t19",
                "verdict": "relabel",
                "category": "agent_error",
                "reason": "the last agent message is an empty stop: tau2's AgentError",
            }
        ],
    )
    out = tmp_path / "eval.json"
    res = run(
        "eval",
        str(labels),
        "--crosswalk",
        "tau2-termination",
        "--root",
        str(TAU2),
        "--disputes",
        str(disputes),
        "--json",
        str(out),
        "--md",
        str(tmp_path / "eval.md"),
        "--no-config",
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    raw, adj = doc["raw"], doc["disputed"]
    assert raw["overall"]["exact"] | {} == raw["overall"]["trajectory"]
    assert (raw["overall"]["exact"]["correct"], raw["overall"]["exact"]["findings"]) == (2, 3)
    assert (raw["overall"]["exact"]["found"], raw["overall"]["exact"]["labels"]) == (2, 3)
    assert (raw["end_to_end"]["exact"]["found"], raw["end_to_end"]["exact"]["labels"]) == (2, 4)
    assert raw["per_category"]["agent_error"]["exact"] | {} == {
        "findings": 3,
        "correct": 2,
        "labels": 2,
        "found": 2,
        "precision": 2 / 3,
        "recall": 1.0,
    }
    assert raw["not_covered"] == {"user_stop": 1}
    assert raw["findings_outside_the_crosswalk"] == {
        "announced-action-without-call": 1,
        "stop-no-tool-calls": 3,
    }
    assert raw["attribution"] == [
        {"label": "infra", "tool": "model", "n": 1},
        {"label": "model", "tool": "model", "n": 2},
        {"label": "none", "tool": "model", "n": 1},
    ]
    assert (adj["overall"]["exact"]["correct"], adj["overall"]["exact"]["findings"]) == (3, 3)
    assert (adj["overall"]["exact"]["found"], adj["overall"]["exact"]["labels"]) == (3, 3)
    assert adj["attribution"] == [
        {"label": "model", "tool": "model", "n": 3},
        {"label": "none", "tool": "model", "n": 1},
    ]
    assert doc["crosswalk"] == "tau2-termination" and doc["findings_from"] == "scan"
    assert "agent_error" in res.output and "disputes: 1 applied, 0 stale" in res.output
    assert "| agent_error | message-format-violation" in (tmp_path / "eval.md").read_text()


def test_eval_reads_a_saved_report_the_same(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scan = run("scan", str(TAU2 / SUBSET6), "--no-report", "--json", "r.json", "--no-config")
    assert scan.exit_code == 1  # the gate fails on the findings; the report is written
    labels = _write(tmp_path / "labels.jsonl", TAU2_LABELS)
    a = run(
        "eval",
        str(labels),
        "--crosswalk",
        "tau2-termination",
        "--root",
        str(TAU2),
        "--json",
        "-",
        "--no-config",
    )
    b = run(
        "eval",
        str(labels),
        "--crosswalk",
        "tau2-termination",
        "--root",
        str(TAU2),
        "--report",
        "r.json",
        "--json",
        "-",
        "--no-config",
    )
    one, two = json.loads(a.stdout), json.loads(b.stdout)
    assert two["findings_from"] == "r.json"
    for doc in (one, two):
        del doc["findings_from"]
    assert one == two


def test_eval_input_errors_exit_2(tmp_path):
    labels = _write(tmp_path / "labels.jsonl", [{"file": "nowhere.json", "category": "x"}])
    res = run("eval", str(labels), "--crosswalk", "tau2-termination")
    assert res.exit_code == 2 and "none of the 1 labelled files exists" in res.output
    res = run("eval", str(labels), "--crosswalk", "no-such-walk")
    assert res.exit_code == 2 and "no shipped crosswalk of that name" in res.output
    bad = _write(tmp_path / "bad.jsonl", [{"file": "a", "category": "x", "location": 3}])
    res = run("eval", str(bad), "--crosswalk", "tau2-termination")
    assert res.exit_code == 2 and "bad.jsonl:1: location" in res.output


# --- the shipped crosswalks ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["agentrx", "trail", "whowhen", "tau2-termination"])
def test_a_shipped_crosswalk_names_rules_of_the_pack_and_says_why(name):
    walk = ev.load_crosswalk(ev.crosswalk_path(name))  # refuses an entry without a reason
    rules = {r.id for r in engine.load_rules()}
    named = set(walk.episode_rules)
    for cat in walk.categories.values():
        named |= set(cat.rules)
        assert set(cat.classes) <= {"infra", "model"}, cat.name
    assert named <= rules, sorted(named - rules)
    data = tomllib.loads(ev.crosswalk_path(name).read_text(encoding="utf-8"))
    assert data["dataset"]["source"].startswith("github:")


def test_trail_system_execution_categories_are_infra_and_the_rest_are_not():
    walk = ev.load_crosswalk(ev.crosswalk_path("trail"))
    system = {
        "Rate Limiting",
        "Authentication Errors",
        "Service Errors",
        "Resource Not Found",
        "Resource Exhaustion",
        "Timeout Issues",
        "Environment Setup Errors",
        "Tool Definition Issues",
    }
    for name in walk.order:
        cat = walk.category(name)
        assert cat is not None
        assert (cat.attribution == "infra") == (name in system), name
        assert ("infra" in cat.classes) == (name in system), name


# --- the converters, on native annotations written in each dataset's shape -----------------------


def test_agentrx_failures_become_steps_and_the_root_cause_the_trajectory(tmp_path):
    truth = [
        {
            "trajectory_id": 80,
            "failures": [
                {
                    "failure_id": 32,
                    "step_number": 26,
                    "failure_category": "System Failure",
                    "failed_agent": "Assistant",
                    "step_reason": "ended by a system error",
                }
            ],
            "root_cause": {"failure_id": 32},
        },
        {
            "trajectory_id": 12,
            "failures": [
                {
                    "failure_id": 7,
                    "step_number": 3,
                    "failure_category": "Underspecified User Intent",
                    "failed_agent": "User",
                    "step_reason": "the user withheld the order id",
                },
                {
                    "failure_id": 8,
                    "step_number": 9,
                    "failure_category": "Invalid Invocation",
                    "failed_agent": "Assistant",
                    "step_reason": "bad args",
                },
            ],
            "root_cause": {"failure_id": 7},
        },
    ]
    (tmp_path / "data" / "ground_truth").mkdir(parents=True)
    _write_json(tmp_path / "data" / "ground_truth" / "tau_ground_truth.json", truth)
    got = pl.convert("agentrx-tau", tmp_path)
    file = "data/tau_retail/tau_dataset_failed.json"
    assert [(g["id"], g.get("location"), g["category"], g.get("attribution")) for g in got] == [
        ("agentrx-tau/12/7", {"step": 2}, "Underspecified User Intent", "infra"),
        ("agentrx-tau/12/8", {"step": 8}, "Invalid Invocation", "model"),
        ("agentrx-tau/12", None, None, "infra"),
        ("agentrx-tau/80/32", {"step": 25}, "System Failure", "infra"),
        ("agentrx-tau/80", None, None, "infra"),
    ]
    assert {g["file"] for g in got} == {file} and got[0]["trajectory"] == "12"
    # what the converter writes, eval reads
    ev.load_labels(_write(tmp_path / "labels.jsonl", got), tmp_path)


def _write_json(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


def test_whowhen_trail_and_tau2_annotations_convert(tmp_path):
    _write_json(
        tmp_path / "ww" / "Who&When" / "Hand-Crafted" / "10.json",
        {
            "history": [],
            "mistake_agent": "WebSurfer",
            "mistake_step": "12",
            "mistake_reason": "clicks an irrelevant page",
        },
    )
    _write_json(
        tmp_path / "ww" / "Who&When" / "Hand-Crafted" / "9.json",
        {
            "history": [],
            "mistake_agent": "Orchestrator",
            "mistake_step": "0",
            "mistake_reason": "bad plan",
        },
    )
    ww = pl.convert("whowhen", tmp_path / "ww")
    assert [(g["id"], g["location"], g["category"], g["attribution"]) for g in ww] == [
        ("whowhen/Hand-Crafted/9", {"step": 0}, "Mistake", "model"),
        ("whowhen/Hand-Crafted/10", {"step": 12}, "Mistake", "model"),
    ]
    ann = tmp_path / "tr" / "benchmarking" / "processed_annotations_gaia"
    _write_json(
        ann / "abc.json",
        {
            "errors": [
                {"category": "Rate Limiting ", "location": "98fa", "impact": "HIGH"},
                {"category": "Goal deviation", "location": "bc20", "impact": "LOW"},
            ]
        },
    )
    _write_json(ann / "def.json", {"errors": []})
    tr = pl.convert("trail", tmp_path / "tr")
    assert [(g["id"], g.get("location"), g["category"], g["attribution"]) for g in tr] == [
        ("trail/gaia/abc/0", {"span": "98fa"}, "Rate Limiting", "infra"),
        ("trail/gaia/abc/1", {"span": "bc20"}, "Goal deviation", "model"),
        ("trail/gaia/def", None, None, "none"),
    ]
    assert tr[0]["file"] == "benchmarking/data/GAIA/abc.json"
    t2 = pl.convert("tau2", TAU2 / SUBSET6)
    assert [(g["trajectory"], g["category"], g.get("attribution")) for g in t2] == [
        ("0", "user_stop", None),
        ("0", None, "none"),
        *[(t, "agent_error", "model") for t in ("6", "11", "19", "36", "43")],
    ]
    assert {g["file"] for g in t2} == {SUBSET6}


def test_the_converter_command_writes_stable_jsonl(tmp_path, capsys):
    out = tmp_path / "labels.jsonl"
    assert pl.main(["tau2", str(TAU2 / SUBSET6), "-o", str(out)]) == 0
    first = out.read_bytes()
    assert pl.main(["tau2", str(TAU2 / SUBSET6), "-o", str(out)]) == 0
    assert out.read_bytes() == first and first.count(b"\n") == 7
    assert pl.main(["whowhen", str(tmp_path / "nowhere")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_public_labels_benchmark_scores_a_tau2_copy(tmp_path, capsys):
    """benchmarks/public_labels.py (the README table's maker): convert, scan, score."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "public_labels_bench", ROOT / "benchmarks" / "public_labels.py"
    )
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    sys.modules["public_labels_bench"] = bench
    spec.loader.exec_module(bench)
    out = tmp_path / "figures.json"
    assert bench.main(["--tau2", str(TAU2 / SUBSET6), "--json", str(out), "--markdown"]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))[f"tau2:{SUBSET6}"]
    exact = doc["raw"]["per_category"]["agent_error"]["exact"]
    assert (exact["correct"], exact["findings"], exact["found"], exact["labels"]) == (5, 5, 5, 5)
    assert "### `tau2:" in capsys.readouterr().out


def test_other_peoples_text_reaches_no_terminal_raw(tmp_path):
    labels = _write(
        tmp_path / "labels.jsonl",
        [
            {
                "id": "x\x1b[31m",
                "file": str(TAU2 / SUBSET6),
                "trajectory": "6",
                "category": "agent_error",
            }
        ],
    )
    disputes = _write(
        tmp_path / "d.jsonl",
        [{"label": "x\x1b[31m", "verdict": "tool-wrong", "reason": "::error::red\x1b[0m"}],
    )
    res = run(
        "eval",
        str(labels),
        "--crosswalk",
        "tau2-termination",
        "--disputes",
        str(disputes),
        "--no-config",
        "--json",
        str(tmp_path / "e.json"),
    )
    assert res.exit_code == 0
    assert "\x1b" not in res.output and "x\\x1b[31m: ::error::red\\x1b[0m" in res.output
    assert "\x1b" not in (tmp_path / "e.json").read_text(encoding="utf-8")


def test_tau2_directory_runs_and_unreadable_files(tmp_path):
    """A directory: every results file and one-simulation file in it; a file cut short is
    skipped and named, not fatal."""
    _write_json(
        tmp_path / "runs" / "sims" / "a.json",
        {
            "id": "a",
            "task_id": "7",
            "trial": 1,
            "termination_reason": "max_steps",
            "reward_info": {"reward": 0.0},
        },
    )
    (tmp_path / "runs" / "cut.json").write_text('{"simulations": [', encoding="utf-8")
    skipped: list[str] = []
    got = pl.convert("tau2", tmp_path / "runs", skipped=skipped)
    assert got == [
        {
            "id": "tau2/sims/a.json/7/1",
            "file": "sims/a.json",
            "trajectory": "7",
            "trial": 1,
            "category": "max_steps",
            "note": "reward 0.0",
        }
    ]
    assert len(skipped) == 1 and "cut.json" in skipped[0]
    with pytest.raises(pl.SourceError, match=r"cut\.json"):
        pl.convert("tau2", tmp_path / "runs" / "cut.json")


def test_a_line_inside_the_record_is_exact_in_a_scan_and_tolerant_from_a_report(tmp_path):
    """Task 36's empty stop: its record starts at line 1493 (the finding's line); the labeller
    quotes `"content": ""` on line 1495. A scan knows the record's extent, a saved report only
    its first line (1495 is then 2 lines away: tolerant)."""
    walk = ev.load_crosswalk(ROOT / "tests" / "data" / "eval" / "team-crosswalk.toml")
    labels = ev.load_labels(
        _write(
            tmp_path / "l.jsonl",
            [
                {
                    "file": SUBSET6,
                    "trajectory": "36",
                    "location": {"line": 1495},
                    "category": "empty reply",
                }
            ],
        ),
        TAU2,
    )
    pack = ev.load_pack()
    scanned = ev.scan_files(ev.files_named(labels))
    (f,) = [f for f in scanned.findings if f.task_id == "36" and f.rule == "stop-no-tool-calls"]
    assert f.line == 1493 and f.record is not None and f.record[0] == 1493 < 1495 < f.record[1]
    by_scan = ev.evaluate(labels, scanned, walk, pack)
    assert (by_scan.raw.overall["exact"].found, by_scan.raw.overall["exact"].labels) == (1, 1)
    bare = ev.Observed(
        [replace(g, record=None) for g in scanned.findings], scanned.trajectories, "report"
    )
    by_report = ev.evaluate(labels, bare, walk, pack)
    assert by_report.raw.overall["exact"].found == 0
    assert by_report.raw.overall["tolerant"].found == 1


def test_span_paths_come_from_the_turns_a_span_reader_fills():
    """A reader of span trees gives each turn its span_id (and parent_span_id, or a whole
    span_path): a finding's ancestor chain is built from them, root first."""
    import polars as pol

    turns = pol.DataFrame(
        {
            "trajectory_id": ["t", "t", "t"],
            "turn_index": [0, 1, 2],
            "span_id": ["root", "agent", "llm"],
            "parent_span_id": [None, "root", "agent"],
            "step_index": [None, 4, 5],
        }
    )
    extra = ev._span_columns(turns)
    assert extra[("t", 2)] == (("root", "agent", "llm"), 5)
    f = ev.Finding("1", "a", "r", "c", "t", None, None, 2, None, None, None, (), "m")
    placed = ev._with_place(f, {}, extra)
    assert placed.span_path == ("root", "agent", "llm") and placed.step == 5
    assert ev._span_columns(turns.drop("span_id", "parent_span_id", "step_index")) == {}
