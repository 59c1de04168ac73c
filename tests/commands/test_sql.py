"""Tables out: --db, --parquet, forensics query, the Python API."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import forensics
from forensics import schema, store
from forensics.cli import cli
from forensics.diagnosis import result as result_mod

import pinned_rules
from conftest import SAMPLES
from pinned_rules import PINNED

# The sample data files (sample_logs/ also holds its README and generator, read as text logs).
SAMPLE_INPUTS = [str(SAMPLES / "output2.txt"), str(SAMPLES / "tau_bench_results_*.json")]
TABLES = ["turns", "trajectories", "findings", "rejects", "causes", "runs"]
VIEWS = ["rule_rates", "trajectory_findings", "rule_pairs"]


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def sample_scan():
    return forensics.scan(SAMPLE_INPUTS, settings=pinned_rules.settings())


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("db") / "runs.duckdb"
    res = run("scan", "--no-report", "--config", PINNED, *SAMPLE_INPUTS, "--db", str(path))
    assert res.exit_code == 1, res.output
    return path


def test_db_has_every_table_with_documented_columns_and_the_views(db, sample_scan):
    con = duckdb.connect(str(db), read_only=True)
    tables = con.sql("select table_name from duckdb_tables()").fetchall()
    assert {t for (t,) in tables} == set(TABLES)
    views = con.sql("select view_name from duckdb_views() where not internal").fetchall()
    assert {v for (v,) in views} == set(VIEWS)
    for table in TABLES:
        cols = con.sql(
            f"select column_name, comment from duckdb_columns() where table_name = '{table}' "
            "order by column_index"
        ).fetchall()
        assert [c for c, _ in cols] == schema.TABLES[table].names
        assert all(comment for _, comment in cols), table
    counts = {t: con.sql(f"select count(*) from {t}").fetchall()[0][0] for t in TABLES}
    assert counts == {
        "turns": sample_scan.turns.height,
        "trajectories": 4,  # each episode once: the results files are fused into the log
        "findings": 44,
        "rejects": 1,
        "causes": 2,
        "runs": 2,
    }
    assert con.sql("select count(*) from findings").fetchall() == [(len(sample_scan.findings),)]
    doc = con.sql("select comment from duckdb_views() where view_name = 'rule_rates'").fetchall()
    assert doc == [(result_mod.VIEWS["rule_rates"][0],)]
    con.close()


def test_db_tables_keep_nested_columns(db):
    con = duckdb.connect(str(db), read_only=True)
    fixes = con.sql(
        "select cause, fixes[1].action, rules, len(trajectory_ids) from causes order by rank"
    ).fetchall()
    assert fixes[0][0] == "truncated-output"
    assert fixes[0][1] == "Raise the output-token limit (max_tokens) of the agent"
    assert fixes[0][2] == ["unclosed-think"]
    calls = con.sql(
        "select count(*) from turns, unnest(tool_calls) as t(call) where call.name is not null"
    ).fetchall()[0][0]
    assert calls > 0
    con.close()


def test_runs_table(db):
    rows = (
        duckdb.connect(str(db), read_only=True)
        .sql(
            "select run_id, agent_model, variant, domain, started, trajectories, findings, "
            "trajectories_with_findings, mean_reward, len(sources) from runs order by run_id"
        )
        .fetchall()
    )
    assert rows == [
        (
            "output2.txt#run1",
            "gpt-4.1-mini",
            "control",
            "retail",
            "11-18 10:15:02",
            1,
            0,
            0,
            1.0,
            2,
        ),
        (
            "output2.txt#run2",
            "Qwen/Qwen3-0.6B",
            "frustrated",
            "retail",
            "11-18 11:33:44",
            *(3, 44, 3, 0.0, 3),
        ),
    ]


def test_views(db):
    con = duckdb.connect(str(db), read_only=True)
    rates = con.sql(
        "select agent_model, variant, trajectories, trajectories_with_rule, rate "
        "from rule_rates where rule = 'unclosed-think' order by all"
    ).fetchall()
    assert rates == [
        ("Qwen/Qwen3-0.6B", "frustrated", 3, 3, 1.0),
        ("gpt-4.1-mini", "control", 1, 0, 0.0),
    ]
    worst = con.sql(
        "select trajectory_id, findings, high_findings, rules from trajectory_findings "
        "where trajectory_id like 'output2%' order by trajectory_id"
    ).fetchall()
    assert worst[0] == ("output2.txt#run1/task-5/trial-0", 0, 0, [])
    assert worst[3] == (
        "output2.txt#run2/task-48/trial-0",
        19,
        8,
        ["reasoning-leak", "think-loop", "unclosed-think"],
    )
    assert con.sql("select * from rule_pairs").fetchall()[0] == ("reasoning-leak", "think-loop", 3)
    con.close()


def test_db_is_replaced_not_appended(db, tmp_path):
    path = tmp_path / "x.duckdb"
    run("scan", "--no-report", "--config", PINNED, *SAMPLE_INPUTS, "--db", str(path))
    run("scan", "--no-report", "--config", PINNED, str(SAMPLES / "output2.txt"), "--db", str(path))
    con = duckdb.connect(str(path), read_only=True)
    assert con.sql("select count(*) from trajectories").fetchall() == [(4,)]
    con.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.duckdb"]


def test_query_table_csv_json(db):
    sql = "select rule, count(*) as n from findings group by rule order by rule"
    res = run("query", "--db", str(db), sql)
    assert res.exit_code == 0
    assert res.output == (
        "rule             n\n"
        "--------------  --\n"
        "reasoning-leak  21\n"
        "think-loop       5\n"
        "unclosed-think  18\n"
        "(3 rows)\n"
    )
    res = run("query", "--db", str(db), sql, "--format", "csv")
    assert list(csv.reader(io.StringIO(res.output))) == [
        ["rule", "n"],
        ["reasoning-leak", "21"],
        ["think-loop", "5"],
        ["unclosed-think", "18"],
    ]
    res = run(
        "query",
        "--db",
        str(db),
        "select cause, rules from causes order by rank",
        "--format",
        "json",
    )
    assert json.loads(res.output) == [
        {"cause": "truncated-output", "rules": ["unclosed-think"]},
        {"cause": "reasoning-in-content", "rules": ["reasoning-leak"]},
    ]


def test_query_table_cuts_long_cells_and_keeps_rows_on_one_line(db):
    res = run(
        "query", "--db", str(db), "select content from turns where content_chars > 500 limit 2"
    )
    lines = res.output.splitlines()
    assert len(lines) == 5 and lines[-1] == "(2 rows)"
    assert all(len(line) <= 60 for line in lines[2:4]) and lines[2].endswith("…")


def test_query_errors_exit_2(db, tmp_path):
    res = run("query", "--db", str(db), "select nope from findings")
    assert res.exit_code == 2 and "query failed" in res.output
    res = run("query", "--db", str(tmp_path / "none.duckdb"), "select 1")
    assert res.exit_code == 2 and "no such database" in res.output
    # read-only: a query can not change the database
    res = run("query", "--db", str(db), "drop table findings")
    assert res.exit_code == 2
    assert run("query", "--db", str(db), "select count(*) from findings").exit_code == 0
    assert run("query", "select 1").exit_code == 2  # --db is required


def test_unwritable_db_or_parquet_is_a_usage_error(tmp_path):
    (tmp_path / "blocker").write_text("a file, not a directory")
    base = ["scan", "--no-report", "--config", PINNED, str(SAMPLES / "output2.txt")]
    res = run(*base, "--db", str(tmp_path / "blocker" / "x.duckdb"))
    assert res.exit_code == 2 and "cannot write the database" in res.output
    res = run(*base, "--parquet", str(tmp_path / "blocker" / "pq"))
    assert res.exit_code == 2 and "cannot write Parquet" in res.output


def test_parquet_one_file_per_table(tmp_path):
    out = tmp_path / "pq"
    res = run("scan", "--no-report", "--config", PINNED, *SAMPLE_INPUTS, "--parquet", str(out))
    assert res.exit_code == 1
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.parquet" for t in TABLES)
    for t in TABLES:
        assert pq.read_schema(out / f"{t}.parquet").names == schema.TABLES[t].names
    assert pq.read_metadata(out / "findings.parquet").num_rows == 44
    doc = pq.read_schema(out / "turns.parquet").field("actor").metadata[b"doc"].decode()
    assert doc.startswith("Who produced it")


def test_parquet_partitioned_by_run_keeps_run_id_and_all_rows(tmp_path, sample_scan):
    out = tmp_path / "pq"
    store.write_parquet(sample_scan, out, partition=True)
    runs = sorted(p.name for p in (out / "turns").iterdir())
    assert runs == ["run=output2.txt%23run1", "run=output2.txt%23run2"]
    assert (out / "rejects.parquet").is_file() and not (out / "turns.parquet").exists()
    got = duckdb.sql(
        f"select run_id, count(*) from read_parquet('{out}/findings/*/*.parquet') "
        "group by run_id order by run_id"
    ).fetchall()
    assert got == [("output2.txt#run2", 44)]
    total = duckdb.sql(f"select count(*) from read_parquet('{out}/turns/*/*.parquet')").fetchall()
    assert total == [(sample_scan.turns.height,)]
    # rewriting unpartitioned replaces the partition directories
    store.write_parquet(sample_scan, out, partition=False)
    assert not (out / "turns").exists() and (out / "turns.parquet").is_file()


def test_parquet_partitions_automatically_from_many_runs(tmp_path, sample_scan, monkeypatch):
    monkeypatch.setattr(store, "PARTITION_MIN_RUNS", 2)
    store.write_parquet(sample_scan, tmp_path / "a")
    assert (tmp_path / "a" / "turns").is_dir()
    monkeypatch.setattr(store, "PARTITION_MIN_RUNS", 3)
    store.write_parquet(sample_scan, tmp_path / "b")
    assert (tmp_path / "b" / "turns.parquet").is_file()


def test_writes_stream_in_slices(tmp_path, sample_scan):
    """Each slice of `rows` rows is converted and written on its own: one row group each."""
    out = tmp_path / "pq"
    store.write_parquet(sample_scan, out, rows=16)
    meta = pq.read_metadata(out / "turns.parquet")
    assert meta.num_rows == sample_scan.turns.height
    assert meta.num_row_groups == -(-sample_scan.turns.height // 16)
    store.write_duckdb(sample_scan, tmp_path / "x.duckdb", rows=16)
    con = duckdb.connect(str(tmp_path / "x.duckdb"), read_only=True)
    assert con.sql("select count(*) from turns").fetchall() == [(sample_scan.turns.height,)]
    con.close()


def test_parquet_is_byte_identical_across_reruns(tmp_path, sample_scan):
    store.write_parquet(sample_scan, tmp_path / "a")
    store.write_parquet(
        forensics.scan(SAMPLE_INPUTS, settings=pinned_rules.settings()), tmp_path / "b"
    )
    for t in TABLES:
        assert (tmp_path / "a" / f"{t}.parquet").read_bytes() == (
            tmp_path / "b" / f"{t}.parquet"
        ).read_bytes(), t


def test_python_api_sql_returns_a_relation(sample_scan):
    rel = sample_scan.sql("select rule, count(*) as n from findings group by rule order by rule")
    assert isinstance(rel, duckdb.DuckDBPyRelation)
    assert rel.fetchall() == [("reasoning-leak", 21), ("think-loop", 5), ("unclosed-think", 18)]
    frame = sample_scan.sql("select * from causes order by rank").pl()
    assert isinstance(frame, pl.DataFrame)
    assert frame["cause"].to_list() == ["truncated-output", "reasoning-in-content"]
    # a relation stays usable after the call that made it returned, and after others
    kept = sample_scan.sql("select count(*) from turns")
    sample_scan.sql("select 1").fetchall()
    assert kept.fetchall() == [(sample_scan.turns.height,)]
    assert sample_scan.sql("select count(*) from rule_pairs").fetchall() == [(3,)]


def test_python_api_connect():
    con = forensics.connect([str(SAMPLES / "output2.txt")], settings=pinned_rules.settings())
    assert isinstance(con, duckdb.DuckDBPyConnection)
    assert con.sql("select count(*) from trajectories").fetchall() == [(4,)]
    assert con.table("findings").pl().height == 44


def test_schema_command_lists_new_tables_and_views():
    res = run("schema")
    assert res.exit_code == 0
    assert "\ncauses\n" in res.output and "\nruns\n" in res.output
    for view in VIEWS:
        assert f"  {view}  " in res.output


def test_two_scans_writing_the_same_db_and_parquet_never_collide(tmp_path):
    """Each write builds under a unique name and is renamed into place: concurrent writers
    both succeed, the target is whole, and no temporary file is left behind."""
    from concurrent.futures import ThreadPoolExecutor

    result = forensics.scan(SAMPLE_INPUTS, settings=pinned_rules.settings())
    target, pq_dir = tmp_path / "x.duckdb", tmp_path / "pq"
    with ThreadPoolExecutor(2) as pool:
        for job in [pool.submit(store.write_duckdb, result, target) for _ in range(2)]:
            job.result()
        for job in [pool.submit(store.write_parquet, result, pq_dir) for _ in range(2)]:
            job.result()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pq", "x.duckdb"]
    assert sorted(p.name for p in pq_dir.iterdir()) == sorted(f"{t}.parquet" for t in TABLES)
    con = duckdb.connect(str(target), read_only=True)
    assert con.sql("select count(*) from findings").fetchall() == [(result.findings.height,)]
    con.close()
