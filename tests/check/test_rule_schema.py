"""Rule files have one declaration (forensics/check/rulefile.py): the loader converts a file
into its Structs, and rules/rule.schema.json, published for editors, is generated from them.
The committed schema is the generated one, every rule of the pack and the scaffold's rule
validate against it, and the schema and the loader accept and reject the same documents."""

from __future__ import annotations

import copy
import json
import tomllib
from typing import Any, get_args

import jsonschema
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics import schema
from forensics.check import engine, rulefile
from forensics.tools import scaffold

from conftest import ROOT

SCHEMA_FILE = ROOT / "rules" / "rule.schema.json"
VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
PACK = sorted(p for p in (ROOT / "rules").glob("*.toml") if p.name != engine.CAUSES_FILE)
SCAFFOLDED = tomllib.loads(scaffold.RULE_TEMPLATE.format(id="long-turn"))


def test_the_committed_schema_is_the_generated_one():
    jsonschema.Draft202012Validator.check_schema(rulefile.schema())
    assert SCHEMA_FILE.read_text(encoding="utf-8") == rulefile.schema_text(), (
        "rules/rule.schema.json is stale: python -m forensics.check.rulefile > "
        "rules/rule.schema.json"
    )


@pytest.mark.parametrize("path", PACK, ids=lambda p: p.stem)
def test_every_rule_of_the_pack_validates_against_the_schema(path):
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    assert [e.message for e in VALIDATOR.iter_errors(doc)] == []


def test_the_scaffolded_rule_validates_against_the_schema():
    assert [e.message for e in VALIDATOR.iter_errors(SCAFFOLDED)] == []


def test_the_structs_say_what_the_rest_of_forensics_says():
    assert list(get_args(rulefile.Severity)) == schema.SEVERITIES
    assert list(get_args(rulefile.Confidence)) == schema.CONFIDENCES
    assert engine.STATUSES == ("stable", "preview")
    assert [f.name for f in msgspec.structs.fields(rulefile.Docs)] == schema.DOC_SECTIONS


def _loads(doc: dict[str, Any]) -> bool:
    try:
        msgspec.convert(doc, rulefile.RuleFile)
    except msgspec.ValidationError:
        return False
    return True


# Values of every TOML kind, including the ones each key expects.
VALUES = st.recursive(
    st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.sampled_from(["", " ", "x", "low", "hard", "preview", "Min", "min_x", "select 1"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["default", "doc", "sql", "why", "x", "Bad"]), inner)
    ),
    max_leaves=8,
)
PATHS = st.sampled_from(
    [
        ("id",),
        ("severity",),
        ("confidence",),
        ("status",),
        ("brief",),
        ("requires",),
        ("params",),
        ("params", "max_chars"),
        ("params", "max_chars", "default"),
        ("params", "max_chars", "doc"),
        ("params", "Max"),
        ("docs",),
        ("docs", "why"),
        ("docs", "whyy"),
        ("query",),
        ("query", "sql"),
        ("query", "engine"),
        ("serverity",),
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(PATHS, VALUES | st.just(None)), max_size=3))
def test_the_schema_and_the_loader_agree(edits):
    """Any edit of a good rule (a key set to any value, or deleted): the published schema
    accepts the document exactly when the loader's Structs do."""
    doc = copy.deepcopy(SCAFFOLDED)
    for path, value in edits:
        table = doc
        for key in path[:-1]:
            if not isinstance(table.get(key), dict):
                table[key] = {}
            table = table[key]
        if value is None:
            table.pop(path[-1], None)
        else:
            table[path[-1]] = value
    assert VALIDATOR.is_valid(doc) == _loads(doc), doc


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        ({"query": {}}, "f.toml: missing key 'sql' in [query]"),
        ({"requires": [["content", 1]]}, "f.toml: requires[0][1] must be a string"),
        ({"requires": "content"}, 'f.toml: requires must be a list of column lists, like [["'),
        ({"id": ""}, "f.toml: id must be a non-empty string"),
        ({"severity": "urgent"}, "f.toml: severity must be one of info, low, medium, high, crit"),
        ({"params": {"max_chars": {"doc": "d"}}}, "f.toml: params.max_chars.default must be an"),
        ({"params": {"a": {"default": 1, "doc": "d"}, "B": 1}}, "f.toml: params.B: a name is lo"),
        ({"params": {"max_chars": 3}}, "f.toml: params.max_chars must be { default = …, doc ="),
        ({"docs": {"why": 1}}, "f.toml: docs.why must be a string"),
        ({"docs": []}, "f.toml: docs must be a table"),
        ({"query": {"sql": "s", "x": 1}}, "f.toml: unknown key query.x (known: sql)"),
    ],
)
def test_errors_name_the_file_and_the_key(doc, error):
    broken = copy.deepcopy(SCAFFOLDED) | doc
    with pytest.raises(rulefile.RuleFileError) as exc:
        rulefile.convert(broken, rulefile.RuleFile, "f.toml")
    assert str(exc.value).startswith(error)
    assert not VALIDATOR.is_valid(broken)
