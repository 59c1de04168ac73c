"""Budgets per file, declared once: what a scan lets one input cost.

Settings (`--max-decompressed-mb`, `--max-document-mb`, …, `[tool.forensics]`) fill them; every
reader reads through `ingest.parse.files`, which enforces them, and a reject for an exceeded
budget names it with `exceeded()`, so the user reads which flag (or key) raises it. Core data,
so that settings need not import a reader to name a cap.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Caps that keep one hostile file from taking the machine's memory or the scan's time.

    Each field is a `[tool.forensics]` key and a `scan` flag of the name in BUDGETS; sizes are
    kept in bytes and set in MiB."""

    # Bytes one file may inflate to, all its compressed parts together: a .gz stream (the
    # largest of the reads of it), ZIP members (deflate, zstd), compressed cassette bodies.
    # Past it the read stops and the rest of the file is a reject (a bomb).
    max_decompressed_bytes: int = 4096 * MIB
    # Bytes of a file a reader takes whole into memory (JSON documents, a compressed body).
    max_document_bytes: int = 1024 * MIB
    # Bytes of one line of a line-by-line format; a longer line is skipped, never held.
    max_line_bytes: int = 64 * MIB
    # YAML nodes one file may visit again through aliases (`*a` of an `&a` node, each time its
    # whole subtree): far above any recorded cassette (a repeated header block), far below
    # what a billion-laughs file of a few hundred bytes expands to.
    max_yaml_aliases: int = 1_000_000
    # Records one file may add to the tables (turns and rejects): past it the rest are counted,
    # not kept, so a flood of tiny broken lines can not take the scan's memory.
    max_records: int = 2_000_000
    # Bytes of standard input `scan -` spools; past it the rest is not read.
    max_stdin_bytes: int = 4096 * MIB


# field -> (what it bounds, its `[tool.forensics]` key, which is also its flag after `--`).
BUDGETS: dict[str, tuple[str, str]] = {
    "max_decompressed_bytes": ("decompression cap", "max-decompressed-mb"),
    "max_document_bytes": ("document cap", "max-document-mb"),
    "max_line_bytes": ("line cap", "max-line-mb"),
    "max_yaml_aliases": ("YAML alias cap", "max-yaml-aliases"),
    "max_records": ("records cap", "max-records"),
    "max_stdin_bytes": ("stdin cap", "max-stdin-mb"),
}


def exceeded(field: str) -> str:
    """How a reject names a budget: `the decompression cap, --max-decompressed-mb`."""
    what, key = BUDGETS[field]
    return f"the {what}, --{key}"


def amount(limits: Limits, field: str) -> str:
    """A budget's value in the unit it is set in: `4096 MiB`, `1,000,000` (a size set below a
    MiB, as tests do, in bytes)."""
    value = getattr(limits, field)
    if not BUDGETS[field][1].endswith("-mb"):
        return f"{value:,}"
    return f"{value // MIB} MiB" if value % MIB == 0 else f"{value:,} bytes"
