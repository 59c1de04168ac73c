"""pip install of the built wheel, used from another directory, carries rules and reports."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

from conftest import ROOT, SAMPLES


def test_wheel_ships_rules_and_reports_and_scans_elsewhere(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("forensics-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "forensics/_data/rules/unclosed-think.toml" in names
    assert "forensics/_data/rules/causes.toml" in names
    assert "forensics/_data/reports/report.html.j2" in names

    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import forensics, forensics.check.engine as e; "
            "print(forensics.__file__); print(e.default_rules_dir())",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert where[0].startswith(str(site)) and where[1] == str(site / "forensics/_data/rules")
    res = subprocess.run(
        [sys.executable, "-m", "forensics", "scan", str(SAMPLES / "output2.txt")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 1, res.stderr
    assert "1. Output truncated by the output-token limit" in res.stdout
    assert (work / "forensics-report" / "report.html").is_file()
