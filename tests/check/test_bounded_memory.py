"""Enrichment and collection work in slices of rows to bound memory (issue 14): the tables
they produce must not depend on where the slices fall."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from forensics import ingest
from forensics.check import enrich
from forensics.ingest import records
from forensics.redact import redact_table

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


@pytest.fixture(scope="module")
def raw_turns():
    turns = ingest.ingest([str(SAMPLES)]).turns
    assert turns.num_rows > 50  # enough rows for many small slices
    return turns


def test_enrich_is_the_same_whatever_the_slice_size(raw_turns, monkeypatch):
    whole = enrich.enrich(raw_turns)
    monkeypatch.setattr(enrich, "SLICE_ROWS", 7)
    sliced = enrich.enrich(raw_turns)
    assert sliced.equals(whole)
    # The comparison with an earlier turn reaches across slices: some turns have one.
    assert sliced["prev_same_actor_similarity"].is_not_null().sum() > 0


def test_enrich_of_no_turns_has_every_column(raw_turns):
    empty = enrich.enrich(raw_turns.slice(0, 0))
    assert empty.height == 0
    assert empty.columns == enrich.enrich(raw_turns.slice(0, 1)).columns


def test_redaction_of_a_table_in_many_chunks_finds_each_secret():
    calls = pa.list_(pa.struct([("name", pa.string()), ("arguments", pa.string())]))
    table_schema = pa.schema([("content", pa.string()), ("tool_calls", calls)])
    secret = "sk-abcdefghijklmnop1234"
    rows = [{"content": f"turn {i}", "tool_calls": [{"name": "f", "arguments": "{}"}]}
            for i in range(30)]  # fmt: skip
    rows[11]["content"] = f"my key is {secret}"
    rows[25]["tool_calls"] = [{"name": "login", "arguments": f'{{"key": "{secret}"}}'}]
    batches = [pa.RecordBatch.from_pylist(rows[i : i + 4], schema=table_schema)
               for i in range(0, 30, 4)]  # fmt: skip
    chunked = pa.Table.from_batches(batches)
    assert chunked.column("content").num_chunks == 8
    redacted = redact_table(chunked, ["content", "tool_calls"])
    assert redacted.equals(redact_table(chunked.combine_chunks(), ["content", "tool_calls"]))
    assert secret not in str(redacted.to_pylist())
    assert redacted.slice(0, 11).equals(chunked.slice(0, 11))  # clean chunks pass unchanged


def test_collector_batches_make_the_same_tables(monkeypatch):
    log = str(SAMPLES / "output2.txt")  # one file: fusion leaves its table as collected
    whole = ingest.ingest([log]).turns
    monkeypatch.setattr(records, "BATCH_ROWS", 5)
    batched = ingest.ingest([log]).turns
    assert batched.column("content").num_chunks > 1  # one batch per episode here
    assert batched.equals(whole)
