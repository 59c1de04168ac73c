from __future__ import annotations

from pathlib import Path

import pytest

# Doctests run over forensics/ (pyproject addopts); the fixture builders under data/ are
# scripts, not test modules.
collect_ignore_glob = ["data/*"]

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
DATA = Path(__file__).resolve().parent / "data"
# The shared real-data folder sits next to the checkout on developer machines and in CI.
SHARED_REALDATA = ROOT.parent / "shared" / "realdata"


@pytest.fixture(scope="session")
def output2_scan():
    import forensics

    return forensics.scan([str(SAMPLES / "output2.txt")])


def pytest_addoption(parser: pytest.Parser) -> None:
    # tests/test_rule_fixtures.py: rewrite tests/rule_fixtures/*.snap.json from the findings
    # instead of failing on a difference (a deliberate message change; review the diff).
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="Rewrite the rule-fixture snapshots (tests/rule_fixtures/*.snap.json).",
    )
