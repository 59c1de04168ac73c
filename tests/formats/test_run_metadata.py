"""Run-metadata sidecars (variant_summary.json & co.) label the trajectories of their run."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

import forensics
from forensics.cli import cli
from forensics.ingest import detect
from forensics.ingest.formats import sidecars

from conftest import DATA, SAMPLES

TAU2 = DATA / "tau2"


def labels(row: dict) -> dict[str, str]:
    return {item["key"]: item["value"] for item in row["labels"]}


@pytest.fixture
def results(tmp_path):
    """results/<variant>/ as the variant runner of the seed story leaves it."""
    root = tmp_path / "results"
    frustrated = root / "frustrated"
    control = root / "control"
    frustrated.mkdir(parents=True)
    control.mkdir()
    shutil.copy(SAMPLES / "tau_bench_results_frustrated.json", frustrated)
    shutil.copy(SAMPLES / "tau_bench_results_control.json", control)
    (frustrated / "variant_summary.json").write_text(
        json.dumps(
            {
                "variant": "frustrated",
                "status": "completed",
                "exit_reason": "all_tasks_failed",
                "avg_reward": 0.0,
                "server": {"tool_call_parser": "hermes"},
            },
            indent=2,
        )
    )
    (control / "variant_summary.json").write_text(
        '{"variant": "control", "status": "completed", "exit_reason": "ok", "avg_reward": 1.0}'
    )
    return root


def test_sidecar_labels_every_trajectory_of_its_directory(results):
    result = forensics.scan([str(results)])
    assert result.rejects.is_empty()
    by_variant: dict[str, list[dict]] = {}
    for row in result.trajectories.iter_rows(named=True):
        by_variant.setdefault(row["variant"], []).append(labels(row))
    assert sorted(by_variant) == ["control", "frustrated"]
    assert len(by_variant["frustrated"]) == 3
    assert len(by_variant["control"]) == 1
    for found in by_variant["frustrated"]:
        assert found["variant_summary.status"] == "completed"
        assert found["variant_summary.exit_reason"] == "all_tasks_failed"
        assert found["variant_summary.avg_reward"] == "0.0"
        assert found["variant_summary.server.tool_call_parser"] == "hermes"
    assert by_variant["control"][0]["variant_summary.exit_reason"] == "ok"
    notes = {f.path.rsplit("/", 2)[-2]: f.note for f in result.files if f.format == "run_metadata"}
    assert notes["frustrated"] == (
        f"run metadata: labels 3 trajectories read from {results / 'frustrated'}/ and below"
    )
    assert notes["control"].startswith("run metadata: labels 1 trajectories")


def test_nearest_sidecar_wins(results):
    (results / "run_status.json").write_text(
        '{"status": "interrupted", "exit_reason": "sigterm", "variant": "outer"}'
    )
    (results / "variant_summary.json").write_text('{"status": "outer", "exit_reason": "outer"}')
    result = forensics.scan([str(results)])
    for row in result.trajectories.iter_rows(named=True):
        found = labels(row)
        # the variant directory's own summary beats the one above it, key by key
        assert found["variant_summary.status"] == "completed"
        assert found["run_status.exit_reason"] == "sigterm"  # only the outer one has it
        assert row["variant"] in ("control", "frustrated")


def test_a_variant_the_source_names_is_kept(tmp_path):
    shutil.copy(SAMPLES / "output2.txt", tmp_path)  # names its variants in its own lines
    (tmp_path / "variant_summary.json").write_text('{"variant": "other", "status": "completed"}')
    result = forensics.scan([str(tmp_path)])
    assert sorted(set(result.trajectories["variant"])) == ["control", "frustrated"]
    assert {
        labels(r)["variant_summary.variant"] for r in result.trajectories.iter_rows(named=True)
    } == {"other"}


def test_sidecar_without_results_is_noted_not_lost(tmp_path):
    lonely = tmp_path / "variant_summary.json"
    lonely.write_text('{"variant": "calm", "status": "failed", "exit_reason": "server_down"}')
    result = forensics.scan([str(tmp_path)])
    assert result.rejects.is_empty() and result.trajectories.is_empty()
    assert result.files[0].format == "run_metadata"
    assert "its labels apply to nothing" in result.files[0].note
    res = CliRunner().invoke(cli, ["scan", str(tmp_path), "--no-report"])
    assert res.exit_code == 0, res.output
    assert "its labels apply to nothing" in res.output


def test_sidecar_labels_tau2_runs_too(tmp_path):
    run = tmp_path / "qwen"
    run.mkdir()
    shutil.copy(TAU2 / "qwen2.5-7b_airline_llm_agent_gpt-4.1-user.subset6.json", run)
    (run / "variant_summary.json").write_text('{"status": "completed", "exit_reason": "ok"}')
    result = forensics.scan([str(tmp_path)])
    assert result.trajectories.height == 6
    for row in result.trajectories.iter_rows(named=True):
        assert labels(row)["variant_summary.exit_reason"] == "ok"
        assert labels(row)["domain"] == "airline"
        assert row["variant"] is None  # the sidecar names none


@pytest.mark.parametrize(
    "text",
    [
        '{"status": "ok", "messages": []}',  # a conversation, not run metadata
        '{"choices": [], "status": "ok"}',
        '{"elapsed": 3}',  # no status field
        '{"status": "ok", "deep": {"a": {"b": 1}}}',  # nested: a record, not a summary
        '[{"status": "ok"}]',
    ],
)
def test_what_is_not_a_sidecar(text):
    assert sidecars.sniff(text) is None


@pytest.mark.parametrize("name", ["spend_logs_payload.json", "standard_logging_payload.json"])
def test_litellm_payloads_with_a_status_field_are_not_sidecars(name):
    head = (DATA / "capture" / "real" / name).read_bytes()[:65536]
    assert sidecars.sniff(head.decode()) is None
    fmt, _why = detect(head)
    assert fmt is None or fmt.name != "run_metadata"
