"""Root causes as data: rules/causes.toml and rules/causes/*.toml, merged with the cause files of
each --rules directory.

A cause groups the findings of the rules that point at it, names the downstream rules it
explains, and holds fix templates whose {parameters} it declares beside them: each parameter
is a DuckDB query over the cause's findings, turns and trajectories (diagnosis/facts.py runs
them). A file may also declare parameters every cause gets (`[params]`), SQL macros the
queries share (`[macro.NAME]`) and lookup tables of model families (`[lookup.NAME]`).

Files are read strictly by msgspec (an unknown key names file and key; every {name} a fix
names must be a declared parameter). A later directory's cause with the same id replaces the
earlier one but keeps the parameters it does not redeclare; new ids add; macros, lookups and
common parameters merge by name. A rule whose cause no file defines gets a cause of its own
built from the rule (title, docs.fix), so a new rule needs no causes.toml entry to be diagnosed.
"""

from __future__ import annotations

import re
import string
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

import msgspec

from forensics import linear
from forensics.check import rulefile
from forensics.check.engine import CAUSES_FILE, Rule, RuleError

# Whose failure a cause is: "infra" (plumbing: configuration, parsers, providers, the harness,
# the user simulator) or "model" (what the model did with a working setup). A cause no file
# classes is "unclassified", and the score split says so instead of guessing.
SCORE_CLASSES = ("infra", "model")
UNCLASSIFIED = "unclassified"
# Causes no file orders come after every declared one.
FALLBACK_ORDER = 99
# A parameter name; one that starts with "_" is a step other parameters read (getvariable),
# never shown and never named by a fix.
PARAM_NAME = re.compile(r"[a-z_][a-z0-9_]*")
MACRO_NAME = re.compile(r"[a-z][a-z0-9_]*")
# A directory of cause files beside causes.toml, one cause per file.
CAUSES_DIR = "causes"

Text = Annotated[str, msgspec.Meta(min_length=1)]
Scalar = str | int | float | bool


# --- The file schema: msgspec Structs, converted as rule files are (check/rulefile.py) ------


class ParamTable(msgspec.Struct, forbid_unknown_fields=True):
    """`name = { sql = "…", default = … }`; `name = "select …"` is short for `{ sql = … }`."""

    sql: Text
    # The value when the query returns NULL (or no row); without one the fact is left out.
    default: Scalar | None = None


class FixEntry(msgspec.Struct, forbid_unknown_fields=True):
    action: str
    detail: str
    # A parameter: the fix is given only when it holds (is truthy) in the data.
    when: str = ""


class MacroEntry(msgspec.Struct, forbid_unknown_fields=True):
    """A DuckDB macro: CREATE MACRO name(args) AS sql."""

    sql: Text
    args: list[str] = []


class CauseEntry(msgspec.Struct, forbid_unknown_fields=True, rename={"score_class": "class"}):
    id: Text
    title: Text
    order: int
    explains: list[str] = []
    validate: str = ""
    followup: str = ""
    rules_to_zero: list[str] = []
    fix: list[FixEntry] = []
    score_class: str = UNCLASSIFIED
    params: dict[str, ParamTable] = {}

    def __post_init__(self) -> None:
        if self.score_class not in (*SCORE_CLASSES, UNCLASSIFIED):
            raise ValueError(f"class must be one of {', '.join(SCORE_CLASSES)}")


class CauseFile(msgspec.Struct, forbid_unknown_fields=True):
    """A cause file: rules/causes.toml, rules/causes/*.toml or those of a --rules directory."""

    cause: list[CauseEntry] = []
    params: dict[str, ParamTable] = {}
    macro: dict[str, MacroEntry] = {}
    lookup: dict[str, dict[str, str]] = {}


# --- What the rest of diagnosis reads -------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """A value fix texts name: the query that computes it, and where it was declared."""

    name: str
    sql: str
    default: Scalar | None
    source: str

    @property
    def hidden(self) -> bool:
        return self.name.startswith("_")


@dataclass
class CauseSpec:
    id: str
    title: str
    order: int
    explains: list[str]
    validate: str
    rules_to_zero: list[str]
    fixes: list[dict[str, str]]
    # A last validation step for this cause (what to check by hand after the rerun), if any.
    followup: str = ""
    # Built from a rule because no causes.toml defines it (see fallback()).
    fallback: bool = field(default=False, compare=False)
    score_class: str = UNCLASSIFIED
    # The parameters its fixes name, in the order they are computed (beyond the common ones).
    params: dict[str, Param] = field(default_factory=dict, compare=False)
    # The file that declared it ("" for a fallback).
    source: str = field(default="", compare=False)


@dataclass(frozen=True)
class Macro:
    name: str
    args: tuple[str, ...]
    sql: str
    source: str


