from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
DATA = Path(__file__).resolve().parent / "data"
# The shared real-data folder sits next to the checkout on developer machines and in CI.
SHARED_REALDATA = ROOT.parent / "shared" / "realdata"


@pytest.fixture(scope="session")
def output2_scan():
    import forensics

    return forensics.scan([str(SAMPLES / "output2.txt")])
