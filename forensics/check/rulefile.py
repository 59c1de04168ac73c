"""What a rule file (rules/*.toml) holds, declared once as msgspec Structs.

The engine reads a file by converting its TOML into `RuleFile` (unknown keys are errors, so a
misspelt `[doc]` or `serverity` fails when the pack loads instead of being ignored), and
rules/rule.schema.json, the JSON Schema editors validate rule files with, is generated from
the same Structs:

    python -m forensics.check.rulefile > rules/rule.schema.json

msgspec's errors name a JSON path (`$.params[...].doc`); `convert` says them in a rule
author's words instead, naming the file and the key (`params.min_chars.doc`).
"""

from __future__ import annotations

import json
import re
import types
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import msgspec
from msgspec import Meta, Struct, field

T = TypeVar("T")

# The same values, in the same order, as schema.SEVERITIES, CONFIDENCES and engine.STATUSES
# (a test holds them together); Literal types so that the JSON Schema lists them.
Severity = Literal["info", "low", "medium", "high", "critical"]
Confidence = Literal["hard", "heuristic"]
Status = Literal["stable", "preview"]

ParamName = Annotated[str, Meta(pattern="^[a-z][a-z0-9_]*$")]
Columns = Annotated[
    list[list[str]],
    Meta(
        description="Each inner list is a set of columns (of the turns table) that, all "
        "present, make the rule checkable; none: the rule reads what every source has."
    ),
]


class ParamSpec(Struct, forbid_unknown_fields=True):
    """A threshold the query names as {name}; its type is its default's."""

    default: Annotated[
        bool | int | float, Meta(description="The value; an integer, a number or a boolean.")
    ]
    doc: Annotated[str, Meta(pattern=r"\S", description="What the threshold means.")]


class Docs(Struct, forbid_unknown_fields=True):
    """The rule's documentation (`forensics rules explain`, the README catalogue, SARIF)."""

    detects: Annotated[str, Meta(description="Exactly what the query matches.")] = ""
    why: Annotated[str, Meta(description="What it costs a benchmark run.")] = ""
    example: Annotated[str, Meta(description="The record that shows it.")] = ""
    fix: Annotated[
        str,
        Meta(description="What to change; diagnosis shows it while causes.toml has no cause."),
    ] = ""
    false_positives: Annotated[
        str, Meta(description="When it fires although nothing is wrong.")
    ] = ""


class Query(Struct, forbid_unknown_fields=True):
    """The DuckDB SQL that finds the rule's turns."""

    sql: Annotated[
        str,
        Meta(
            description="Returns trajectory_id, turn_index (NULL: the whole episode), message "
            "and evidence, and optionally data (a struct of values diagnosis reads); {name} "
            "for a parameter. Tables and columns: `forensics schema`."
        ),
    ]


class RuleFile(Struct, forbid_unknown_fields=True, kw_only=True):
    """A forensics rule: one TOML file of the rule pack (rules/*.toml) or a --rules directory."""

    id: Annotated[
        str, Meta(min_length=1, description="The rule's id (findings, --max-rate, params).")
    ]
    title: Annotated[str, Meta(description="What goes wrong, in one line.")]
    severity: Severity
    confidence: Annotated[
        Confidence,
        Meta(description="hard: provable from the record alone; heuristic: can be wrong."),
    ]
    cause: Annotated[str, Meta(description="A cause of causes.toml, or a new id.")]
    summary: Annotated[str, Meta(description="What the rule reports, in one sentence.")]
    status: Annotated[
        Status,
        Meta(description="preview: runs, but is not yet measured on the accuracy corpus."),
    ] = "stable"
    brief: Annotated[
        str, Meta(description="The README catalogue's one-liner, when not the summary.")
    ] = ""
    requires: Columns = field(default_factory=list)
    params: dict[ParamName, ParamSpec] = field(default_factory=dict)
    docs: Docs = field(default_factory=Docs)
    query: Query


# What a value must be, in a rule author's words, where its type alone says too little; keys
# are dotted paths with * for a table's own keys (a parameter's name).
_MUST = {
    "requires": 'be a list of column lists, like [["content"]]',
    "params": "be a table of name = { default, doc }",
    "params.*": 'be { default = …, doc = "…" }',
    "params.*.default": "be an integer, number or boolean",
    "params.*.doc": "say what the threshold means",
}
_NAMES = {"params": "a name is lower_snake_case"}
_KINDS = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+|\.\.\.)\]")
_AT = re.compile(r"^(?P<what>.*?)(?: - at `(?P<path>[^`]*)`(?: in `(?P<within>[^`]*)`)?)?$")
_FIELD = re.compile(r"^Object (?P<kind>contains unknown|missing required) field `(?P<key>[^`]*)`$")


