"""The pipeline flows one way, enforced here rather than by review; the report model is
versioned, and `diff` reads only its own version."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from click.testing import CliRunner

from forensics.cli import cli
from forensics.report import model as report

from conftest import ROOT, SAMPLES


def test_import_contracts_hold():
    """[tool.importlinter] in pyproject.toml: stages import only downstream-to-upstream, and
    renderers import nothing that reads tables or decides."""
    # The interpreter's own scripts folder first: the suite may run from a venv not on PATH.
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports"
    )
    assert lint, "import-linter is not installed (it is in the [test] extra)"
    command = [lint]
    done = subprocess.run(
        [*command, str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with open(ROOT / "pyproject.toml", "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in done.stdout


def test_json_result_carries_the_report_schema_version(tmp_path):
    out = tmp_path / "r.json"
    CliRunner().invoke(
        cli, ["scan", str(SAMPLES / "output2.txt"), "--no-report", "--json", str(out)]
    )
    doc = json.loads(out.read_text())
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == report.SCHEMA_VERSION
    assert "page" not in doc  # the HTML page's data stays out of the machine result


def test_diff_refuses_a_result_of_another_schema_version(tmp_path):
    out = tmp_path / "r.json"
    CliRunner().invoke(
        cli, ["scan", str(SAMPLES / "output2.txt"), "--no-report", "--json", str(out)]
    )
    doc = json.loads(out.read_text())
    doc["schema_version"] = report.SCHEMA_VERSION - 1
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    res = CliRunner().invoke(cli, ["diff", str(old), str(out)])
    assert res.exit_code == 2
    assert f"report schema {report.SCHEMA_VERSION - 1}" in res.output


def test_a_container_format_claims_its_file_from_bytes_and_path(tmp_path, monkeypatch):
    """Binary containers (a zip of JSON members) are claimed before text detection would call
    them binary: registering a format is all a new container needs."""
    import dataclasses

    from forensics import ingest

    seen = []

    def claim(head: bytes, path):
        return (
            "zip with a .demo name"
            if head[:4] == b"PK\x03\x04" and path.suffix == ".demo"
            else None
        )

    def read(path, collector):
        seen.append(path.name)
        collector.note(str(path), "read by the demo container format")
        return 0

    demo = dataclasses.replace(ingest.FORMATS[0], name="demo", claim=claim, ingest=read)
    monkeypatch.setattr(ingest, "FORMATS", [demo, *ingest.FORMATS])
    (tmp_path / "run.demo").write_bytes(b"PK\x03\x04" + bytes(range(256)))
    (tmp_path / "other.bin").write_bytes(b"PK\x03\x04" + bytes(range(256)))
    data = ingest.ingest([str(tmp_path)])
    formats = {f.path.rsplit("/", 1)[1]: (f.format, f.reason) for f in data.files}
    assert formats["run.demo"] == ("demo", "zip with a .demo name")
    assert formats["other.bin"][0] is None and seen == ["run.demo"]
