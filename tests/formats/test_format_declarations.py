"""Every registered format is declared in full: a test per format fails on any missing part.

Declared in full means: a one-line description, a sentence saying how it is recognised, a sniff
or a claim, the turn columns it fills (real RAW_TURNS columns), the words of the validation
plan (artifact noun; a rerun command with the task ids in it, or None for no harness) and at
least one fuzz seed that exists in the repository and is detected as that format.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

from forensics import ingest, schema
from forensics.ingest import formats as format_modules
from forensics.ingest.parse import files
from forensics.ingest.registry import TEXT_SCANNER, FormatSpec

ROOT = Path(__file__).resolve().parents[2]
SPECS = {spec.name: spec for spec in ingest.FORMATS}


def _sentence(text: object) -> bool:
    return isinstance(text, str) and bool(text.strip()) and "\n" not in text


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_format_is_described_and_says_how_it_is_recognised(name):
    spec = SPECS[name]
    assert _sentence(spec.description), "description: one line"
    assert _sentence(spec.detection), "detection: how the format is recognised, in words"
    assert spec.sniff is not None or spec.claim is not None
    assert callable(spec.ingest)
    assert isinstance(spec.priority, int) and not isinstance(spec.priority, bool)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_format_declares_real_turn_columns(name):
    spec = SPECS[name]
    assert isinstance(spec.columns, frozenset)
    turn_columns = set(schema.RAW_TURNS.names)
    assert spec.columns <= turn_columns, sorted(spec.columns - turn_columns)
    assert spec.extra_columns <= turn_columns, sorted(spec.extra_columns - turn_columns)
    assert not spec.columns & spec.extra_columns, "a column is either promised or extra"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_format_gives_the_plan_its_words(name):
    spec = SPECS[name]
    assert _sentence(spec.artifact) and spec.artifact == spec.artifact.strip()
    assert isinstance(spec.benchmark, bool)
    if spec.rerun is not None:
        assert _sentence(spec.rerun) and "{tasks}" in spec.rerun
        hint = spec.rerun_hint(["7", "12"])
        assert hint is not None and spec.rerun_separator.join(["7", "12"]) in hint


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_format_has_fuzz_seeds_detected_as_itself(name):
    spec = SPECS[name]
    assert spec.seeds, "at least one fuzz seed"
    for label, rel in spec.seeds.items():
        path = ROOT / rel
        assert not Path(rel).is_absolute() and path.is_file(), (label, rel)
        detected, why = ingest.detect(files.head(path), path)
        assert detected is not None and detected.name == name, (label, why)


def test_seed_labels_name_one_seed_each():
    labels = [label for spec in ingest.FORMATS for label in spec.seeds]
    assert len(labels) == len(set(labels))


def test_builtin_priorities_are_distinct_and_before_the_text_scanner():
    builtin = [spec for spec in ingest.FORMATS if spec.origin is None]
    priorities = [spec.priority for spec in builtin]
    assert len(priorities) == len(set(priorities)), "ties would fall back to name order"
    assert [s.name for s in builtin if s.priority >= TEXT_SCANNER] == ["tau_bench_log"]


def test_every_format_module_declares_its_specs():
    """A module under ingest/formats/ is a format (SPECS) or a helper (a leading underscore)."""
    for info in pkgutil.iter_modules(format_modules.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"forensics.ingest.formats.{info.name}")
        assert isinstance(module.SPECS, tuple) and module.SPECS, info.name
        for spec in module.SPECS:
            assert SPECS.get(spec.name) is spec, (info.name, spec.name)


def test_a_declaration_without_detection_is_refused():
    with pytest.raises(ValueError, match="neither sniff nor claim"):
        FormatSpec(
            name="blind",
            description="a format nothing can recognise",
            detection="never",
            ingest=lambda _p, _c: 0,
            priority=950,
            columns=frozenset(),
            benchmark=False,
            artifact="files",
            rerun=None,
            seeds={},
        )


def test_a_declaration_must_name_every_part():
    with pytest.raises(TypeError, match="artifact"):
        FormatSpec(  # type: ignore[call-arg]
            name="partial",
            description="a format that forgets the plan's words",
            detection="never",
            sniff=lambda _h: None,
            ingest=lambda _p, _c: 0,
            priority=950,
            columns=frozenset(),
            benchmark=False,
            rerun=None,
            seeds={},
        )


def test_the_fuzz_seeds_cover_every_format():
    """tests/hostile.py takes its seeds from the declarations: the robustness properties run
    over every registered format."""
    from hostile import SEEDS

    seeded = set()
    for path in SEEDS.values():
        detected, _ = ingest.detect(files.head(path), path)
        seeded.add(detected.name if detected else None)
    assert seeded == set(SPECS)
