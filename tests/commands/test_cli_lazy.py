"""`forensics --help` stays fast: the heavy libraries load only for commands that use them."""

from __future__ import annotations

import subprocess
import sys

from forensics import cli, schema

HEAVY = ("polars", "duckdb", "pyarrow", "jinja2")


def test_fail_on_choices_are_the_schema_severities():
    assert cli.FAIL_ON == schema.SEVERITIES


def test_help_imports_no_heavy_library():
    code = (
        "import sys\n"
        "from forensics.cli import cli\n"
        "try:\n"
        "    cli.main(['--help'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Commands:" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_package_api_loads_on_first_use():
    code = (
        "import sys, forensics\n"
        "assert 'polars' not in sys.modules\n"
        "from forensics import scan, Scan, ScanResult, connect\n"
        "print(scan.__module__, Scan.__name__, ScanResult.__name__, connect.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["forensics.pipeline", "Scan", "ScanResult", "connect"]
