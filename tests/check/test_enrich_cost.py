"""Enrichment skips work no reader uses (issue 23), without changing what readers see.

The markup search runs only on texts its combined prefilter matches: the prefilter must never
turn away a text one of the patterns matches. The repetition measures are computed for agent and
user-simulator turns only, the turns think-loop and repetition-to-cap read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_accuracy_signals import MARKUP, NOT_MARKUP, VARIANTS

from forensics import ingest, linear, markers, schema
from forensics.check import enrich

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
PATTERNS = [m.pattern for m in markers.TOOL_MARKUP]
MARKUP_CHARS = '<|>{}[]"` \n:=_tool_callfunsTOLCAS▁｜'


def _prefilter(texts: list[str]) -> list[bool]:
    return pl.Series(texts, dtype=pl.String).str.contains(enrich.MARKUP_PREFILTER).to_list()


def _search(texts: list[str]) -> list[str | None]:
    """The ordered search of every pattern, as enrich ran it on every text before the prefilter."""
    frame = pl.DataFrame({"t": pl.Series(texts, dtype=pl.String)})
    return frame.select(enrich._markup_format(pl.col("t")).alias("t"))["t"].to_list()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_prefilter_keeps_every_text_a_markup_pattern_matches(data):
    # Strings each pattern matches (somewhere, with text around it where its anchors allow),
    # drawn from the patterns themselves: the prefilter must take every one.
    pattern = data.draw(st.sampled_from(PATTERNS))
    text = data.draw(st.from_regex(pattern, fullmatch=False))
    # Python's \s also takes \x1c-\x1f, the Rust engine enrich runs the patterns in does not:
    # the texts that count are those the pattern matches there.
    assume(pl.Series([text]).str.contains(pattern).item())
    assert _prefilter([text]) == [True]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(MARKUP_CHARS)), max_size=60))
def test_prefilter_never_skips_what_the_search_names(text):
    # Near-miss texts built from the markup's own characters: whatever the search names, the
    # prefilter passed.
    if _search([text]) != [None]:
        assert _prefilter([text]) == [True]


def test_prefilter_takes_the_catalogue_examples_and_skips_prose():
    examples = [*MARKUP.values(), *VARIANTS.values()]
    assert all(_prefilter(examples))
    prose = ["Your order #W123 was delivered.", "Let me check that for you.", "a < b and c > d"]
    assert _prefilter(prose) == [False] * len(prose)
    # Prose that names a tag may pass the prefilter: the search then says it is no markup.
    assert _search(NOT_MARKUP) == [None] * len(NOT_MARKUP)


def _enriched(rows: list[dict[str, Any]]) -> pl.DataFrame:
    full = []
    for index, row in enumerate(rows):
        r: dict[str, Any] = dict.fromkeys(schema.RAW_TURNS.names)
        r.update(trajectory_id="t", turn_index=index, tool_calls=[])
        r.update(row)
        full.append(r)
    return enrich.enrich(pa.Table.from_pylist(full, schema=schema.RAW_TURNS))


LOOP = "I will check the order status again now. " * 40


def test_repetition_measures_are_computed_for_agent_and_user_simulator_turns_only():
    roles = [
        ("system", "system"),
        ("user", "user_sim"),
        ("assistant", "agent"),
        ("tool", "env"),
        ("user", "user_sim"),
        ("assistant", "agent"),
        ("tool", "env"),
    ]
    df = _enriched([{"role": r, "actor": a, "content": LOOP} for r, a in roles])
    measured = df.select(
        "actor",
        pl.col("compression_ratio").is_not_null().alias("ratio"),
        pl.col("tail_period").is_not_null().alias("tail"),
        pl.col("prev_same_actor_similarity").alias("similarity"),
        pl.col("prev_same_actor_containment").alias("containment"),
    ).rows()
    assert measured == [
        ("system", False, False, None, None),
        ("user_sim", True, True, None, None),  # the first turn of its actor
        ("agent", True, True, None, None),
        ("env", False, False, None, None),  # a tool result looping is no model's loop
        ("user_sim", True, True, 1.0, 1.0),
        ("agent", True, True, 1.0, 1.0),
        ("env", False, False, None, None),
    ]


def test_bigram_similarity_of_partly_shared_text():
    first = "alpha beta gamma delta epsilon zeta eta theta"
    second = "alpha beta gamma delta omega psi chi phi"
    df = _enriched(
        [
            {"role": "assistant", "actor": "agent", "content": first},
            {"role": "assistant", "actor": "agent", "content": second},
        ]
    )
    # 7 bigrams each, 3 shared (alpha beta, beta gamma, gamma delta): 3 / (7 + 7 - 3), 3 / 7
    assert df["prev_same_actor_similarity"].to_list() == [None, round(3 / 11, 3)]
    assert df["prev_same_actor_containment"].to_list() == [None, round(3 / 7, 3)]


def test_prefilter_is_one_linear_time_pattern():
    # RE2 takes it (no look-around, no back-reference): it is in the dialect whose engines,
    # RE2 and the Rust regex polars runs, answer a search in time linear in the text.
    prefilter = linear.compile(enrich.MARKUP_PREFILTER)
    assert prefilter.search("Sure.\n<tool_call>\n" + '{"name": "f", "arguments": {}}')
    assert not prefilter.search("Let me check that order for you.")


def test_enrich_of_batches_of_whole_episodes_is_enrich_of_the_whole():
    # A scan may enrich its turns a batch of whole episodes at a time (issue 23): nothing in
    # enrich may depend on other episodes.
    raw = ingest.ingest([str(SAMPLES)]).turns
    whole = enrich.enrich(raw)
    ids = sorted(set(raw.column("trajectory_id").to_pylist()))
    assert len(ids) >= 3
    batches = [set(ids[0::3]), set(ids[1::3]), set(ids[2::3])]
    frame = pl.from_arrow(raw)
    assert isinstance(frame, pl.DataFrame)
    parts = [enrich.enrich(frame.filter(pl.col("trajectory_id").is_in(b))) for b in batches]
    order = ["source_path", "trajectory_id", "turn_index"]
    assert pl.concat(parts).sort(order).equals(whole.sort(order))
