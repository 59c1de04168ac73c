"""The sharded scan (--workers, --ray) gives the outputs of a scan in one process, byte for byte."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from forensics import distributed, pipeline
from forensics.cli import cli
from forensics.report.render import jsonout

from conftest import DATA, SAMPLES

# Many formats, several runs and directories, a run-metadata-free mix of good and bad files.
MIXED = [DATA / "capture", DATA / "tau2", DATA / "realdata", SAMPLES]


def _scan_json(tmp_path: Path, name: str, *args: str) -> tuple[int, str]:
    out = tmp_path / f"{name}.json"
    done = CliRunner().invoke(cli, ["scan", *args, "--no-report", "--json", str(out)])
    assert done.exit_code in (0, 1), done.output
    return done.exit_code, out.read_text()


def _serial(calls: list[int]) -> distributed.Runner:
    """Shards one after the other in this process, counting the runner's calls."""
    inner = distributed.processes(1)

    def run(shards, out, rules_dirs, settings):  # type: ignore[no-untyped-def]
        calls.append(len(shards))
        return inner(shards, out, rules_dirs, settings)

    return run


def test_workers_give_the_one_process_outputs(tmp_path):
    paths = [str(p) for p in MIXED]
    one = _scan_json(tmp_path, "one", *paths)
    two = _scan_json(tmp_path, "two", *paths, "--workers", "2")
    assert two == one
    summary = json.loads(one[1])["summary"]
    assert summary["files"] > 20 and summary["findings"] > 50


# Many more shards than files per run: benchmarks/distributed.py --shards 40 (slow, not here).
@pytest.mark.parametrize("shards", [3, 7])
def test_any_cut_of_the_file_list_reads_the_same(shards, tmp_path, scan_of):
    # sample_logs' log, results files and capture (and fixtures copied from one another) hold
    # the same episodes: shards that split them are read again together, as fusion needs.
    paths = [str(p) for p in MIXED]
    expected = jsonout.render(scan_of(*paths).report())  # the one-process scan
    calls: list[int] = []
    got = distributed.scan(paths, runner=_serial(calls), shards=shards)
    assert jsonout.render(got.report()) == expected
    assert calls[0] >= min(shards, 10)  # whole files, of about equal bytes


def test_a_run_split_over_shards_is_read_together(tmp_path):
    # Two files named alike are one run (run id = file stem): trial numbers and ids run on
    # across them, so they must be read in one shard.
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
    capture = DATA / "capture" / "vllm_agent_loop.jsonl"
    shutil.copy(capture, tmp_path / "a" / "loop.jsonl")
    shutil.copy(capture, tmp_path / "b" / "loop.jsonl")
    shutil.copy(capture, tmp_path / "c" / "other.jsonl")
    paths = [str(tmp_path / f) for f in ("a", "b", "c")]
    local = pipeline.scan(paths)
    trials = local.trajectories.group_by("source_path").agg(pl.col("trial").min()).sort("trial")
    assert trials["trial"].to_list() == [0, 0, 3]  # b's trials follow a's: one run
    calls: list[int] = []
    got = distributed.scan(paths, runner=_serial(calls), shards=3)
    assert calls == [3, 1]  # three shards, then a and b again as one
    assert jsonout.render(got.report()) == jsonout.render(local.report())


def test_a_sidecar_labels_its_directory_across_shards(tmp_path):
    frustrated = tmp_path / "results" / "frustrated"
    frustrated.mkdir(parents=True)
    shutil.copy(SAMPLES / "tau_bench_results_frustrated.json", frustrated / "a.json")
    shutil.copy(SAMPLES / "tau_bench_results_truncated.json", frustrated / "b.json")
    (frustrated / "z_summary.json").write_text('{"variant": "frustrated", "status": "done"}')
    paths = [str(tmp_path / "results")]
    local = pipeline.scan(paths)
    assert set(local.trajectories["variant"].to_list()) == {"frustrated"}
    calls: list[int] = []
    got = distributed.scan(paths, runner=_serial(calls), shards=3)
    assert calls == [3, 1]
    assert jsonout.render(got.report()) == jsonout.render(local.report())


def test_nothing_to_read_but_unreadable_entries_reads_as_one_process(tmp_path):
    # A named FIFO is rejected by the walk, never read: no file is left for any shard.
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    local = pipeline.scan([str(pipe)])
    assert [r["reason"] for r in local.report()["rejects"]] != []
    calls: list[int] = []
    got = distributed.scan([str(pipe)], runner=_serial(calls), shards=2)
    assert calls == [0]
    assert jsonout.render(got.report()) == jsonout.render(local.report())


def test_shards_are_parquet_partitioned_by_run(tmp_path):
    shards = tmp_path / "shards"
    # Two folders that share no episode (sample_logs would: its control is a realdata record,
    # so fusion reads them in one shard).
    paths = [str(DATA / "realdata"), str(DATA / "capture")]
    got = distributed.scan(paths, runner=distributed.processes(1), shards=2, shard_dir=str(shards))
    runs = sorted(p.name for p in (shards / "turns").iterdir())
    assert len(runs) == got.trajectories["run_id"].n_unique()
    assert all(r.startswith("run=") for r in runs)
    written = {p.name for p in (shards / "turns").glob("*/*.parquet")}
    assert written == {"shard-00000-0.parquet", "shard-00001-0.parquet"}
    import duckdb

    turns = duckdb.sql(
        f"select count(*) from read_parquet('{shards}/turns/*/*.parquet', hive_partitioning=true)"
    ).fetchall()
    assert turns == [(got.turns.height,)]


def test_ray_on_a_bucket(tmp_path, monkeypatch):
    """A local Ray instance reads a run from an S3 endpoint (moto's server) and writes its
    shards there; the same files scanned locally and on Ray give the same --json."""
    ray = pytest.importorskip("ray")
    server_mod = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    try:
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="runs")
        local = tmp_path / "in"
        shutil.copytree(DATA / "realdata", local / "realdata")
        shutil.copytree(DATA / "capture", local / "capture", ignore=shutil.ignore_patterns("*.py"))
        for path in sorted(local.rglob("*")):
            if path.is_file() and not path.name.endswith(".md"):
                s3.upload_file(str(path), "runs", f"in/{path.relative_to(local)}")
        (local / "capture" / "README.md").unlink()
        (local / "realdata" / "README.md").unlink()
        one = _scan_json(tmp_path, "one", str(local))
        on_ray = _scan_json(tmp_path, "ray", str(local), "--ray", "local", "--workers", "3")
        assert on_ray == one
        bucket = _scan_json(
            tmp_path,
            "bucket",
            "s3://runs/in",
            "--ray",
            "local",
            "--workers",
            "3",
            "--shard-dir",
            "s3://runs/shards",
        )
        assert bucket[0] == one[0]
        assert bucket[1] == one[1].replace(json.dumps(str(local))[1:-1], "s3://runs/in")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="runs", Prefix="shards/")["Contents"]]
        assert any(k.startswith("shards/turns/run=") for k in keys)
        assert any(k.startswith("shards/findings/run=") for k in keys)
    finally:
        ray.shutdown()
        server.stop()
        for key in env:
            os.environ.pop(key, None)
