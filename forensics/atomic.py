"""Files written whole or not at all.

Every output goes to a unique temporary name beside its target and is renamed into place, so
an interrupted scan, or two scans writing the same target, never leave a torn file that looks
complete.

The temporary file is created with mode 0666 and the process umask applied, as `open()` would
create the target: mkstemp's 0600 would survive the rename and leave a report that the web
server or another CI user can not read.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

_ATTEMPTS = 100  # unique names tried before giving up (a clash is 1 in 2**48 per attempt)


def temporary(path: Path) -> Path:
    """A new empty file beside path, under a unique hidden name, mode 0666 less the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(_ATTEMPTS):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            os.close(os.open(tmp, flags, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"{path.parent}: no unique temporary name for {path.name}")


def write_text(path: Path, text: str) -> Path:
    """Write text (UTF-8) to path atomically, creating its directory; returns path."""
    return write_pieces(path, (text,))


def write_pieces(path: Path, pieces: Iterable[str]) -> Path:
    """Write the concatenation of pieces (UTF-8) to path atomically, one piece at a time;
    returns path. An exception from pieces leaves the target as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary(path)
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for piece in pieces:
                f.write(piece)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
