"""Budgets per file, declared once: what a scan lets one input cost.

Settings (`--max-decompressed-mb`, `--max-document-mb`, `[tool.forensics]`) fill them; every
reader reads through `ingest.parse.files`, which enforces them. Core data, so that settings need
not import a reader to name a cap.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Caps that keep one hostile file from taking the machine's memory or the scan's time."""

    # Bytes a .gz may inflate to; past it the read stops and the file is rejected (a bomb).
    max_decompressed_bytes: int = 4096 * MIB
    # Bytes of a file a reader takes whole into memory (JSON documents).
    max_document_bytes: int = 1024 * MIB
