"""Finding input files and reading them safely: globs, directories, gzip, huge lines."""

from __future__ import annotations

import glob
import gzip
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

MAX_LINE_BYTES = 64 * 1024 * 1024
SNIFF_BYTES = 64 * 1024


class InputError(Exception):
    """A path the user named does not exist or matches nothing (exit code 2)."""


def expand(paths: list[str]) -> list[Path]:
    """Files named by paths, directories (recursively) and globs; sorted, without duplicates."""
    found: list[Path] = []
    for raw in paths:
        matches = [Path(m) for m in glob.glob(raw, recursive=True)] if glob.has_magic(raw) else []
        if not matches:
            p = Path(raw)
            if not p.exists():
                raise InputError(f"{raw}: no such file or directory")
            matches = [p]
        for p in matches:
            if p.is_dir():
                found.extend(
                    f
                    for f in p.rglob("*")
                    if f.is_file() and not any(part.startswith(".") for part in f.parts)
                )
            elif p.is_file():
                found.append(p)
    unique = {os.path.normpath(p): p for p in found}
    return [unique[k] for k in sorted(unique)]


def open_binary(path: Path) -> BinaryIO:
    """The file's bytes, transparently gunzipped when it starts with the gzip magic."""
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    if f.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f)  # type: ignore[return-value]
    return f


def head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    with open_binary(path) as f:
        return f.read(size)


def read_text(path: Path) -> str:
    with open_binary(path) as f:
        return f.read().decode("utf-8", errors="replace")


def iter_lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for each line; text is None for a line over MAX_LINE_BYTES.

    A line that long is skipped without being held in memory, so a single runaway line can not
    exhaust memory; the caller reports it.
    """
    with open_binary(path) as raw:
        stream = io.BufferedReader(raw) if not isinstance(raw, io.BufferedReader) else raw
        lineno = 0
        while True:
            chunk = stream.readline(MAX_LINE_BYTES)
            if not chunk:
                return
            lineno += 1
            if len(chunk) >= MAX_LINE_BYTES and not chunk.endswith(b"\n"):
                while chunk and not chunk.endswith(b"\n"):
                    chunk = stream.readline(MAX_LINE_BYTES)
                yield lineno, None
                continue
            yield lineno, chunk.decode("utf-8", errors="replace").rstrip("\r\n")
