"""Budgets per file (forensics/limits.py): each one bounds what one hostile file can cost, and
an exceeded one is a reject that names it and the flag that raises it. The bombs are small and
the budgets set low, so each test runs in about a second; the real sizes are in the comments."""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
from pathlib import Path

import pytest
import yaml

import forensics
from forensics.config import Settings
from forensics.ingest.parse import files
from forensics.limits import MIB, Limits
from forensics.tools import stdin

from conftest import DATA, SAMPLES, run_cli

CAPTURE = SAMPLES / "vllm_capture_frustrated.jsonl"
SHAREGPT = DATA / "traces" / "sharegpt" / "hermes_agent_trajectories.jsonl"
URI = "https://x.test/v1/chat/completions"


def scan(paths: list[Path], **limits: int) -> forensics.ScanResult:
    return forensics.scan([str(p) for p in paths], settings=Settings(limits=Limits(**limits)))


def reasons(result: forensics.ScanResult) -> list[tuple[int | None, str]]:
    return result.rejects.select("source_line", "reason").rows()


def starts(path: Path) -> list[int]:
    """Lines where the interactions of a YAML cassette start."""
    lines = path.read_text().splitlines()
    return [n for n, line in enumerate(lines, 1) if line.startswith("- ")]


# --- decompressed bytes: one total per file ----------------------------------------------------


def _answer(content: str) -> bytes:
    body = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    return json.dumps(body).encode()


def _cassette(path: Path, bodies: list[bytes]) -> Path:
    """A vcrpy cassette whose responses carry these (compressed) bodies, as `!!binary`."""
    doc = {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": URI,
                    "body": json.dumps({"model": "m", "messages": [
                        {"role": "user", "content": f"question {i}"}]}),
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Content-Encoding": ["gzip"]},
                    "body": {"string": body},
                },
            }
            for i, body in enumerate(bodies)
        ]
    }  # fmt: skip
    path.write_text(yaml.safe_dump(doc))
    return path


def test_compressed_cassette_bodies_share_the_files_decompression_budget(tmp_path):
    """Each body under any per-body cap, together over the file's budget: the bodies past it
    are rejects naming --max-decompressed-mb (main capped each body at 256 MiB and ignored the
    flag: a 305 KB cassette inflated to 1.56 GB)."""
    padding = " " * (600 * 1024)  # three bodies of 600 KiB, 1 MiB allowed
    bodies = [gzip.compress(_answer(f"answer {i}{padding}"), mtime=0) for i in range(3)]
    path = _cassette(tmp_path / "bodies.yaml", bodies)
    assert path.stat().st_size < 20_000
    over = (
        f"POST {URI}: compressed bodies of this file inflate past 1 MiB "
        "(the decompression cap, --max-decompressed-mb): this one was not read"
    )
    result = scan([path], max_decompressed_bytes=MIB)
    first, second, third = starts(path)
    assert reasons(result) == [(second, over), (third, over)]
    answered = result.turns.filter(result.turns["role"] == "assistant")["source_line"]
    assert answered.to_list() == [first]
    # The flag is what sets it.
    code, out, _ = run_cli("scan", str(path), "--no-report", "--max-decompressed-mb", "1")
    assert code == 1 and f"rejected: {path}:{second}: {over}" in out


def test_gzip_inside_gzip_counts_every_layer(tmp_path):
    """A body gzipped twice inflates twice: both layers count (2 MiB out of a few KB)."""
    inner = gzip.compress(_answer(" " * (2 * MIB)), mtime=0)
    path = _cassette(tmp_path / "nested.yaml", [gzip.compress(inner, mtime=0)])
    assert path.stat().st_size < 20_000
    assert reasons(scan([path], max_decompressed_bytes=MIB)) == [
        (
            2,
            f"POST {URI}: compressed bodies of this file inflate past 1 MiB "
            "(the decompression cap, --max-decompressed-mb): this one was not read",
        )
    ]


def test_a_gzip_stream_past_the_budget_keeps_the_calls_read_before_it(tmp_path):
    """A capture whose .gz inflates past the budget: the calls before the cut are episodes (the
    reject said they were kept, but a capture links calls to the end of the file, and the cap
    ended the read with an exception first: main kept 0 of 6)."""
    packed = tmp_path / "capture.jsonl.gz"
    raw = CAPTURE.read_bytes()
    packed.write_bytes(gzip.compress(raw + b"\n" + b" " * (2 * MIB), mtime=0))
    result = scan([packed], max_decompressed_bytes=MIB)
    assert result.trajectories.height == scan([CAPTURE]).trajectories.height == 6
    lines = raw.count(b"\n") + 1
    assert reasons(result) == [
        (
            None,
            "inflates to more than 1 MiB (the decompression cap, --max-decompressed-mb): not "
            f"read further after line {lines + 1}; the lines before it were read",
        )
    ]


