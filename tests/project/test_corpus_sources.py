"""The real corpus (tests/data/corpus/) is only a measure while every file is the public file it
claims to be: listed once in sources.toml, with the sha256 of its bytes, a pinned commit, a
permissive licence and a format that `forensics formats` lists. A file edited by hand, added
without provenance or left behind after its entry was removed fails here."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

import pytest

from forensics.ingest import FORMATS

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
FILES = CORPUS / "files"
PERMISSIVE = (
    "MIT",
    "Apache-2.0",
    "Apache-2.0 OR BSD-3-Clause",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "ISC",
    "CC0-1.0",
    "CC-BY-4.0",
    "Unlicense",
)
NAMES = {spec.name for spec in FORMATS}
KEYS = ("path", "repo", "commit", "source_path", "licence", "sha256", "format", "producer", "why")


def _entries() -> list[dict[str, str]]:
    return tomllib.loads((CORPUS / "sources.toml").read_text(encoding="utf-8"))["file"]


def test_every_entry_is_complete_and_pinned():
    problems = []
    for entry in _entries():
        missing = [k for k in KEYS if not str(entry.get(k, "")).strip()]
        if missing:
            problems.append(f"{entry.get('path')}: missing {missing}")
            continue
        if not re.fullmatch(r"[0-9a-f]{40}", entry["commit"]):
            problems.append(f"{entry['path']}: commit is not 40 hex digits")
        if not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]):
            problems.append(f"{entry['path']}: sha256 is not 64 hex digits")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", entry["repo"]):
            problems.append(f"{entry['path']}: repo is not owner/name")
        if entry["licence"] not in PERMISSIVE:
            problems.append(
                f"{entry['path']}: licence {entry['licence']!r} is not in the permissive list"
            )
        if entry["format"] not in NAMES:
            problems.append(
                f"{entry['path']}: format {entry['format']!r} is not a registered format"
            )
        if not entry["path"].startswith(f"files/{entry['format']}/"):
            problems.append(f"{entry['path']}: not under files/{entry['format']}/")
    assert not problems, "\n".join(problems)


def test_listed_files_exist_with_their_hash():
    problems = []
    for entry in _entries():
        file = CORPUS / entry["path"]
        if not file.is_file():
            problems.append(f"{entry['path']}: listed but absent")
            continue
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        if digest != entry["sha256"]:
            problems.append(f"{entry['path']}: sha256 {digest} differs from the listed one")
    assert not problems, "\n".join(problems)


def test_every_file_is_listed_once():
    listed = [entry["path"] for entry in _entries()]
    duplicates = sorted({p for p in listed if listed.count(p) > 1})
    assert not duplicates, f"listed more than once: {duplicates}"
    present = sorted(p.relative_to(CORPUS).as_posix() for p in FILES.rglob("*") if p.is_file())
    unlisted = sorted(set(present) - set(listed))
    assert not unlisted, f"in files/ without an entry in sources.toml: {unlisted}"


@pytest.mark.parametrize("limit", [1_000_000])
def test_files_stay_small(limit: int):
    sizes = {
        p.relative_to(CORPUS).as_posix(): p.stat().st_size for p in FILES.rglob("*") if p.is_file()
    }
    too_big = {p: n for p, n in sizes.items() if n > limit}
    assert not too_big, f"over {limit} bytes: {too_big}"
    assert sum(sizes.values()) <= 15 * 1024 * 1024, "the corpus is over 15 MB"
