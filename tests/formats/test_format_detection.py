"""Detection follows the declared priorities, and finds on every fixture what it found before.

detected.json records, for every file under tests/data, sample_logs and tests/rule_fixtures,
the format and the reason detection gave when formats were still a hand-ordered list (the
declarations replaced it without changing a verdict). A new fixture file gets its line by
running this module: `python tests/formats/test_format_detection.py --write` writes the
verdicts of the current code for files the table lacks (review the diff: the table is the spec).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from forensics import ingest
from forensics.ingest.parse import files

ROOT = Path(__file__).resolve().parents[2]
TABLE = Path(__file__).with_name("detected.json")
FIXTURE_DIRS = ("tests/data", "sample_logs", "tests/rule_fixtures")
WRITE = "python tests/formats/test_format_detection.py --write"


# The real corpus is a measure, not a spec: pinning its verdicts here would turn a misdetected
# file into an expected one. The corpus is scored against its blind labels instead (issue 21).
CORPUS = ROOT / "tests" / "data" / "corpus"


def fixture_files() -> list[str]:
    return sorted(
        str(p.relative_to(ROOT))
        for base in FIXTURE_DIRS
        for p in (ROOT / base).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.is_relative_to(CORPUS)
    )


def verdict(rel: str) -> list[str | None]:
    path = ROOT / rel
    fmt, why = ingest.detect(files.head(path), path)
    return [fmt.name if fmt else None, why]


EXPECTED: dict[str, list[str | None]] = json.loads(TABLE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("rel", fixture_files())
def test_every_fixture_is_detected_as_recorded(rel):
    assert rel in EXPECTED, f"{rel}: no expected format in {TABLE.name}; add it ({WRITE})"
    assert verdict(rel) == EXPECTED[rel]


def test_the_table_names_no_missing_file():
    assert sorted(set(EXPECTED) - set(fixture_files())) == []


def test_the_detection_order_is_the_declared_priority():
    order = [(f.priority, f.name) for f in ingest.FORMATS]
    assert order == sorted(order)
    # The text scanner takes any text: it is asked last.
    assert ingest.FORMATS[-1].name == "tau_bench_log"


def test_a_format_declared_earlier_wins_a_file_both_recognise(monkeypatch, tmp_path):
    """The same sniffer declared at two priorities: the lower number reads the file."""
    import dataclasses

    from forensics.ingest.registry import ordered

    atif = ingest.spec_of("harbor_atif")
    early = dataclasses.replace(atif, name="atif_early", priority=atif.priority - 1)
    late = dataclasses.replace(atif, name="atif_late", priority=atif.priority + 1)
    seed = ROOT / next(iter(atif.seeds.values()))
    builtin = list(ingest.FORMATS)
    for extra, winner in ((early, "atif_early"), (late, "harbor_atif")):
        monkeypatch.setattr(ingest, "FORMATS", ordered([*builtin, extra]))
        assert ingest.detect(files.head(seed), seed)[0].name == winner


if __name__ == "__main__" and "--write" in sys.argv:
    table = dict(EXPECTED)
    for rel in fixture_files():
        table.setdefault(rel, verdict(rel))
    lines = [
        f" {json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}"
        for k, v in sorted(table.items())
        if (ROOT / k).is_file()
    ]
    TABLE.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
