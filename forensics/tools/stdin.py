"""`forensics scan -`: one artifact read from standard input, named `<stdin>` in every output.

The input is spooled to a file named `<stdin>` in a private temporary directory, so it goes
through the same format detection, gzip handling and size caps as any file (detection peeks at
the head, several readers read twice). The run id, derived from the file's name, is then
`<stdin>` too; the temporary directory is replaced by the name in the tables afterwards, so
the outputs do not depend on where the spool lived.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import polars as pl

from forensics.diagnosis.result import ScanResult
from forensics.ingest.parse import files
from forensics.limits import Limits, amount, exceeded

NAME = files.SPOOL
_PIECE = 1 << 20


@contextmanager
def spooled(stream: BinaryIO, limits: Limits | None = None) -> Iterator[Path]:
    """The stream's bytes in a temporary file named NAME, removed afterwards.

    At most the stdin cap is read: a stream that goes on (`yes | forensics scan -`) would
    otherwise fill the disk and never end. The spool then holds the input's first bytes, read
    like a file damaged there, and the file's reject names the cap."""
    cap = (limits or Limits()).max_stdin_bytes
    folder = Path(tempfile.mkdtemp(prefix="forensics-stdin-"))
    try:
        path = folder / NAME
        size = 0
        with open(path, "wb") as out:
            while size < cap and (piece := stream.read(min(_PIECE, cap - size))):
                out.write(piece)
                size += len(piece)
            cut = size >= cap and bool(stream.read(1))
        if cut:
            files.mark_cut(
                path,
                f"standard input is longer than {amount(limits or Limits(), 'max_stdin_bytes')} "
                f"({exceeded('max_stdin_bytes')}): only its first {size:,} bytes were read",
            )
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def relabel(result: ScanResult, spool: Path) -> ScanResult:
    """The result with the spool's path written as NAME wherever it appears."""
    old = str(spool)

    def table(frame: pl.DataFrame) -> pl.DataFrame:
        texts = [c for c, t in frame.schema.items() if t == pl.String]
        lists = [c for c, t in frame.schema.items() if t == pl.List(pl.String)]  # e.g. sources
        return frame.with_columns(
            pl.col(texts).str.replace_all(old, NAME, literal=True),
            *(
                pl.col(c).list.eval(pl.element().str.replace_all(old, NAME, literal=True))
                for c in lists
            ),
        )

    def text(value: str | None) -> str | None:
        return value.replace(old, NAME) if value else value

    files = [
        dataclasses.replace(
            f, path=text(f.path) or NAME, reason=text(f.reason) or "", note=text(f.note)
        )
        for f in result.files
    ]
    return dataclasses.replace(
        result,
        turn_source=table(result.turns),
        trajectories=table(result.trajectories),
        findings=table(result.findings),
        rejects=table(result.rejects),
        files=files,
        not_checked={text(p) or p: rules for p, rules in result.not_checked.items()},
    )
