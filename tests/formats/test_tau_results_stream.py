"""tau-bench results files are read a piece at a time: the same rows and rejects as a whole
read, wherever the pieces end, on real files and on cut and broken ones."""

from __future__ import annotations

import gzip
import shutil

import pytest

from forensics import ingest
from forensics.ingest.formats import tau_results
from forensics.ingest.parse import files

from conftest import DATA, SAMPLES, realdata

SOURCES = [
    SAMPLES / "tau_bench_results_frustrated.json",
    SAMPLES / "tau_bench_results_truncated.json",
    DATA / "realdata" / "historical_gpt-4o-airline.first12.json",
]


def _variants(tmp_path):
    text = SOURCES[0].read_text()
    cut = text[: len(text) * 2 // 3]
    yield from SOURCES
    for name, body in {
        "cut.json": cut,
        "garbage_after.json": text + "\n{oops",
        "twice.json": text + "\n" + text,
        "bad_element.json": text.replace("[", '[7, "x", ', 1),
        "broken_middle.json": text.replace('"traj"', '"traj" "', 3),
        "empty.json": "[]",
        "unicode.json": text.replace("order", "ördér ☃ \ud83d\ude00"),
    }.items():
        path = tmp_path / name
        path.write_text(body, errors="surrogatepass")
        yield path
    gz = tmp_path / "cut.json.gz"
    with gzip.open(gz, "wt") as f:
        f.write(text)
    damaged = tmp_path / "damaged.json.gz"
    damaged.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])
    yield gz
    yield damaged


def _tables(path):
    data = ingest.ingest([str(path)])
    return [t.to_pylist() for t in (data.turns, data.trajectories, data.rejects)], data.files


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_pieces_read_as_the_whole(piece, tmp_path, monkeypatch):
    for path in _variants(tmp_path):
        whole = _tables(path)
        monkeypatch.setattr(files.TextStream, "PIECE", piece)
        monkeypatch.setattr(tau_results, "_KEEP_CHARS", piece * 3)
        got = _tables(path)
        monkeypatch.undo()
        assert got == whole, path.name


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_whole_real_files_in_pieces_read_as_the_whole(piece, tmp_path, monkeypatch):
    for real in sorted(realdata("tau_bench").glob("*.json")):
        path = tmp_path / real.name
        shutil.copy(real, path)
        whole = _tables(path)
        monkeypatch.setattr(files.TextStream, "PIECE", piece)
        monkeypatch.setattr(tau_results, "_KEEP_CHARS", piece * 3)
        got = _tables(path)
        monkeypatch.undo()
        assert got == whole, path.name


def test_the_window_forgets_records_read(tmp_path, monkeypatch):
    text = SOURCES[0].read_text().strip()
    body = "[" + ",".join([text[1:-1]] * 200) + "]"
    path = tmp_path / "long.json"
    path.write_text(body)
    widest = 0
    real_more = files.TextStream.more

    def more(self):  # type: ignore[no-untyped-def]
        nonlocal widest
        grew = real_more(self)
        widest = max(widest, len(self.text))
        return grew

    monkeypatch.setattr(files.TextStream, "PIECE", 64 * 1024)
    monkeypatch.setattr(tau_results, "_KEEP_CHARS", 256 * 1024)
    monkeypatch.setattr(files.TextStream, "more", more)
    data = ingest.ingest([str(path)])
    assert data.trajectories.num_rows == 600 and data.rejects.num_rows == 0
    assert widest < len(body) / 10
