"""Facts of the data that fix texts name: the parameter queries of rules/causes.toml, run.

Every parameter a fix names is declared beside the fix as a DuckDB query (diagnosis/causes.py
reads them). This module knows no cause; it provides the tables the queries read, each holding
the cause's own share of the scan:

    findings      the cause's findings (schema.FINDINGS), with `data`: the rule's data struct
                  as JSON (data->>'key' for text, (data->'key')::bigint for a number)
    turns         the turns those findings point at (schema.TURNS, with the derived columns)
    trajectories  the trajectories they are in
    labels        (key, value): the run labels of those trajectories, the first value per key
    all_turns     every turn of the scan (to compare with turns the findings did not hit)
    lookups       (name, pos, pattern, value): the [lookup.NAME] tables of the cause files
    sglang_parsers (vllm, sglang): SGLang's name for each vLLM tool-call parser (markers.py)

`_row` is a row's position in scan order, so "the first" and "the first seen on a tie" are said
in SQL (order by _row). The [macro.NAME] macros of the cause files and chars_per_token() are
defined. A query returns one value (one column, at most one row; no row is NULL). The
parameters of a cause run in order, the common ones first, and each reads the earlier ones as
getvariable('name') (NULL, not the default, when that query gave NULL). A number a rule worked
out comes from the finding's `data`, never from its message: messages are for people and may be
reworded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from forensics import markers
from forensics.check import turnstore
from forensics.check.engine import RuleError
from forensics.check.turnstore import TurnStore
from forensics.diagnosis.causes import CausePack, CauseSpec

CHARS_PER_TOKEN = 4.0  # English prose; only used when the log has no token counts
ROW = "_row"
_NEWEST = pl.CompatLevel.newest()
_SHARES = ("findings", "turns", "trajectories", "labels")


def _exec(con: duckdb.DuckDBPyConnection, sql: str, args: list[Any] | None = None) -> list[Any]:
    # Fetched to the end: DuckDB keeps a connection busy until a result is consumed.
    return con.execute(sql, args).fetchall()


def _arrow(frame: pl.DataFrame) -> pa.Table:
    # The newest Arrow layout keeps polars' string views, as the rule engine registers them.
    return frame.to_arrow(compat_level=_NEWEST)


def _labels(trajectories: pl.DataFrame) -> pl.DataFrame:
    out: dict[str, str | None] = {}
    for labels in trajectories["labels"].to_list():
        for label in labels or []:
            out.setdefault(label["key"], label["value"])
    return pl.DataFrame(
        {"key": list(out), "value": list(out.values())},
        schema={"key": pl.String, "value": pl.String},
    )


_LOOKUPS = pa.schema(
    {"name": pa.string(), "pos": pa.int64(), "pattern": pa.string(), "value": pa.string()}
)


def _lookups(pack: CausePack) -> pa.Table:
    rows = [
        {"name": name, "pos": pos, "pattern": pattern, "value": value}
        for name, table in pack.lookups.items()
        for pos, (pattern, value) in enumerate(table)
    ]
    return pa.Table.from_pylist(rows, _LOOKUPS)


def _sglang() -> pa.Table:
    return pa.table(
        {
            "vllm": pa.array(list(markers.SGLANG_PARSERS), pa.string()),
            "sglang": pa.array(list(markers.SGLANG_PARSERS.values()), pa.string()),
        }
    )


Turns = pl.DataFrame | TurnStore


def _keys(found: pl.DataFrame) -> list[str]:
    return (found["trajectory_id"] + "#" + found["turn_index"].cast(pl.String)).to_list()


def _shares(
    groups: Mapping[str, pl.DataFrame], turns: Turns, trajectories: pl.DataFrame
) -> dict[str, pl.DataFrame]:
    """Each cause's share of every table, stacked, with the cause's id in `_cause`. Turns and
    trajectories carry their position in the scan; findings theirs in the cause's group. Of a
    store's turns, the share is only their keys (`turn_key`, `_cause`): the turns stay in its
    database (see _share)."""
    stored = isinstance(turns, TurnStore)
    if isinstance(turns, pl.DataFrame):
        turns = turns.with_row_index(ROW)
    trajectories = trajectories.with_row_index(ROW)
    parts: dict[str, list[pl.DataFrame]] = {name: [] for name in _SHARES}
    for cid, found in groups.items():
        ids = found["trajectory_id"].unique().to_list()
        keys = _keys(found)
        episodes = trajectories.filter(pl.col("trajectory_id").is_in(ids))
        if isinstance(turns, pl.DataFrame):
            shared = turns.filter(pl.col("turn_key").is_in(keys))
        else:
            # an episode's finding (no turn) points at no turn
            shared = pl.DataFrame({"turn_key": sorted({k for k in keys if k is not None})})
        share = {
            "findings": found.with_row_index(ROW),
            "turns": shared,
            "trajectories": episodes,
            "labels": _labels(episodes),
        }
        for name, frame in share.items():
            parts[name].append(frame.with_columns(pl.lit(cid, pl.String).alias("_cause")))
    shares = {name: pl.concat(frames, how="vertical_relaxed") for name, frames in parts.items()}
    if stored:
        shares["turn_keys"] = shares.pop("turns")
    return shares


_DATABASE: tuple[int, duckdb.DuckDBPyConnection] | None = None


def _cursor() -> duckdb.DuckDBPyConnection:
    """A connection of its own to one in-memory database per process: opening a database costs
    more than computing the facts of a small scan, a connection to an open one next to nothing.
    Everything it creates is temporary, so connections (threads) never see each other's."""
    global _DATABASE
    if _DATABASE is None or _DATABASE[0] != os.getpid():  # a forked child opens its own
        _DATABASE = (os.getpid(), duckdb.connect())
    return _DATABASE[1].cursor()


