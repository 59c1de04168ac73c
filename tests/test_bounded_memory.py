"""Enrichment and collection work in slices of rows to bound memory (issue 14): the tables
they produce must not depend on where the slices fall."""

from __future__ import annotations

from pathlib import Path

import pytest

from forensics import enrich, ingest

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


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