class RuleFileError(ValueError):
    """A rule file that does not fit its Structs: the message names the file and the key."""


def convert(data: Any, kind: type[T], where: str) -> T:
    """data (a TOML document) as kind, or RuleFileError naming `where` and the key."""
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:
        raise RuleFileError(f"{where}: {_words(str(exc), data, kind, '', '')}") from None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _bare(kind: Any) -> Any:
    """kind without Annotated[...]."""
    while get_origin(kind) is Annotated:
        kind = get_args(kind)[0]
    return kind


def _fields(kind: Any) -> dict[str, Any]:
    return {f.encode_name: f.type for f in msgspec.structs.fields(kind)}


def _describe(kind: Any) -> str:
    """`must …` for a value of this type."""
    meta = [m for m in get_args(kind)[1:] if isinstance(m, Meta)] if get_origin(kind) else []
    kind = _bare(kind)
    origin = get_origin(kind)
    if origin is Literal:
        return f"be one of {', '.join(map(str, get_args(kind)))}"
    if origin in (Union, types.UnionType):
        names = [_KINDS.get(_bare(k), getattr(k, "__name__", str(k))) for k in get_args(kind)]
        return f"be {', '.join(names[:-1])} or {names[-1]}"
    if origin is list:
        return "be a list"
    if origin is dict or (isinstance(kind, type) and issubclass(kind, Struct)):
        return "be a table"
    if kind is str and any(m.min_length for m in meta):
        return "be a non-empty string"
    if kind is str and any(m.pattern for m in meta):
        return f"be a string matching {' '.join(m.pattern for m in meta if m.pattern)}"
    return f"be {_KINDS.get(kind, getattr(kind, '__name__', str(kind)))}"


def _words(message: str, data: Any, kind: Any, path: str, shape: str) -> str:
    """msgspec's message about data (of type kind, at path) in a rule author's words."""
    at = _AT.match(message)
    assert at is not None  # every string matches: the suffix is optional
    what, steps = at["what"], _STEP.findall(at["within"] or at["path"] or "")
    for name, index in steps:
        kind = _bare(kind)
        if index == "...":  # a table's key: msgspec leaves it out, find the entry it meant
            value_kind = get_args(kind)[1]
            for key, value in data.items() if isinstance(data, dict) else ():
                try:
                    msgspec.convert(value, value_kind)
                except msgspec.ValidationError as inner:  # its path starts at the entry
                    at_key, at_shape = _join(path, key), _join(shape, "*")
                    return _words(str(inner), value, value_kind, at_key, at_shape)
            break
        if index:
            data = data[int(index)] if isinstance(data, list) and int(index) < len(data) else None
            kind, path, shape = get_args(kind)[0], f"{path}[{index}]", f"{shape}[]"
        else:
            data = data.get(name) if isinstance(data, dict) else None
            kind, path, shape = _fields(kind)[name], _join(path, name), _join(shape, name)
    if at["within"]:  # a key of the table at path does not fit its type
        key_kind = get_args(_bare(kind))[0]
        for key in data or ():
            try:
                msgspec.convert(key, key_kind)
            except msgspec.ValidationError:
                return f"{_join(path, key)}: {_NAMES.get(shape, 'a key ' + _describe(key_kind))}"
    if found := _FIELD.match(what):
        key = found["key"]
        if found["kind"] == "contains unknown":
            return f"unknown key {_join(path, key)} (known: {', '.join(_fields(_bare(kind)))})"
        if must := _MUST.get(_join(shape, key)):
            return f"{_join(path, key)} must {must}"
        return f"missing key {key!r}" + (f" in [{path}]" if path else "")
    if what.startswith(("Expected", "Invalid enum value")):
        return f"{path or 'the file'} must {_MUST.get(shape) or _describe(kind)}"
    return f"{path}: {what}" if path else what


def schema() -> dict[str, Any]:
    """The JSON Schema of a rule file (draft 2020-12), as rules/rule.schema.json holds it."""
    generated = msgspec.json.schema(RuleFile)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Generated by python -m forensics.check.rulefile; do not edit.",
        **generated,
    }


def schema_text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
