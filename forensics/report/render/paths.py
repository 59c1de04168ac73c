"""Source paths as CI tools want them: relative to the scan's working directory when inside it.

GitHub code scanning, annotations and JUnit viewers resolve paths against the checkout, and a
relative path keeps the outputs identical across machines.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath


def relative(path: str, base: Path) -> str | None:
    """path relative to base in POSIX form, or None when it lies outside base."""
    absolute = Path(os.path.abspath(path))
    try:
        return PurePosixPath(absolute.relative_to(os.path.abspath(base)).as_posix()).as_posix()
    except ValueError:
        return None


def display(path: str, base: Path) -> str:
    """Relative to base when inside it, else the absolute path (POSIX form)."""
    rel = relative(path, base)
    return rel if rel is not None else Path(os.path.abspath(path)).as_posix()
