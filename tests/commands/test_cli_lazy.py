"""`forensics` starts cheap: a command's module, and the heavy libraries, load only when used."""

from __future__ import annotations

import subprocess
import sys
from typing import get_args

from forensics import cli, config, schema
from forensics.commands import scan

from conftest import SAMPLES

HEAVY = ("polars", "duckdb", "pyarrow", "jinja2")


def test_severity_spellings_are_the_schema_severities():
    assert scan.FAIL_ON == schema.SEVERITIES
    assert list(get_args(config.Severity)) == schema.SEVERITIES


def _imported(*argv: str) -> tuple[str, set[str]]:
    """What `forensics ARGV` prints and the modules it has imported when it exits."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('\\nMODULES', *sorted(sys.modules), file=sys.stderr))\n"
        "from forensics.cli import main\n"
        f"sys.argv = ['forensics', *{list(argv)!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout, set(done.stderr.rsplit("MODULES", 1)[1].split())


def test_help_lists_every_command_and_imports_no_heavy_library():
    out, modules = _imported("--help")
    assert "Commands:" in out
    assert all(f"  {name} " in out for name in cli.COMMANDS)
    assert modules.isdisjoint(HEAVY)


def test_a_scan_imports_its_command_only():
    out, modules = _imported("scan", str(SAMPLES / "output2.txt"), "--no-report", "-q")
    assert out == ""
    commands = {m for m in modules if m.startswith("forensics.commands.")}
    assert commands == {"forensics.commands.scan", "forensics.commands.shared"}
    # One process, no stores, no comparison, no report page: none of what serves them.
    unused = {"forensics.distributed", "forensics.store", "forensics.tools.diff", "jinja2", "ray"}
    assert modules.isdisjoint(unused)


def test_a_small_command_imports_no_heavy_library(tmp_path):
    (tmp_path / "report.html").write_text("<html></html>")
    out, modules = _imported("view", "--print-url", str(tmp_path))
    assert out.strip() == (tmp_path / "report.html").as_uri()
    assert modules.isdisjoint(HEAVY)
    assert {m for m in modules if m.startswith("forensics.commands.")} == {
        "forensics.commands.view",
        "forensics.commands.shared",
    }


def test_package_api_loads_on_first_use():
    code = (
        "import sys, forensics\n"
        "assert 'polars' not in sys.modules\n"
        "from forensics import scan, Scan, ScanResult, connect\n"
        "print(scan.__module__, Scan.__name__, ScanResult.__name__, connect.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["forensics.pipeline", "Scan", "ScanResult", "connect"]