def _connect(
    pack: CausePack,
    groups: Mapping[str, pl.DataFrame],
    turns: Turns,
    trajectories: pl.DataFrame,
    first: str,
) -> duckdb.DuckDBPyConnection:
    """The tables, with the share of the `first` cause, then the macros: a macro binds to the
    tables it reads when it is created. Each cause's share is copied into the same tables when
    its turn comes (see _share)."""
    # Every turn of the scan stays where it is, not copied: few queries read it.
    if isinstance(turns, TurnStore):
        con = turns.con.cursor()
        con.execute(
            f"create temp view all_turns as select {ROW}, * exclude ({ROW}) "
            f"from main.{turnstore.TABLE}"
        )
    else:
        con = _cursor()
        con.register("all_turns", _arrow(turns.with_row_index(ROW)))
    for name, frame in _shares(groups, turns, trajectories).items():
        con.register(f"_{name}", _arrow(frame))
    for name, table in (("lookups", _lookups(pack)), ("sglang_parsers", _sglang())):
        con.register("_incoming", table)
        _exec(con, f"create temp table {name} as select * from _incoming")
    con.unregister("_incoming")
    _share(con, first, isinstance(turns, TurnStore))
    _exec(con, f"create temp macro chars_per_token() as {CHARS_PER_TOKEN!r}::double")
    for macro in pack.macros.values():
        try:
            _exec(con, f"create temp macro {macro.name}({', '.join(macro.args)}) as {macro.sql}")
        except duckdb.Error as exc:
            raise RuleError(f"{macro.source}: macro.{macro.name}: {exc}") from None
    return con


def compute(
    pack: CausePack,
    groups: Mapping[str, pl.DataFrame],
    turns: Turns,
    trajectories: pl.DataFrame,
) -> dict[str, dict[str, Any]]:
    """The parameters of each cause over its findings (`groups`: cause id -> findings): cause
    id -> name -> value, without the steps (_name) and those that came out NULL with no
    default."""
    if not groups:
        return {}
    first = next(iter(groups))
    con = _connect(pack, groups, turns, trajectories, first)
    try:
        out: dict[str, dict[str, Any]] = {}
        for cid in groups:
            if cid != first:
                _share(con, cid, isinstance(turns, TurnStore))
            spec = pack.causes[cid]
            if isinstance(turns, TurnStore):  # a query out of memory runs again with more
                try:
                    out[cid] = turns.retrying(partial(_cause, con, pack, spec))
                except duckdb.OutOfMemoryException as exc:
                    raise RuleError(f"cause {cid}: {exc}") from None
            else:
                out[cid] = _cause(con, pack, spec)
        return out
    finally:
        con.close()


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _share(con: duckdb.DuckDBPyConnection, cause_id: str, stored: bool) -> None:
    """findings, turns, trajectories and labels: the share of one cause. Of a store's turns,
    a view: a copy of a large share would hold again what the store keeps out of memory."""
    statements = []
    for name in _SHARES:
        if stored and name == "turns":
            keys = f"select turn_key from _turn_keys where _cause = {_literal(cause_id)}"
            statements.append(
                f"create or replace temp view turns as select {ROW}, * exclude ({ROW}) "
                f"from main.{turnstore.TABLE} where turn_key in ({keys})"
            )
            continue
        data = ", details::json as data" if name == "findings" else ""
        # Copied into tables: a query over a table of the connection's own costs a third of one
        # over a view or a registered Arrow table, and a cause runs dozens.
        statements.append(
            f"create or replace temp table {name} as "
            f"select * exclude (_cause){data} from _{name} where _cause = $cause"
        )
    for statement in statements:
        con.execute(statement, {"cause": cause_id} if "$cause" in statement else None).fetchall()


def _cause(con: duckdb.DuckDBPyConnection, pack: CausePack, spec: CauseSpec) -> dict[str, Any]:
    params = pack.params_of(spec)
    for param in params.values():
        try:
            # A newline before the closing parenthesis: a query may end in a -- comment.
            _exec(con, f'set variable "{param.name}" = (\n{param.sql.strip().rstrip(";")}\n)')
        except duckdb.OutOfMemoryException:
            raise  # the store runs it again with more memory (compute)
        except duckdb.Error as exc:
            raise RuleError(
                f"{param.source}: cause {spec.id}: params.{param.name}: {exc}"
            ) from None
    shown = [p for p in params.values() if not p.hidden]
    values = (
        _exec(con, "select " + ", ".join(f"getvariable('{p.name}')" for p in shown))[0]
        if shown
        else ()
    )
    if params:  # nothing of this cause may be read as the next one's
        _exec(con, ";\n".join(f'reset variable "{name}"' for name in params))
    out: dict[str, Any] = {}
    for param, value in zip(shown, values, strict=True):
        if value is None:
            value = param.default
        if value is None:
            continue
        if not isinstance(value, str | int | float):
            raise RuleError(
                f"{param.source}: cause {spec.id}: params.{param.name}: a fix parameter is "
                f"text, a number or a boolean, not {type(value).__name__} ({value!r})"
            )
        out[param.name] = value
    return out
