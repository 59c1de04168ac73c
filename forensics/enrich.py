"""Derived columns of the turn table, computed vectorised with polars.

Rules stay simple SQL because the signals they need are columns: reasoning markup counts, the
text a user would see, tool-call counts, repetition measures.
"""

from __future__ import annotations

import zlib

import polars as pl
import pyarrow as pa

from forensics import markers, schema
from forensics.redact import redact_expr

# Repetition measures need enough text to be reliable (failure-catalogue §4.2): compression
# headers dominate short strings, and a few words say nothing about similarity.
MIN_COMPRESSION_CHARS = 300
COMPRESSION_WINDOW = 2000
MIN_SIMILARITY_WORDS = 8
SIMILARITY_WINDOW = 4000


def _compression_ratio(texts: pl.Series) -> pl.Series:
    out: list[float | None] = []
    for text in texts:
        if text is None or len(text) < MIN_COMPRESSION_CHARS:
            out.append(None)
            continue
        raw = text[-COMPRESSION_WINDOW:].encode()
        out.append(round(len(raw) / len(zlib.compress(raw, 9)), 3))
    return pl.Series(out, dtype=pl.Float64)


def _redacted(df: pl.DataFrame) -> pl.DataFrame:
    args = pl.element().struct.field("arguments")
    return df.with_columns(
        redact_expr(pl.col("content")),
        redact_expr(pl.col("reasoning")),
        redact_expr(pl.col("error")),
        pl.col("tool_calls").list.eval(
            pl.element().struct.with_fields(redact_expr(args).alias("arguments"))
        ),
    )


def enrich(turns: pa.Table) -> pl.DataFrame:
    """The turn table with secrets redacted and the derived columns of schema.DERIVED_COLUMNS."""
    df = _redacted(pl.from_arrow(turns))  # type: ignore[arg-type]
    content = pl.col("content").fill_null("")
    visible = (
        content.str.replace_all(markers.CLOSED_BLOCK_RE, "")
        .str.replace_all(markers.UNCLOSED_TAIL_RE, "")
        .str.replace(markers.LEADING_TO_CLOSER_RE, "")
    )
    whole = pl.concat_str([pl.col("reasoning").fill_null(""), content], separator="\n")
    words = whole.str.slice(0, SIMILARITY_WINDOW).str.to_lowercase().str.extract_all(r"\w+")
    df = df.with_columns(
        (pl.col("trajectory_id") + "#" + pl.col("turn_index").cast(pl.String)).alias("turn_key"),
        content.str.count_matches(markers.OPEN_RE).cast(pl.Int64).alias("think_open_count"),
        content.str.count_matches(markers.CLOSE_RE).cast(pl.Int64).alias("think_close_count"),
        visible.alias("visible_text"),
        visible.str.strip_chars().str.len_chars().cast(pl.Int64).alias("visible_chars"),
        content.str.len_chars().cast(pl.Int64).alias("content_chars"),
        pl.col("tool_calls").list.len().fill_null(0).cast(pl.Int64).alias("tool_call_count"),
        whole.map_batches(_compression_ratio, return_dtype=pl.Float64).alias("compression_ratio"),
        words.alias("_words"),
    )
    bigrams = (
        pl.col("_words")
        .list.eval(pl.element() + " " + pl.element().shift(-1))
        .list.drop_nulls()
        .list.unique()
    )
    previous = pl.col("_bigrams").shift(1).over(["trajectory_id", "actor"], order_by="turn_index")
    df = df.with_columns(
        pl.when(pl.col("_words").list.len() >= MIN_SIMILARITY_WORDS)
        .then(bigrams)
        .otherwise(None)
        .alias("_bigrams")
    )
    similarity = (
        pl.col("_bigrams").list.set_intersection(previous).list.len()
        / pl.col("_bigrams").list.set_union(previous).list.len()
    )
    df = df.with_columns(
        (pl.col("tool_call_count") > 0).alias("has_tool_calls"),
        (
            (pl.col("reasoning").fill_null("").str.strip_chars().str.len_chars() > 0)
            | (pl.col("think_open_count") + pl.col("think_close_count") > 0)
        ).alias("has_reasoning"),
        pl.when(pl.col("_bigrams").is_not_null() & previous.is_not_null())
        .then(similarity.round(3))
        .otherwise(None)
        .cast(pl.Float64)
        .alias("prev_same_actor_similarity"),
    )
    return df.select(schema.TURNS.names)