@dataclass
class CausePack:
    """Every cause, with what their parameter queries share."""

    causes: dict[str, CauseSpec] = field(default_factory=dict)
    # Parameters every cause gets, computed before its own.
    common: dict[str, Param] = field(default_factory=dict)
    macros: dict[str, Macro] = field(default_factory=dict)
    # name -> [(pattern, value)], the first pattern that matches (case-insensitive) wins.
    lookups: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def update(self, other: CausePack) -> None:
        """`other` (a later file) over this one: same names replace, new names add; a cause
        that replaces another keeps the parameters it does not redeclare."""
        for cid, spec in other.causes.items():
            if cid in self.causes:
                spec = replace(spec, params={**self.causes[cid].params, **spec.params})
            self.causes[cid] = spec
        self.common.update(other.common)
        self.macros.update(other.macros)
        self.lookups.update(other.lookups)

    def params_of(self, spec: CauseSpec) -> dict[str, Param]:
        """The parameters computed for a cause: the common ones, then its own (which may
        redefine a common one)."""
        return {**self.common, **spec.params}

    def lookup(self, table: str, subject: str | None) -> str | None:
        """The value of the first pattern of a lookup table that `subject` matches."""
        if not subject:
            return None
        for pattern, value in self.lookups.get(table, []):
            if _lookup_pattern(pattern).search(subject):
                return value
        return None


@lru_cache(maxsize=256)
def _lookup_pattern(pattern: str) -> linear.Pattern:
    # RE2, as the rules' SQL runs them: the subject is a model name read from a log.
    return linear.compile(f"(?i:{pattern})")


def _params(table: dict[str, ParamTable], where: str, key: str) -> dict[str, Param]:
    out: dict[str, Param] = {}
    for name, entry in table.items():
        if not PARAM_NAME.fullmatch(name):
            raise RuleError(f"{where}: {key}.{name}: a parameter name is lower_snake_case")
        if not entry.sql.strip():
            raise RuleError(f"{where}: {key}.{name}: the query is empty")
        out[name] = Param(name, entry.sql, entry.default, where)
    return out


def _cause(entry: CauseEntry, where: str) -> CauseSpec:
    fixes = []
    for fix in entry.fix:
        fixes.append({"action": fix.action, "detail": fix.detail})
        if fix.when:
            fixes[-1]["when"] = fix.when
    return CauseSpec(
        id=entry.id,
        title=entry.title,
        order=entry.order,
        explains=list(entry.explains),
        validate=entry.validate,
        rules_to_zero=list(entry.rules_to_zero),
        fixes=fixes,
        followup=entry.followup,
        score_class=entry.score_class,
        params=_params(entry.params, where, f"cause {entry.id}: params"),
        source=where,
    )


