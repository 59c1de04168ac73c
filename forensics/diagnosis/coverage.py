"""Which rules could not run, on which files, told once each and grouped by the missing data.

The engine records, per file, each rule that could not run and the columns it lacked
(engine.Checked.not_checked). A reader wants the other view: "no finish_reason in 4 of 6 files:
these 6 rules did not run there", each rule once however many files lacked it, and only the
rules that could ever run on the kinds of files scanned. Coverage is per file: a rule that
lacked the data in some files and ran on the others (and may have findings there) says so.

Transport columns (request hashes, HTTP status, stream completion, the raw request keys) exist
only in API captures: a benchmark's own result files and console logs never record them, so a
rule that can read nothing else is no news there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from forensics import markers
from forensics.check import turnstore
from forensics.check.turnstore import TurnStore
from forensics.ingest import spec_of

# Columns only an API capture (a proxy log, HAR, SSE stream, LiteLLM log, SDK dump) records.
TRANSPORT_COLUMNS = frozenset(
    {"request_hash", "request_keys", "stream_completed", "http_status", "tool_calls_without_type"}
)


def _benchmark(fmt: str | None) -> bool:
    """Whether the format records episodes as a benchmark writes them, never the HTTP exchange
    (its declaration's `benchmark`). Any other format (every capture format, one not
    registered) may carry transport columns, so its gaps are always told: an unneeded line is
    better than a silent gap."""
    spec = spec_of(fmt)
    return spec is not None and spec.benchmark


def _relevant(alternatives: Iterable[str], transport: bool) -> list[str]:
    """The missing alternatives worth telling ("a+b" is one alternative needing both)."""
    out = []
    for alt in alternatives:
        parts = alt.split("+")
        if not transport and any(p in TRANSPORT_COLUMNS for p in parts):
            continue
        out.append(alt)
    return out


def _simplest(alternatives: set[str]) -> tuple[str, ...]:
    """Alternatives without those that need more than another one does: lacking output_tokens
    in one file and output_tokens with max_output_tokens in another is lacking output_tokens."""
    atoms = {alt: set(alt.split("+")) for alt in alternatives}
    return tuple(
        sorted(
            alt
            for alt, parts in atoms.items()
            if not any(other < parts for other in atoms.values())
        )
    )


def groups(
    not_checked: Iterable[Mapping[str, Any]],
    formats: Mapping[str, str | None],
    checked: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """not_checked rows ({path, rule, missing}) as groups of rules by the columns they lacked
    and the files that lacked them.

    formats: path -> detected format; checked: the files with turns, which every rule could
    have read (default: the files of the rows). Each group is {"missing": [column, ...],
    "rules": [rule, ...], "files": n, "paths": [path, ...], "of_files": N, "ran_on": {rule: k}}:
    the columns (any one of which would have let the rules run, "+" joining columns needed
    together), the rules, the n files of the N checked that lacked them, and for the rules that
    did run on other files, on how many. A rule lacking different columns in different files
    is listed once, under everything it lacked.
    """
    rows = list(not_checked)
    scanned = set(checked) if checked is not None else {row["path"] for row in rows}
    per_rule: dict[str, set[str]] = {}
    files_of: dict[str, set[str]] = {}
    not_run: dict[str, set[str]] = {}  # every file a rule did not run on, told or not
    for row in rows:
        not_run.setdefault(row["rule"], set()).add(row["path"])
        transport = not _benchmark(formats.get(row["path"]))
        missing = _relevant(row["missing"], transport)
        if not missing:
            continue
        per_rule.setdefault(row["rule"], set()).update(missing)
        files_of.setdefault(row["rule"], set()).add(row["path"])
    by_key: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for rule, lacked in per_rule.items():
        by_key.setdefault((_simplest(lacked), tuple(sorted(files_of[rule]))), []).append(rule)
    out: list[dict[str, Any]] = []
    for (key, paths), rules in by_key.items():
        ran = {r: len(scanned - not_run[r]) for r in sorted(rules)}
        out.append(
            {
                "missing": list(key),
                "rules": sorted(rules),
                "files": len(paths),
                "paths": list(paths),
                "of_files": len(scanned | set(paths)),
                "ran_on": {r: n for r, n in ran.items() if n},
            }
        )
    out.sort(key=lambda g: (-len(g["rules"]), g["missing"], g["paths"]))
    return out


def summary(grouped: list[dict[str, Any]], files: int) -> dict[str, Any]:
    """What the groups say in one place: the files whose turns the rules read, the rules that
    ran on none of them for lack of data (their 0 proves nothing), and those that ran on some
    but lacked the data in others."""
    nowhere = sorted(r for g in grouped for r in g["rules"] if r not in g["ran_on"])
    partly = sorted(r for g in grouped for r in g["ran_on"])
    return {"files": files, "not_run": nowhere, "partly_run": partly}


_END_COLUMNS = (
    "source_path",
    "actor",
    "tool_calls",
    "has_tool_calls",
    "text_call_format",
    "tool_call_count",
    "text_calls",
)


def _episode_ends(turns: pl.DataFrame | TurnStore) -> pl.DataFrame:
    """Each trajectory's last turn (the columns excerpt_notes reads) and its count of messages
    other than system prompts, in trajectory order."""
    if isinstance(turns, pl.DataFrame):
        if turns.is_empty():
            return pl.DataFrame()
        return (
            turns.sort("trajectory_id", "turn_index")
            .group_by("trajectory_id", maintain_order=True)
            .agg(
                *(pl.col(c).last() for c in _END_COLUMNS),
                (pl.col("role") != "system").sum().alias("messages"),
            )
        )
    columns = ", ".join(_END_COLUMNS)
    return turns.sql(
        f"""
        select trajectory_id, {columns}, messages from (
          select *,
                 count(*) filter (where role <> 'system') over (partition by trajectory_id)
                   as messages,
                 row_number() over (partition by trajectory_id order by turn_index desc, _row desc)
                   as back
          from {turnstore.TABLE})
        where back = 1
        order by trajectory_id
        """
    )


def excerpt_notes(turns: pl.DataFrame | TurnStore) -> dict[str, str]:
    """Per file, what it can not show about the tool calls its episodes end on (issue 21).

    A recorded reply that ends its episode with a tool call (structured, or written as text)
    has nothing after it: whether the harness ran the call, and what came back, is not in the
    file, so the rules that judge that (text-tool-call-not-executed, tool-call-ids) say nothing
    about it. A call that ends the run (finish, submit, …) is not counted: nothing comes back.
    A reply that is the episode's only message also lacks the request it answers.
    Rather than stay silent, each such file gets a note saying so: path -> note.
    """
    ends = _episode_ends(turns)
    if ends.is_empty():
        return {}
    # A call that ends the run (finish, submit, mark_task_complete, mini-swe-agent's submission)
    # has nothing to come back: the run ended as it should.
    final = (
        pl.col("tool_calls")
        .list.eval(
            pl.element().struct.field("name").fill_null("").str.contains(markers.FINAL_CALL_NAME_RE)
            | pl.element()
            .struct.field("arguments")
            .fill_null("")
            .str.contains(markers.SUBMIT_COMMAND_RE)
        )
        .list.any()
        .fill_null(False)
    )
    calls = (pl.col("has_tool_calls") & ~final) | pl.col("text_call_format").is_not_null()
    last = ends.select(
        "source_path",
        (pl.col("actor") == "agent") & calls,
        (pl.col("tool_call_count") + pl.col("text_calls").list.len().fill_null(0)).alias("calls"),
        "messages",
    ).filter(pl.col("actor"))
    notes: dict[str, str] = {}
    for (path,), rows in last.group_by(["source_path"], maintain_order=True):
        replies, n_calls = rows.height, int(rows["calls"].sum())
        alone = int((rows["messages"] == 1).sum())
        one = replies == 1
        if alone:
            without = (
                " (the reply alone, without the request it answers)"
                if one
                else f" ({alone} of them alone, without the request they answer)"
            )
        else:
            without = ""
        calls_text = f"{n_calls} tool call{'' if n_calls == 1 else 's'}"
        notes[str(path)] = (
            f"{replies} model {'reply ends' if one else 'replies end'} on {calls_text} with "
            f"nothing recorded after {'it' if one else 'them'}{without}: whether "
            f"{'it' if n_calls == 1 else 'they'} ran cannot be checked from this file "
            "(text-tool-call-not-executed, tool-call-ids)"
        )
    return notes
