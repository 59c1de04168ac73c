"""A third-party package adds a format through the `forensics.formats` entry point group.

The package here is a real (if tiny) installed distribution: a module and its .dist-info with
entry_points.txt, put on sys.path, found by importlib.metadata as pip would leave it. A broken
plugin (a module that does not import, an object that is no declaration, a name already taken)
is a warning naming it; the scan goes on with the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import forensics
from forensics import ingest
from forensics.check import engine
from forensics.ingest.registry import FormatPluginWarning, load_plugins, ordered
from forensics.tools import format_catalogue

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = textwrap.dedent(
    '''
    """A demo format: a first line DEMO, then `role: text` lines."""

    import dataclasses

    from forensics.ingest.records import Episode, Run
    from forensics.ingest.registry import FormatSpec


    def sniff(head):
        return "first line DEMO (demo plugin)" if head.startswith("DEMO\\n") else None


    def ingest(path, collector):
        ep = Episode(
            run=Run(run_id="demo-run"), source_path=str(path), source_line=1,
            source_format="demo_lines", task_id="t1",
        )
        for number, line in enumerate(path.read_text().splitlines()[1:], start=2):
            role, _, text = line.partition(": ")
            ep.add(number, {"role": role, "content": text})
        collector.add_episode(ep)
        return 1


    SPEC = FormatSpec(
        name="demo_lines",
        description="demo transcript lines",
        detection="a first line DEMO",
        sniff=sniff,
        ingest=ingest,
        priority=850,
        columns=frozenset({"content"}),
        benchmark=False,
        artifact="demo transcript",
        rerun="demo-run --only {tasks}",
        seeds={"demo": "demo.txt"},
    )
    NOT_A_SPEC = {"name": "nothing"}
    LATE = dataclasses.replace(SPEC, name="demo_after_text", priority=1200)
    TAKEN = FormatSpec(
        name="har", description="a second HAR", detection="never", sniff=sniff, ingest=ingest,
        priority=851, columns=frozenset(), benchmark=False, artifact="x", rerun=None, seeds={},
    )
    '''
)
ENTRY_POINTS = textwrap.dedent(
    """
    [forensics.formats]
    demo = forensics_demo_format:SPEC
    missing = forensics_no_such_module:SPEC
    wrong = forensics_demo_format:NOT_A_SPEC
    taken = forensics_demo_format:TAKEN
    late = forensics_demo_format:LATE
    """
)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A directory holding the installed demo package, first on sys.path."""
    packages = tmp_path / "site"
    info = packages / "forensics_demo_format-0.1.dist-info"
    info.mkdir(parents=True)
    (packages / "forensics_demo_format.py").write_text(PLUGIN)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: forensics-demo-format\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(packages))
    yield packages
    sys.modules.pop("forensics_demo_format", None)


def demo_file(directory: Path) -> Path:
    path = directory / "session.demo.txt"
    path.write_text("DEMO\nuser: hello\nassistant: <think>never closed\n")
    return path


def test_the_entry_point_declares_a_format_and_broken_ones_warn(site):
    builtin = [spec.name for spec in ingest.FORMATS]
    with pytest.warns(FormatPluginWarning) as caught:
        plugins = load_plugins(taken=builtin)
    assert [(p.name, p.origin) for p in plugins] == [
        ("demo_lines", "forensics-demo-format"),
        ("demo_after_text", "forensics-demo-format"),
    ]
    said = sorted(str(w.message) for w in caught)
    assert len(said) == 4
    assert "format plugin 'late'" in said[0] and "will never be detected" in said[0]
    assert "format plugin 'missing'" in said[1] and "ModuleNotFoundError" in said[1]
    assert "format plugin 'taken'" in said[2] and "'har' is already declared" in said[2]
    assert "format plugin 'wrong'" in said[3] and "expected a FormatSpec" in said[3]
    assert all("forensics-demo-format" in s for s in said)


def test_a_plugin_format_is_detected_in_its_declared_place_and_read(site, tmp_path, monkeypatch):
    with pytest.warns(FormatPluginWarning):
        plugins = load_plugins(taken=[spec.name for spec in ingest.FORMATS])
    formats = ordered([*ingest.FORMATS, *plugins])
    names = [spec.name for spec in formats]
    assert names.index("demo_lines") == names.index("atropos_groups") + 1  # 830 < 850 < 900
    monkeypatch.setattr(ingest, "FORMATS", formats)
    result = forensics.scan([str(demo_file(tmp_path))])
    assert [f.format for f in result.files] == ["demo_lines"]
    assert result.turns["content"].to_list() == ["hello", "<think>never closed"]
    entry = next(e for e in format_catalogue.entries(engine.load_rules()) if e.origin)
    assert (entry.name, entry.rerun) == ("demo_lines", "demo-run --only <id> <id>")
    assert "unclosed-think" in entry.rules


def test_an_installed_plugin_is_loaded_once_by_the_cli(site, tmp_path):
    """The real path: a process whose sys.path holds the package lists and reads the format,
    and says which plugins it could not load, without failing."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    run = [sys.executable, "-c", "from forensics.cli import main; main()"]
    listed = subprocess.run(
        [*run, "formats"], env=env, capture_output=True, text=True, check=False, timeout=120
    )
    assert listed.returncode == 0, listed.stderr
    assert "demo_lines — demo transcript lines (plugin from forensics-demo-format)" in listed.stdout
    assert "format plugin 'missing'" in listed.stderr
    out = tmp_path / "r.json"
    scanned = subprocess.run(
        [*run, "scan", str(demo_file(tmp_path)), "--no-report", "--json", str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert scanned.returncode in (0, 1), scanned.stderr
    report = json.loads(out.read_text())
    assert [f["format"] for f in report["files"]] == ["demo_lines"]