def read_pack(path: Path) -> CausePack:
    """One cause file, strictly checked. Parsed once per content: every scan reads the pack's
    file, and a copy of what it holds is handed out (merging must not change the cache)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: {exc}") from None
    parsed = _parsed(str(path), text)
    return CausePack(
        dict(parsed.causes), dict(parsed.common), dict(parsed.macros), dict(parsed.lookups)
    )


@lru_cache(maxsize=16)
def _parsed(where: str, text: str) -> CausePack:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{where}: {exc}") from None
    try:
        data = rulefile.convert(_spelt_out(raw), CauseFile, where)
    except rulefile.RuleFileError as exc:
        raise RuleError(str(exc)) from None
    pack = CausePack(common=_params(data.params, where, "params"))
    for name, macro in data.macro.items():
        if not MACRO_NAME.fullmatch(name) or not all(MACRO_NAME.fullmatch(a) for a in macro.args):
            raise RuleError(f"{where}: macro.{name}: names are lower_snake_case")
        pack.macros[name] = Macro(name, tuple(macro.args), macro.sql, where)
    for name, table in data.lookup.items():
        for pattern in table:
            try:
                _lookup_pattern(pattern)
            except linear.error as exc:
                raise RuleError(f"{where}: lookup.{name}: {pattern!r}: {exc}") from None
        pack.lookups[name] = list(table.items())
    for entry in data.cause:
        spec = _cause(entry, where)
        if spec.id in pack.causes:
            raise RuleError(f"{where}: cause {spec.id} is defined twice")
        pack.causes[spec.id] = spec
    return pack


def _spelt_out(raw: dict[str, Any]) -> dict[str, Any]:
    """The document with each `name = "select …"` written as `name = { sql = "select …" }`."""

    def tables(params: Any) -> Any:
        if not isinstance(params, dict):
            return params
        return {k: {"sql": v} if isinstance(v, str) else v for k, v in params.items()}

    out = dict(raw)
    if "params" in out:
        out["params"] = tables(out["params"])
    if isinstance(out.get("cause"), list):
        out["cause"] = [
            {**c, "params": tables(c["params"])} if isinstance(c, dict) and "params" in c else c
            for c in out["cause"]
        ]
    return out


def read_causes(path: Path) -> dict[str, CauseSpec]:
    """The causes of one file, strictly checked."""
    return read_pack(path).causes


def cause_files(directory: Path) -> list[Path]:
    """The cause files of a rule directory: causes.toml, then causes/*.toml (one file per cause,
    as `forensics rules new` writes them), by name."""
    files = [directory / CAUSES_FILE] if (directory / CAUSES_FILE).is_file() else []
    return files + sorted(p for p in (directory / CAUSES_DIR).glob("*.toml") if p.is_file())


def load_pack(rules_dirs: Path | Sequence[Path | str]) -> CausePack:
    """The cause files of each directory, in order (see CausePack.update). Within a directory a
    cause is defined once; a directory without cause files contributes nothing."""
    dirs = [rules_dirs] if isinstance(rules_dirs, Path | str) else rules_dirs
    merged = CausePack()
    for directory in dirs:
        own = CausePack()
        where: dict[str, Path] = {}
        for path in cause_files(Path(directory)):
            pack = read_pack(path)
            for cid in pack.causes:
                if cid in where:
                    raise RuleError(f"{path}: cause {cid} is defined in {where[cid]} already")
                where[cid] = path
            own.update(pack)
        merged.update(own)
    return merged


def load_causes(rules_dirs: Path | Sequence[Path | str]) -> dict[str, CauseSpec]:
    """The merged causes of the directories' causes.toml files."""
    return load_pack(rules_dirs).causes


def _literal(text: str) -> str:
    """Text for a fix template that has no parameters: braces stay braces."""
    return text.replace("{", "{{").replace("}", "}}")


def fallback(cause_id: str, rules: Iterable[Rule]) -> CauseSpec:
    """A cause for rules whose cause no causes.toml defines: the first rule's title, its
    documented fix as the one fix, and those rules to bring to zero."""
    own = sorted((r for r in rules if r.cause == cause_id), key=lambda r: r.id)
    first = own[0] if own else None
    fixes = []
    if first:
        documented = " ".join(first.docs.get("fix", "").split())
        fixes.append(
            {
                "action": _literal(f"Follow the fix documented for {first.id}"),
                "detail": _literal(documented or f"See `forensics rules explain {first.id}`."),
            }
        )
    return CauseSpec(
        id=cause_id,
        title=first.title if first else cause_id,
        order=FALLBACK_ORDER,
        explains=[],
        validate=f"no {', '.join(r.id for r in own)} finding remains" if own else "",
        rules_to_zero=[r.id for r in own],
        fixes=fixes,
        fallback=True,
    )


def named(template: str) -> set[str]:
    """The parameters a fix template names ({name}, {name:,}, {name!r})."""
    return {
        re.split(r"[.\[]", field_name, maxsplit=1)[0]
        for _, field_name, _, _ in string.Formatter().parse(template)
        if field_name is not None
    }


def check_templates(pack: CausePack) -> None:
    """Every {name} and `when` of every fix is a parameter the cause computes: a typo fails
    when the files load, not as "<name?>" in a report."""
    for spec in pack.causes.values():
        declared = {n for n, p in pack.params_of(spec).items() if not p.hidden}
        for i, fix in enumerate(spec.fixes, 1):
            try:
                used = named(fix["action"]) | named(fix["detail"])
            except ValueError as exc:  # a lone { or }
                raise RuleError(f"{spec.source}: cause {spec.id}: fix {i}: {exc}") from None
            if fix.get("when"):
                used.add(fix["when"])
            if missing := sorted(used - declared):
                raise RuleError(
                    f"{spec.source}: cause {spec.id}: fix {i} names {missing[0]}, which is not "
                    f"a parameter of the cause (declared: {', '.join(sorted(declared))})"
                )


def cause_pack(rules: Sequence[Rule], rules_dirs: Sequence[Path | str] = ()) -> CausePack:
    """Every cause the rules point at, plus every declared one: the default pack's causes.toml,
    then those of the directories the rules were loaded from, then the given ones; a fallback
    for each cause no file defines."""
    dirs: list[str] = []
    for d in [*(d for r in rules for d in r.pack_dirs), *map(str, rules_dirs)]:
        if d not in dirs:
            dirs.append(d)
    pack = load_pack(dirs)
    for cause_id in sorted({r.cause for r in rules} - set(pack.causes)):
        pack.causes[cause_id] = fallback(cause_id, rules)
    check_templates(pack)
    return pack


def cause_specs(
    rules: Sequence[Rule], rules_dirs: Sequence[Path | str] = ()
) -> dict[str, CauseSpec]:
    """The causes of cause_pack()."""
    return cause_pack(rules, rules_dirs).causes
