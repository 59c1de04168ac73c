"""Files written whole or not at all.

Every output goes to a unique temporary name beside its target and is renamed into place, so
an interrupted scan, or two scans writing the same target, never leave a torn file that looks
complete.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text(path: Path, text: str) -> Path:
    """Write text (UTF-8) to path atomically, creating its directory; returns path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
