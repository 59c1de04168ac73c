"""Derived columns of the turn table, computed vectorised with polars.

Rules stay simple SQL because the signals they need are columns: reasoning markup counts, the
text a user would see, tool-call counts, repetition measures.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import polars as pl
import pyarrow as pa

from forensics import interrupts, markers, schema
from forensics.check import markupcalls, textcalls

if TYPE_CHECKING:
    from polars.expr.whenthen import ChainedThen, Then

# Repetition measures need enough text to be reliable (failure-catalogue §4.2): compression
# headers dominate short strings, and a few words say nothing about similarity.
MIN_COMPRESSION_CHARS = 300
COMPRESSION_WINDOW = 2000
MIN_SIMILARITY_WORDS = 8
SIMILARITY_WINDOW = 4000
# Exact tail loops (catalogue §4.2): a unit of up to 512 chars repeated at least 3 times back to
# back at the end of the text, covering at least 200 chars (shorter runs occur in normal lists).
TAIL_MIN_REPEATS = 3
TAIL_MIN_CHARS = 200
TAIL_MAX_PERIOD = 512
TAIL_PROBE = 16
TAIL_MAX_CANDIDATES = 32
# The actors whose turns the repetition measures are computed for (the rules that read them
# look at no others): compression_ratio, tail_*, prev_same_actor_* are NULL for other turns.
REPETITION_ACTORS = ["agent", "user_sim"]
# An odd 64-bit constant (2^64 / golden ratio): first word's hash x it + second word's hash
# spreads the pairs over all 64 bits.
PAIR_MULTIPLIER = 0x9E3779B97F4A7C15
# Hex and binary literals (runs of 32+ hex digits): data, not text that can loop.
DATA_LITERAL_RE = r"[0-9A-Fa-f]{32,}"


def _compression_ratio(texts: pl.Series) -> pl.Series:
    out: list[float | None] = []
    # Logs repeat whole texts (a run's system prompt in every episode, tool outputs, canned
    # replies): each distinct window is compressed once.
    seen: dict[str, float] = {}
    for text in texts:
        if text is None or len(text) < MIN_COMPRESSION_CHARS:
            out.append(None)
            continue
        window = text[-COMPRESSION_WINDOW:]
        ratio = seen.get(window)
        if ratio is None:
            raw = window.encode()
            ratio = seen[window] = round(len(raw) / len(zlib.compress(raw, 9)), 3)
        out.append(ratio)
    return pl.Series(out, dtype=pl.Float64)


def _tail_loop(text: str) -> tuple[int, int] | None:
    """(period, chars) of an exact repetition at the end of `text`, or None (catalogue §4.2).

    Candidate periods come from earlier occurrences of the last TAIL_PROBE characters (a handful
    of C-speed rfind calls; normal prose has none), so the cost stays linear in the window.
    """
    window = text[-COMPRESSION_WINDOW:]
    tail = window.rstrip()
    n = len(tail)
    if n < TAIL_MIN_CHARS:
        return None
    # The last copy may have lost only its trailing whitespace to the strip: it still counts.
    stripped = len(window) - n
    probe = tail[-TAIL_PROBE:]

    def periodic(length: int, p: int) -> bool:
        return tail[n - length + p :] == tail[n - length : n - p]

    end = n - 1
    for _ in range(TAIL_MAX_CANDIDATES):
        start = tail.rfind(probe, 0, end)
        if start < 0:
            return None
        p = n - TAIL_PROBE - start
        if p > TAIL_MAX_PERIOD:
            return None
        shortest = max(TAIL_MIN_REPEATS * p - min(stripped, p - 1), TAIL_MIN_CHARS)
        if shortest <= n and periodic(shortest, p):
            lo, hi = shortest, n  # the periodic tail only grows while it stays periodic
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if periodic(mid, p) else (lo, mid - 1)
            return p, lo
        end = start + TAIL_PROBE - 1
    return None


def _tail_loops(texts: pl.Series) -> pl.Series:
    found = [None if t is None else _tail_loop(t) for t in texts]
    return pl.Series(
        [{"period": f[0], "chars": f[1]} if f else None for f in found],
        dtype=pl.Struct({"period": pl.Int64, "chars": pl.Int64}),
    )


def _markup_format(text: pl.Expr) -> pl.Expr:
    """The first tool-call markup format of markers.TOOL_MARKUP found in `text`, else NULL."""
    chain: Then | ChainedThen | None = None
    for markup in markers.TOOL_MARKUP:
        hit = text.str.contains(markup.pattern)
        if markup.unless:
            hit = hit & ~text.str.contains(markup.unless)
        chain = (pl.when(hit) if chain is None else chain.when(hit)).then(pl.lit(markup.vllm))
    assert chain is not None
    return chain.otherwise(pl.lit(None, dtype=pl.String))


def _scoped(pattern: str) -> str:
    """`pattern` as a group that keeps its leading flags (`(?s)x` -> `(?s:x)`) to itself."""
    flags = re.match(r"\(\?([a-zA-Z]+)\)", pattern)
    if flags is None:
        return f"(?:{pattern})"
    return f"(?{flags.group(1)}:{pattern[flags.end() :]})"


# Every markup pattern in one alternation: a text it does not match matches none of them (an
# `unless` only takes matches away), so the ordered search (_markup_format, 36 patterns in as
# many passes) runs only on the few texts it matches. Polars runs it, in the same Rust regex
# dialect as the patterns themselves and as linear in the text.
MARKUP_PREFILTER = "|".join(_scoped(m.pattern) for m in markers.TOOL_MARKUP)


def _only(rows: pl.Expr, text: pl.Expr) -> pl.Expr:
    """`text` on `rows` and "" elsewhere, for signals of some rows only: the patterns then skip
    text whose result would be discarded (a NULL does not spare the search, "" does)."""
    return pl.when(rows).then(text).otherwise(pl.lit(""))


def _tool_markup(df: pl.DataFrame) -> pl.DataFrame:
    """tool_markup_format / tool_markup_in of assistant turns: visible text first, then the
    reasoning (field or inline block), then the tool names."""
    assistant = pl.col("role") == "assistant"
    # Inline blocks need a reasoning tag: untagged content gives the same "" and NULL below.
    tagged = pl.col("think_open_count") + pl.col("think_close_count") > 0
    content = _only(assistant & tagged, pl.col("content").fill_null(""))
    inline_reasoning = pl.concat_str(
        [
            content.str.extract_all(
                f"{markers.CLOSED_BLOCK_RE}|{markers.UNCLOSED_TAIL_RE}"
            ).list.join("\n"),
            pl.when(pl.col("think_open_count") == 0)
            .then(content.str.extract(f"({markers.LEADING_TO_CLOSER_RE})", 1))
            .otherwise(None),
        ],
        separator="\n",
        ignore_nulls=True,
    )
    names = pl.col("tool_calls").list.eval(pl.element().struct.field("name")).list.join("\n")
    # The three texts once each (the ordered search reads each of them 36 times), and the rows
    # where one of them may hold markup: the only rows the search runs on.
    reasoning = pl.concat_str(
        [pl.col("reasoning"), inline_reasoning], separator="\n", ignore_nulls=True
    )
    texts = df.select(
        _only(assistant, pl.col("visible_text")).alias("_content"),
        pl.when(assistant).then(reasoning).alias("_reasoning"),
        pl.when(assistant).then(names).alias("_names"),
    )
    maybe = (
        pl.col("_content").str.contains(MARKUP_PREFILTER)
        | pl.col("_reasoning").str.contains(MARKUP_PREFILTER)
        | pl.col("_names").str.contains(markers.TOOL_NAME_MARKUP)
    ).fill_null(False)
    rows = texts.select(pl.arg_where(maybe).alias("_row"))["_row"]
    picked = texts[rows].with_columns(df["model"].gather(rows))
    in_names = (
        pl.when(pl.col("_names").str.contains(markers.TOOL_NAME_MARKUP))
        .then(pl.coalesce(_markup_format(pl.col("_names")), pl.lit(markers.TOOL_NAME_PARSER)))
        .otherwise(None)
    )
    picked = picked.with_columns(
        _markup_format(pl.col("_content")).alias("_in_content"),
        _markup_format(pl.col("_reasoning")).alias("_in_reasoning"),
        in_names.alias("_in_names"),
    )
    found = pl.coalesce("_in_content", "_in_reasoning", "_in_names")
    model = pl.col("model").fill_null("")
    for detected, pattern, parser in markers.MODEL_PARSER_OVERRIDES:
        found = (
            pl.when((found == detected) & model.str.contains(pattern))
            .then(pl.lit(parser))
            .otherwise(found)
        )
    where = (
        pl.when(pl.col("_in_content").is_not_null())
        .then(pl.lit("content"))
        .when(pl.col("_in_reasoning").is_not_null())
        .then(pl.lit("reasoning"))
        .when(pl.col("_in_names").is_not_null())
        .then(pl.lit("tool_name"))
    )
    parsed = picked.select(
        pl.Series("_row", rows),
        found.cast(pl.String).alias("tool_markup_format"),
        where.cast(pl.String).alias("tool_markup_in"),
    )
    return (
        df.with_row_index("_row")
        .join(parsed, on="_row", how="left", maintain_order="left")
        .drop("_row")
    )


def _refused() -> pl.Expr:
    """A refusal text, or a finish reason that withheld the answer (content_filter, which
    every provider's blocking reason normalises to; Gemini's LANGUAGE blocks nothing)."""
    text = pl.col("refusal").fill_null("").str.strip_chars().str.len_chars() > 0
    raw = pl.col("finish_reason_raw").fill_null("").str.strip_chars().str.to_uppercase()
    blocked = (pl.col("finish_reason") == "content_filter").fill_null(False) & (raw != "LANGUAGE")
    return text | blocked


def _last_sentence(visible: pl.Expr) -> pl.Expr:
    return visible.str.strip_chars().str.extract(markers.LAST_SENTENCE_RE, 1).str.strip_chars()


def _announces_action(last: pl.Expr, transferred_before: pl.Expr) -> pl.Expr:
    """The last sentence (_last_sentence) announces an action, unconditionally."""
    announces = last.str.contains(markers.ANNOUNCEMENT_RE) | (
        last.str.contains(markers.HANDOFF_RE) & ~transferred_before
    )
    return (announces & ~last.str.contains(markers.CONDITIONAL_RE)).fill_null(False)


def _request_keys(df: pl.DataFrame) -> pl.DataFrame:
    keys = pl.col("request_keys")
    private = pl.element().str.contains(r"(?:^|\.)_")
    message = pl.element().str.starts_with(markers.MESSAGE_KEY_PREFIX)
    known = (
        pl.element()
        .str.strip_prefix(markers.MESSAGE_KEY_PREFIX)
        .is_in(sorted(markers.OPENAI_MESSAGE_KEYS))
    )
    return df.with_columns(
        keys.list.eval(pl.element().filter(private)).alias("request_private_keys"),
        keys.list.eval(pl.element().filter(message & ~known & ~private)).alias(
            "request_foreign_keys"
        ),
    )


# Rows are enriched in slices of this many: the per-row intermediates (word lists, bigram
# pairs, the texts the patterns rewrite) then exist for one slice at a time, not for the whole
# table, which bounds enrichment's memory peak to a few times the final table.
SLICE_ROWS = 16_384


def _sliced(df: pl.DataFrame, step: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.DataFrame:
    """`step` (a row-wise computation) applied to each slice of rows, the results stacked."""
    parts = [step(df.slice(i, SLICE_ROWS)) for i in range(0, max(df.height, 1), SLICE_ROWS)]
    return pl.concat(parts) if len(parts) > 1 else parts[0]


def enrich(
    turns: pa.Table | pl.DataFrame, failures: list[dict[str, Any]] | None = None
) -> pl.DataFrame:
    """The turn table with secrets redacted and the derived columns of schema.DERIVED_COLUMNS.

    Given as a polars frame, the turns are not converted again: a caller that converts them
    itself can free the Arrow table before enrichment grows its columns. A turn whose derived
    values can not be computed keeps its row (those values NULL) and adds a row to
    `failures`, in the shape of schema.REJECTS: one turn never stops the scan."""
    # from_arrow gives a Series only for an Array: a Table is a DataFrame.
    frame = turns if isinstance(turns, pl.DataFrame) else cast(pl.DataFrame, pl.from_arrow(turns))
    sink: list[dict[str, Any]] = [] if failures is None else failures
    df = _sliced(frame, lambda part: _own_signals(part, sink))
    # The two signals that compare a turn with the previous turn of the same actor: the window
    # runs once over the whole table on small columns (a row number, a flag), and each slice
    # then fetches its previous turns' bigrams by row number.
    actor = ["trajectory_id", "actor"]
    df = df.with_row_index("_row").with_columns(
        pl.col("_row").shift(1).over(actor, order_by="turn_index").alias("_previous_row"),
        pl.col("_transfers")
        .shift(1)
        .over(actor, order_by="turn_index")
        .fill_null(False)
        .alias("_transferred"),
    )
    bigrams = df.get_column("_bigrams")
    df = _sliced(df, lambda part: _compared_signals(part, bigrams))
    return df.select(schema.TURNS.names)


def _own_signals(df: pl.DataFrame, failures: list[dict[str, Any]]) -> pl.DataFrame:
    """What a turn's own text and calls say, plus `_bigrams` (its word-bigram hashes) and
    `_transfers` (it calls a transfer tool) for the comparisons with earlier turns."""
    content = pl.col("content").fill_null("")
    # Every pattern that rewrites content starts or ends at a reasoning tag: a text without one
    # is its own visible text, and only tagged texts are rewritten.
    tagged = pl.col("think_open_count") + pl.col("think_close_count") > 0
    rewritten = (
        _only(tagged, content)
        .str.replace_all(markers.CLOSED_BLOCK_RE, "")
        .str.replace_all(markers.UNCLOSED_TAIL_RE, "")
        .str.replace(markers.LEADING_TO_CLOSER_RE, "")
    )
    visible = pl.when(tagged).then(rewritten).otherwise(content)
    # The repetition measures (words, bigrams, compression, tail loops: most of enrich's cost)
    # are read by think-loop and repetition-to-cap, on agent and user-simulator turns only:
    # other turns get "" here, which gives them NULL measures for nothing.
    repeaters = pl.col("actor").is_in(REPETITION_ACTORS).fill_null(False)
    whole = _only(
        repeaters,
        pl.concat_str([pl.col("reasoning").fill_null(""), content], separator="\n"),
    )
    df = df.with_columns(
        (pl.col("trajectory_id") + "#" + pl.col("turn_index").cast(pl.String)).alias("turn_key"),
        content.str.count_matches(markers.OPEN_RE).cast(pl.Int64).alias("think_open_count"),
        content.str.count_matches(markers.CLOSE_RE).cast(pl.Int64).alias("think_close_count"),
        content.str.len_chars().cast(pl.Int64).alias("content_chars"),
        pl.col("tool_calls").list.len().fill_null(0).cast(pl.Int64).alias("tool_call_count"),
        whole.alias("_whole"),
    )
    df = df.with_columns(visible.alias("visible_text"))
    whole = pl.col("_whole")
    words = whole.str.slice(0, SIMILARITY_WINDOW).str.to_lowercase().str.extract_all(r"\w+")
    # A hex or binary literal (a registry value, a CTF payload) compresses and repeats like a
    # loop but is one word of data: the repetition measures read it as one token.
    prose = whole.str.replace_all(DATA_LITERAL_RE, "<literal>")
    # Columns, not expressions, for what several measures read: each is computed once.
    df = df.with_columns(
        words.list.eval(pl.element().hash()).alias("_hashes"), prose.alias("_prose")
    )
    # Word bigrams as 64-bit hashes of the word pairs: the set operations then compare integers,
    # not strings built for every pair (which cost more than the rest of enrich). A pair is its
    # words' hashes combined by list arithmetic (each word's with the next one's, wrapping):
    # an expression over shifted elements per list costs three times as much. Two different
    # pairs share a value with probability about 2^-64.
    hashes = pl.col("_hashes")
    following = hashes.list.slice(1)
    pair = hashes.list.slice(0, following.list.len()) * pl.lit(PAIR_MULTIPLIER, pl.UInt64)
    bigrams = (pair + following).list.unique()
    prose = pl.col("_prose")
    names = pl.col("tool_calls").list.eval(pl.element().struct.field("name")).list.join(" ")
    df = df.with_columns(
        pl.col("visible_text")
        .str.strip_chars()
        .str.len_chars()
        .cast(pl.Int64)
        .alias("visible_chars"),
        prose.map_batches(_compression_ratio, return_dtype=pl.Float64).alias("compression_ratio"),
        pl.when(hashes.list.len() >= MIN_SIMILARITY_WORDS)
        .then(bigrams)
        .otherwise(None)
        .alias("_bigrams"),
        (pl.col("tool_call_count") > 0).alias("has_tool_calls"),
        (
            (pl.col("reasoning").fill_null("").str.strip_chars().str.len_chars() > 0)
            | (pl.col("think_open_count") + pl.col("think_close_count") > 0)
        ).alias("has_reasoning"),
        prose.map_batches(
            _tail_loops, return_dtype=pl.Struct({"period": pl.Int64, "chars": pl.Int64})
        ).alias("_tail"),
        names.str.contains(markers.TRANSFER_TOOL_RE).alias("_transfers"),
        pl.when(pl.col("role") == "assistant").then(_refused()).alias("refused"),
    )
    df = df.with_columns(
        pl.col("_tail").struct.field("period").alias("tail_period"),
        pl.col("_tail").struct.field("chars").alias("tail_repeat_chars"),
    ).drop("_whole", "_hashes", "_prose", "_tail")
    return _text_calls(_request_keys(_reasoning_calls(_tool_markup(df))), failures)


def _compared_signals(df: pl.DataFrame, bigrams: pl.Series) -> pl.DataFrame:
    """Repetition of the previous turn of the same actor (its row in `_previous_row` of the
    whole table's `bigrams`), and the reply signals that depend on earlier transfers."""
    df = df.with_columns(bigrams.gather(df.get_column("_previous_row")).alias("_previous"))
    # The intersection as a column: the two measures read it three times, and an expression
    # would be computed each time.
    df = df.with_columns(
        pl.col("_bigrams").list.set_intersection(pl.col("_previous")).list.len().alias("_shared")
    )
    # Jaccard similarity; both lists are sets, so |A ∪ B| = |A| + |B| - |A ∩ B|.
    shared = pl.col("_shared")
    similarity = shared / (pl.col("_bigrams").list.len() + pl.col("_previous").list.len() - shared)
    both = pl.col("_bigrams").is_not_null() & pl.col("_previous").is_not_null()
    agent_reply = (pl.col("role") == "assistant") & (pl.col("actor") == "agent")
    # The last sentence is a column of its own because three patterns read it.
    reply = _only(agent_reply, pl.col("visible_text"))
    df = df.with_columns(
        _last_sentence(reply).alias("_last"),
        pl.when(both)
        .then(similarity.round(3))
        .otherwise(None)
        .cast(pl.Float64)
        .alias("prev_same_actor_similarity"),
        # Containment of the shorter in the longer: two turns cut by a token cap at different
        # lengths repeat each other, yet their Jaccard stays low because the lengths differ.
        pl.when(both)
        .then(
            (
                shared
                / pl.min_horizontal(pl.col("_bigrams").list.len(), pl.col("_previous").list.len())
            ).round(3)
        )
        .otherwise(None)
        .cast(pl.Float64)
        .alias("prev_same_actor_containment"),
    )
    asks = reply.str.contains(markers.ASKS_USER_RE)
    return df.with_columns(
        pl.when(agent_reply).then(asks).otherwise(None).alias("asks_user"),
        pl.when(agent_reply)
        .then(_announces_action(pl.col("_last"), pl.col("_transferred")) & ~asks)
        .otherwise(None)
        .alias("announces_action"),
    )


_TEXT_CALL = pl.Struct({"name": pl.String, "arguments": pl.String, "error": pl.String})


def _reasoning_calls(df: pl.DataFrame) -> pl.DataFrame:
    """reasoning_calls of the turns whose markup sits in the reasoning (markupcalls.py): few
    rows, parsed in Python."""
    rows = df.select(pl.arg_where(pl.col("tool_markup_in") == "reasoning").alias("i"))["i"]
    content = pl.col("content").fill_null("")
    inline = pl.concat_str(
        [
            content.str.extract_all(
                f"{markers.CLOSED_BLOCK_RE}|{markers.UNCLOSED_TAIL_RE}"
            ).list.join("\n"),
            pl.when(pl.col("think_open_count") == 0)
            .then(content.str.extract(f"({markers.LEADING_TO_CLOSER_RE})", 1))
            .otherwise(None),
        ],
        separator="\n",
        ignore_nulls=True,
    )
    # The reasoning as tool_markup_in read it (field, then inline blocks), openers removed.
    text = (
        pl.concat_str([pl.col("reasoning"), inline], separator="\n", ignore_nulls=True)
        .str.replace_all(markers.OPEN_RE, "")
        .str.slice(-markupcalls.TAIL)
    )
    picked = df[rows].select(
        text.alias("text"), pl.col("tool_markup_format"), pl.col("offered_tools")
    )
    found = [
        markupcalls.parse(r["text"], r["tool_markup_format"], r["offered_tools"])
        for r in picked.iter_rows(named=True)
    ]
    parsed = pl.DataFrame(
        {"_row": rows, "reasoning_calls": pl.Series(found, dtype=pl.List(_TEXT_CALL))}
    )
    return (
        df.with_row_index("_row")
        .join(parsed, on="_row", how="left", maintain_order="left")
        .drop("_row")
    )


def _text_calls(df: pl.DataFrame, failures: list[dict[str, Any]]) -> pl.DataFrame:
    """text_call_format / text_calls of assistant turns: tool calls written in the visible
    text by a text-protocol agent, parsed the way its harness parses it (textcalls.py)."""
    # The gate runs vectorised: only the few messages that may hold a call reach Python.
    gated = (pl.col("role") == "assistant") & pl.col("visible_text").str.contains(
        textcalls.GATE.pattern
    )
    rows = df.select(pl.arg_where(gated.fill_null(False)).alias("i"))["i"]
    found: list[tuple[str, list[dict[str, str | None]]] | None] = []
    for at, text in enumerate(df["visible_text"].gather(rows)):
        try:
            found.append(textcalls.parse(text))
        except Exception as exc:  # a parser bug on one message: that turn's reject
            interrupts.raise_if_interrupted(exc)
            found.append(None)
            failures.append(_failure(df.row(rows[at], named=True), "text tool calls", exc))
    parsed = pl.DataFrame(
        {
            "_row": rows,
            "text_call_format": pl.Series([f[0] if f else None for f in found], dtype=pl.String),
            "text_calls": pl.Series(
                [f[1] if f else None for f in found], dtype=pl.List(_TEXT_CALL)
            ),
        }
    )
    return (
        df.with_row_index("_row")
        .join(parsed, on="_row", how="left", maintain_order="left")
        .drop("_row")
    )


def _failure(turn: dict[str, Any], what: str, exc: Exception) -> dict[str, Any]:
    """A reject row (schema.REJECTS) for a derived value a turn could not be given. The turn
    itself is kept; the reason names the turn, and no text of it (the rejects were redacted
    before enrichment, this row is made after)."""
    reason = (
        f"{what} of turn {turn['turn_index']} of {turn['trajectory_id']} not computed "
        f"({type(exc).__name__}); the turn is kept without them: this is a bug in forensics, "
        "please report it"
    )
    return {
        "source_path": turn["source_path"],
        "source_line": turn["source_line"],
        "source_format": turn["source_format"],
        "json_path": None,
        "reason": reason,
        "excerpt": "",
    }
