"""Outputs people keep: modes the umask asks for, `-o page.html` is a file, and a scan never reads
its own outputs (the file a shell redirected stdout to, the report and the --json it writes)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from forensics import atomic
from forensics.cli import main

from conftest import SAMPLES
from pinned_rules import PINNED

CONTROL = SAMPLES / "tau_bench_results_control.json"


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def cli(*args: str, stdout: Path | None = None, stderr: Path | None = None) -> int:
    """The entry point in-process; stdout (and stderr) to real files when given, as a shell's
    `> out.txt` gives them: a descriptor the scan can fstat."""
    saved = sys.argv, sys.stdout, sys.stderr
    opened = []
    sys.argv = ["forensics", *args]
    try:
        for name, target in (("stdout", stdout), ("stderr", stderr)):
            if target is not None:
                stream = open(target, "w", encoding="utf-8")  # noqa: SIM115 - closed below
                opened.append(stream)
                setattr(sys, name, stream)
        try:
            main()
        except SystemExit as exc:
            return int(exc.code or 0)
        raise AssertionError("main() returned without an exit code")
    finally:
        sys.argv, sys.stdout, sys.stderr = saved
        for stream in opened:
            stream.close()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_outputs_honour_the_umask(tmp_path, mask):
    out = tmp_path / "out"
    with umask(mask):
        code = cli(
            "scan", "--config", PINNED, "--fail-on", "critical", str(CONTROL),
            "-o", str(out / "report"),
            "--json", str(out / "r.json"),
            "--sarif", str(out / "r.sarif"),
            "--junit", str(out / "r.xml"),
            "--md", str(out / "r.md"),
            "--parquet", str(out / "tables"),
            "--db", str(out / "r.duckdb"),
            stdout=tmp_path / "stdout.txt",
        )  # fmt: skip
    assert code == 0, (tmp_path / "stdout.txt").read_text()
    written = [p for p in out.rglob("*") if p.is_file()]
    assert len(written) >= 9  # the page, 4 documents, the database, the Parquet tables
    assert {p.name: mode(p) for p in written} == {p.name: 0o666 & ~mask for p in written}
    with umask(mask):
        atomic.write_text(tmp_path / "again.txt", "x")
    assert mode(tmp_path / "again.txt") == 0o666 & ~mask
    assert not list(tmp_path.rglob("*.tmp"))  # no temporary file left behind


def test_an_html_output_name_is_the_page_itself(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = cli("scan", "--config", PINNED, "--fail-on", "critical", str(CONTROL), "-o",
               "report.html", stdout=tmp_path / "stdout.txt")  # fmt: skip
    assert code == 0
    assert (tmp_path / "report.html").is_file()
    assert (tmp_path / "report.html").read_text().startswith("<!doctype html>")
    assert "report: report.html\n" in (tmp_path / "stdout.txt").read_text()
    # a directory is still a directory, whatever its name: the page goes inside it
    (tmp_path / "old.html").mkdir()
    cli("scan", "--config", PINNED, str(CONTROL), "-o", "old.html", stdout=tmp_path / "o.txt")
    assert (tmp_path / "old.html" / "report.html").is_file()
    cli("scan", "--config", PINNED, str(CONTROL), "-o", "pages", stdout=tmp_path / "o.txt")
    assert (tmp_path / "pages" / "report.html").is_file()


def test_a_scan_does_not_read_the_file_its_stdout_goes_to(tmp_path, monkeypatch):
    # `forensics scan . > out.txt 2> err.txt`: the shell creates both files, empty, first.
    shutil.copy(CONTROL, tmp_path / "results.json")
    monkeypatch.chdir(tmp_path)
    args = ("scan", "--config", PINNED, "--fail-on", "critical", "--explain-formats", ".")
    code = cli(*args, stdout=tmp_path / "out.txt", stderr=tmp_path / "err.txt")
    out = (tmp_path / "out.txt").read_text()
    assert code == 0, out
    assert "out.txt: skipped — an output of this scan\n" in out
    assert "err.txt: skipped — an output of this scan\n" in out
    assert "gate: pass — no finding at or above critical\n" in out
    # the page and the --json of the last scan, in the directory scanned: not read either
    streams = {"stdout": tmp_path / "out.txt", "stderr": tmp_path / "err.txt"}
    assert cli(*args, "-o", "page.html", "--json", "r.json", **streams) == 0
    code = cli(*args, "-o", "page.html", "--json", "r.json", **streams)
    out = (tmp_path / "out.txt").read_text()
    assert code == 0, out
    assert "page.html: skipped — an output of this scan\n" in out
    assert "r.json: skipped — an output of this scan\n" in out