def test_a_gzip_member_that_ends_on_an_output_step_is_not_read_for_ever(tmp_path):
    """Members of a multi-member gzip inflate in steps of 1 MiB; one that ended exactly on a
    step left a stale copy of the input after it in `unconsumed_tail`, which the reader fed
    back to the finished member for ever (main never returned on this 40 KB file)."""
    lines = CAPTURE.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    packed = tmp_path / "capture.jsonl.gz"
    packed.write_bytes(
        gzip.compress(b"".join(lines[:half]), mtime=0)
        + gzip.compress(b"\n" * (2 * MIB), mtime=0) * 2
        + gzip.compress(b"".join(lines[half:]), mtime=0)
    )
    assert packed.stat().st_size < 40_000
    result = scan([packed])
    assert result.rejects.is_empty()
    assert result.turns.height == scan([CAPTURE]).turns.height


# --- YAML aliases: one budget per file, before any parse ---------------------------------------


def _laughs(levels: int, width: int = 9, indent: str = "      ") -> list[str]:
    """Anchors `l0`..`lN` each listing the one before `width` times: width**N visits of `l0`."""
    lines = [f"{indent}l0: &l0 [{', '.join(['lol'] * width)}]"]
    for n in range(1, levels + 1):
        lines.append(f"{indent}l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * width)}]")
    return lines


def _interaction(content: str = "hi", extra: list[str] | None = None) -> list[str]:
    return [
        "- request:",
        "    method: POST",
        f"    uri: {URI}",
        "    body:",
        *(extra or []),
        f"      messages: [{{role: user, content: {content}}}]",
        "  response:",
        "    status: {code: 200, message: OK}",
        "    body: {string: '" + _answer("hello").decode() + "'}",
    ]


def test_the_alias_budget_is_per_file_not_per_interaction(tmp_path):
    """Interactions each within any per-interaction cap spend one budget: the ones past it are
    rejects naming --max-yaml-aliases, one without aliases after them is still read (main
    allowed 2,000,000 visits per interaction: a 70 KB cassette ran for over 40 s)."""
    lines = ["interactions:"]
    for i in range(3):  # 720 visits through aliases each
        anchor = f"      x: &x{i} [{', '.join(['a'] * 8)}]"
        lines += _interaction(f"q{i}", [anchor, f"      y: [{', '.join([f'*x{i}'] * 80)}]"])
    lines += _interaction("plain")
    path = tmp_path / "aliases.yaml"
    path.write_text("\n".join([*lines, "version: 1"]) + "\n")
    over = (
        "YAML aliases in this file expand past 1,000 node visits (the YAML alias cap, "
        "--max-yaml-aliases): a billion-laughs file; not read"
    )
    result = scan([path], max_yaml_aliases=1000)
    first, second, third, plain = starts(path)
    assert reasons(result) == [(second, over), (third, over)]
    assert sorted(set(result.turns["source_line"])) == [first, plain]
    _, out, _ = run_cli("scan", str(path), "--no-report", "--max-yaml-aliases", "1000")
    assert f"rejected: {path}:{second}: {over}" in out


def test_the_alias_budget_holds_when_the_cassette_does_not_parse_whole(tmp_path):
    """A broken cassette is read interaction by interaction: each is checked against the same
    budget before it is constructed (main skipped the check there: 679 bytes ran for 117 s and
    took 5.4 GB). Default budget: 9**7 visits of the first anchor are past it."""
    lines = ["interactions:", *_interaction("ok"), *_interaction("*l7", _laughs(7))]
    lines += ["- request: [unclosed", "version: 1"]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size < 1500
    result = scan([path])
    ok, laughs, broken = starts(path)
    assert reasons(result)[0] == (
        laughs,
        "YAML aliases in this file expand past 1,000,000 node visits (the YAML alias cap, "
        "--max-yaml-aliases): a billion-laughs file; not read",
    )
    assert reasons(result)[1][0] == broken and reasons(result)[1][1].startswith("invalid YAML")
    assert set(result.turns["source_line"]) == {ok}


# --- records, lines, standard input ------------------------------------------------------------


def test_records_past_the_budget_are_counted_not_kept(tmp_path):
    """A flood of broken lines holds a reject each (4 MB of them took 900 MB on main); past the
    records budget they are read but not kept, and one reject says from where."""
    path = tmp_path / "flood.jsonl"
    path.write_text(SHAREGPT.read_text().rstrip("\n") + "\n" + '{"x\n' * 30)
    whole = scan([path])
    assert (whole.trajectories.height, whole.turns.height, whole.rejects.height) == (2, 10, 30)
    capped = scan([path], max_records=20)  # 12 for the two episodes and their 10 turns
    assert (capped.trajectories.height, capped.turns.height) == (2, 10)
    assert [line for line, _ in reasons(capped)] == [*range(3, 11), None]
    assert reasons(capped)[-1][1] == (
        "more than 20 (the records cap, --max-records) records in this file: the records from "
        "line 11 on were read but not kept"
    )
    _, out, _ = run_cli("scan", str(path), "--no-report", "--max-records", "20")
    assert "the records cap, --max-records" in out


