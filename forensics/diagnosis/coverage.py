"""Which rules could not run, told once each and grouped by the data that was missing.

The engine records, per file, each rule that could not run and the columns it lacked
(engine.Checked.not_checked). A reader wants the other view: "no finish_reason: these 6 rules
did not run", each rule once however many files lacked it, and only the rules that could ever
run on the kinds of files scanned. Transport columns (request hashes, HTTP status, stream
completion, the raw request keys) exist only in API captures: a benchmark's own result files
and console logs never record them, so a rule that can read nothing else is no news there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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
    not_checked: Iterable[Mapping[str, Any]], formats: Mapping[str, str | None]
) -> list[dict[str, Any]]:
    """not_checked rows ({path, rule, missing}) as groups of rules by the columns they lacked.

    formats: path -> detected format. Each group is {"missing": [column, ...], "rules":
    [rule, ...], "files": n, "paths": [path, ...]}: the columns (any one of which would have let
    the rules run, "+" joining columns needed together), the rules, and the files that lacked
    them. A rule lacking different columns in different files is listed once, under everything
    it lacked.
    """
    per_rule: dict[str, set[str]] = {}
    files_of: dict[str, set[str]] = {}
    for row in not_checked:
        transport = not _benchmark(formats.get(row["path"]))
        missing = _relevant(row["missing"], transport)
        if not missing:
            continue
        per_rule.setdefault(row["rule"], set()).update(missing)
        files_of.setdefault(row["rule"], set()).add(row["path"])
    by_key: dict[tuple[str, ...], list[str]] = {}
    for rule, lacked in per_rule.items():
        by_key.setdefault(_simplest(lacked), []).append(rule)
    out: list[dict[str, Any]] = []
    for key, rules in by_key.items():
        paths = sorted(set().union(*(files_of[r] for r in rules)))
        out.append(
            {"missing": list(key), "rules": sorted(rules), "files": len(paths), "paths": paths}
        )
    out.sort(key=lambda g: (-len(g["rules"]), g["missing"]))
    return out
