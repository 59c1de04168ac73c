from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from forensics.pipeline import Scan

# Doctests run over forensics/ (pyproject addopts); the fixture builders under data/ are
# scripts, not test modules.
collect_ignore_glob = ["data/*"]

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
DATA = Path(__file__).resolve().parent / "data"
# The small real files the tests need are copied under data/ (the README of each folder gives
# their source repository, commit, path and licence); the whole tau-bench and tau2-bench result
# files some tests read are in data/realdata_full/. FORENSICS_REALDATA may name another folder
# of the same layout (tau_bench/, tau2/) to run those tests on a larger corpus.
REALDATA = Path(os.environ.get("FORENSICS_REALDATA") or DATA / "realdata_full")


def realdata(*parts: str) -> Path:
    """A path in the whole-file corpus. The repository's copy must hold it; a corpus named by
    FORENSICS_REALDATA may lack a part, and the test then skips, saying so."""
    path = REALDATA.joinpath(*parts)
    if not path.exists():
        if os.environ.get("FORENSICS_REALDATA"):
            pytest.skip(f"FORENSICS_REALDATA corpus: {path} is not there")
        raise FileNotFoundError(path)
    return path


def run_cli(*args: str) -> tuple[int, str, str]:
    """The installed entry point in-process: exit code, stdout, stderr."""
    from forensics.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["forensics", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                return int(exc.code or 0), out.getvalue(), err.getvalue()
    finally:
        sys.argv = argv
    raise AssertionError("main() returned without an exit code")


@pytest.fixture(scope="session")
def scan_of() -> Callable[..., Scan]:
    """`forensics.scan(paths)` once per session for each list of paths: most tests only read a
    scan of the same few files, and a scan costs a DuckDB query per rule. The result is shared:
    a test that changes it must scan on its own."""
    import forensics

    done: dict[tuple[str, ...], Scan] = {}

    def scan(*paths: str | os.PathLike[str]) -> Scan:
        key = tuple(str(p) for p in paths)
        if key not in done:
            done[key] = forensics.scan(list(key))
        return done[key]

    return scan


@pytest.fixture(scope="session")
def output2_scan(scan_of):
    return scan_of(SAMPLES / "output2.txt")


def pytest_addoption(parser: pytest.Parser) -> None:
    # tests/check/test_rule_fixtures.py: rewrite tests/rule_fixtures/*.snap.json from the
    # findings instead of failing on a difference (a deliberate message change; review the diff).
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="Rewrite the rule-fixture snapshots (tests/rule_fixtures/*.snap.json).",
    )