def test_a_line_past_the_line_budget_names_its_flag(tmp_path):
    path = tmp_path / "capture.jsonl"
    lines = CAPTURE.read_text().splitlines()
    path.write_text("\n".join([lines[0], '{"request": "' + "x" * (MIB + 10) + '"}', *lines[1:]]))
    _, out, _ = run_cli("scan", str(path), "--no-report", "--max-line-mb", "1")
    assert f"rejected: {path}:2: line longer than 1 MiB (the line cap, --max-line-mb)" in out


class _Endless(io.RawIOBase):
    """A standard input that never ends (`yes | forensics scan -`); it fails the test if read
    much past the budget."""

    def __init__(self, line: bytes, fail_after: int) -> None:
        self.line, self.given, self.fail_after = line, 0, fail_after

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.given > self.fail_after:
            raise AssertionError("standard input read past its budget")
        n = len(buffer)
        chunk = (self.line * (n // len(self.line) + 1))[:n]
        buffer[:n] = chunk
        self.given += n
        return n


def test_standard_input_is_spooled_up_to_its_budget():
    endless = io.BufferedReader(_Endless(b'{"x": 1}\n', fail_after=4 * MIB))
    with stdin.spooled(endless, Limits(max_stdin_bytes=MIB)) as spool:
        assert spool.stat().st_size == MIB
        with files.reading(Limits()) as damage:
            assert sum(1 for _ in files.iter_lines(spool)) > 1000
        assert damage == [
            "standard input is longer than 1 MiB (the stdin cap, --max-stdin-mb): only its "
            "first 1,048,576 bytes were read"
        ]


def test_scan_dash_names_the_stdin_budget(tmp_path, monkeypatch):
    """Through the command line: the input's first MiB is read, its reject names the flag."""
    data = CAPTURE.read_bytes() * 3  # 1.7 MB
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    code, out, err = run_cli("scan", "-", "--no-report", "--max-stdin-mb", "1")
    assert code in (0, 1), err
    assert (
        "rejected: <stdin>: standard input is longer than 1 MiB (the stdin cap, --max-stdin-mb): "
        "only its first 1,048,576 bytes were read"
    ) in out
    assert "forensics: 1 file, " in out and " 0 trajectories" not in out


# --- walking: symlink loops ---------------------------------------------------------------------


def test_a_recursive_glob_does_not_follow_a_symlink_loop(tmp_path):
    """Two links back up make glob's `**` branch at every level for ever (main never returned);
    `**` does not descend into a symlinked directory, as the walk of a directory does not."""
    runs = tmp_path / "runs" / "day1"
    runs.mkdir(parents=True)
    (runs / "r.json").write_bytes(b"{}")
    (runs / "up").symlink_to("..")
    (runs / "again").symlink_to("../..")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "o.json").write_bytes(b"{}")
    (tmp_path / "runs" / "linked").symlink_to(other)
    found = files.expand([str(tmp_path / "runs" / "**" / "*.json")])
    assert found.files == [runs / "r.json"]
    # `**` at the end matches the linked folders themselves (as glob does), each walked like a
    # folder named on the command line, whose own links are not followed: every file once.
    found = files.expand([str(tmp_path / "runs" / "**")])
    assert sorted(os.path.realpath(f) for f in found.files) == [
        os.path.realpath(other / "o.json"),
        os.path.realpath(runs / "r.json"),
    ]


@pytest.mark.parametrize(
    "pattern",
    ["**/*.json", "a/**", "a/**/*.json", "*/**/c/*.json", "a/**/b/**/*.json", "a/b/**"],
)
def test_a_recursive_glob_matches_what_glob_matches_without_links(tmp_path, monkeypatch, pattern):
    import glob

    for name in ("a/x.json", "a/b/y.json", "a/b/c/z.json", "a/.hidden/h.json", "a/.h.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"{}")
    monkeypatch.chdir(tmp_path)
    want = sorted(p.rstrip("/") for p in glob.glob(pattern, recursive=True))
    assert files._glob(pattern) == want
    absolute = str(tmp_path / pattern)
    assert files._glob(absolute) == sorted(
        p.rstrip("/") for p in glob.glob(absolute, recursive=True)
    )


def test_base64_bodies_count_only_what_they_inflate(tmp_path):
    """Base64 is not compression: a plain body in base64 costs nothing of the budget."""
    text = base64.b64encode(_answer("plain " * 100_000)).decode()
    path = tmp_path / "b64.json"
    path.write_text(
        json.dumps(
            {
                "http_interactions": [
                    {
                        "request": {"method": "post", "uri": URI, "body": {"string": "{}"}},
                        "response": {
                            "status": {"code": 200},
                            "body": {"encoding": "", "base64_string": text},
                        },
                    }
                ]
            }
        )
    )
    assert scan([path], max_decompressed_bytes=MIB).rejects.is_empty()
