"""Project settings: `[tool.forensics]` in pyproject.toml, or a forensics.toml.

Searched from the current directory upward (as ruff and pytest do) so a CI job and a developer in
any subdirectory get the same gate. In one directory forensics.toml wins over pyproject.toml; a
pyproject.toml without `[tool.forensics]` is skipped. Command-line flags win over both.

    [tool.forensics]
    fail-on = "high"
    max-rate = { max-tokens = 0.05, think-loop = "10%" }
    allow-unchecked = false      # true: a max-rate rule that can run on no input does not fail
    allow-unreadable = false     # true: an input file with nothing readable does not fail
    max-rejects = 100            # fail above this many rejected records (default: not gated)
    disable = ["user-sim-early-stop"]
    severity = { reasoning-leak = "low" }
    ignore-paths = ["results/smoke", "*.partial.json"]
    params = { think-loop = { min_similarity = 0.6 } }   # rule parameters (rules explain ID)
    max-decompressed-mb = 4096   # a .gz inflating past this is rejected (a zip bomb)
    max-document-mb = 1024       # a JSON document read whole past this is rejected
    max-line-mb = 64             # a longer line of a line format is skipped (a reject)
    max-yaml-aliases = 1000000   # YAML nodes a file may revisit through aliases
    max-records = 2000000        # records (turns, rejects) kept per file; the rest counted
    max-stdin-mb = 4096          # `scan -` reads standard input up to this much
    fuse = true                  # false: each artifact's episodes counted apart (no fusion)
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_type_hints

import msgspec
from msgspec import Meta

from forensics.limits import MIB, Limits
from forensics.schema import SEVERITIES
from forensics.wording import did_you_mean

if TYPE_CHECKING:
    from forensics.check.engine import Rule

CONFIG_FILES = ("forensics.toml", "pyproject.toml")

# schema.SEVERITIES as a type (tests/test_cli_lazy.py keeps the two equal).
Severity = Literal["info", "low", "medium", "high", "critical"]
_ONE_OF_SEVERITIES = f"one of {', '.join(SEVERITIES)}"
_RULE_TABLE = "a table like { rule-id = value }"
_STRINGS = "a list of strings"
_TRUE_OR_FALSE = "true or false"


def _must_be(description: str) -> Meta:
    """What a key must hold, in the words of the error that names it (and of the JSON Schema)."""
    return Meta(description=description)


class Table(msgspec.Struct, forbid_unknown_fields=True, rename="kebab", frozen=True):
    """`[tool.forensics]` as written: every key, what it holds and its default. msgspec checks a
    file against it (`msgspec.json.schema(Table)` is its JSON Schema); the field names are also
    those of the command-line flags that override a key (see parse)."""

    fail_on: Annotated[Severity, _must_be(_ONE_OF_SEVERITIES)] = "info"
    # Rates are checked by parse_rate ("5%" or 0.05), the parser of --max-rate too.
    max_rate: Annotated[dict[str, Any], _must_be(_RULE_TABLE)] = {}
    disable: Annotated[list[str], _must_be(_STRINGS)] = []
    severity: Annotated[
        dict[str, Annotated[Severity, _must_be(_ONE_OF_SEVERITIES)]], _must_be(_RULE_TABLE)
    ] = {}
    ignore_paths: Annotated[list[str], _must_be(_STRINGS)] = []
    max_decompressed_mb: Annotated[int, Meta(ge=1), _must_be("a whole number, 1 or more")] = (
        Limits.max_decompressed_bytes // MIB
    )
    max_document_mb: Annotated[int, Meta(ge=1), _must_be("a whole number, 1 or more")] = (
        Limits.max_document_bytes // MIB
    )
    max_line_mb: Annotated[int, Meta(ge=1), _must_be("a whole number, 1 or more")] = (
        Limits.max_line_bytes // MIB
    )
    max_yaml_aliases: Annotated[int, Meta(ge=0), _must_be("a whole number, 0 or more")] = (
        Limits.max_yaml_aliases
    )
    max_records: Annotated[int, Meta(ge=1), _must_be("a whole number, 1 or more")] = (
        Limits.max_records
    )
    max_stdin_mb: Annotated[int, Meta(ge=1), _must_be("a whole number, 1 or more")] = (
        Limits.max_stdin_bytes // MIB
    )
    # rule id -> parameter -> value; checked against the rules' declarations in Settings.apply
    params: Annotated[
        dict[str, Annotated[dict[str, Any], _must_be("a table like { parameter = value }")]],
        _must_be(_RULE_TABLE),
    ] = {}
    allow_unchecked: Annotated[bool, _must_be(_TRUE_OR_FALSE)] = False
    allow_unreadable: Annotated[bool, _must_be(_TRUE_OR_FALSE)] = False
    max_rejects: Annotated[
        Annotated[int, Meta(ge=0)] | None, _must_be("a whole number, 0 or more")
    ] = None
    fuse: Annotated[bool, _must_be(_TRUE_OR_FALSE)] = True


KEYS = Table.__struct_encode_fields__


class ConfigError(Exception):
    """A configuration that can not be used as written (a usage error: exit code 2)."""


@dataclass(frozen=True)
class Settings:
    source: Path | None = None
    fail_on: str = "info"
    max_rate: dict[str, float] = field(default_factory=dict)
    disable: tuple[str, ...] = ()
    severity: dict[str, str] = field(default_factory=dict)
    ignore_paths: tuple[str, ...] = ()
    # rule id -> parameter -> value; checked against the rules' declarations in apply()
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    # The gate's opt-outs and reject threshold (gate.Policy); flags win over them.
    allow_unchecked: bool = False
    allow_unreadable: bool = False
    max_rejects: int | None = None
    # One trajectory per episode seen in several artifacts (ingest.fusion).
    fuse: bool = True
    # ignore-paths are relative to the directory of the file that names them.
    base: Path = field(default_factory=Path.cwd)
    # Where each key's value came from, by its `[tool.forensics]` name ("max-rate.RULE" per
    # entry of max-rate): "default", the config file, or the command line's flag ("--fail-on").
    origins: dict[str, str] = field(default_factory=dict)

    def where(self) -> str:
        return str(self.source) if self.source else "settings"

    def origin(self, key: str) -> str:
        """Where a key (or a "max-rate.RULE" entry) came from, for an error about its value."""
        return self.origins.get(key) or self.origins.get(key.split(".")[0]) or self.where()

    def shown_source(self, start: Path | None = None) -> str | None:
        """The config file in use, relative to start (default: the working directory) and in
        POSIX form, so the same checkout gives the same bytes anywhere; None without one."""
        if self.source is None:
            return None
        return Path(
            os.path.relpath(self.source.resolve(), (start or Path.cwd()).resolve())
        ).as_posix()

    def apply(self, rules: list[Rule]) -> list[Rule]:
        """The rules to run: disabled ones dropped, severities and parameters overridden."""
        known = {r.id for r in rules}
        for key, ids in (
            ("disable", self.disable),
            ("severity", self.severity),
            ("params", self.params),
        ):
            if unknown := sorted(set(ids) - known):
                said = "; ".join(f"{key} {n}: {no_such_rule(n, known)}" for n in unknown)
                raise ConfigError(f"{self.origin(key)}: {said}")
        return [
            replace(self._with_params(r), severity=self.severity.get(r.id, r.severity))
            for r in rules
            if r.id not in self.disable
        ]

    def _with_params(self, rule: Rule) -> Rule:
        if rule.id not in self.params:
            return rule
        try:
            return rule.with_params(self.params[rule.id], f"params.{rule.id}")
        except ValueError as exc:  # params.ParamError: an unknown name or a wrong type
            raise ConfigError(f"{self.where()}: {exc}") from None

    def ignores(self, path: Path) -> bool:
        """Whether ignore-paths excludes this input file."""
        if not self.ignore_paths:
            return False
        absolute = Path(os.path.abspath(path))
        try:
            rel = PurePosixPath(absolute.relative_to(self.base.resolve()).as_posix())
        except ValueError:
            rel = PurePosixPath(absolute.as_posix())
        return any(_matches(rel, p) for p in self.ignore_paths)


def _matches(rel: PurePosixPath, pattern: str) -> bool:
    """gitignore-like: a pattern with a slash matches the path or one of its directories from
    the base; one without matches any single component. `*` also crosses slashes."""
    pattern = pattern.strip().rstrip("/")
    if "/" in pattern:
        pattern = pattern.lstrip("/")
        candidates = [rel, *list(rel.parents)[:-1]]
        return any(fnmatch.fnmatchcase(str(c), pattern) for c in candidates)
    return any(fnmatch.fnmatchcase(part, pattern) for part in rel.parts)


def parse_rate(text: Any) -> float:
    """0.05, "0.05" or "5%" -> 0.05; a share of trajectories, so within [0, 1]."""
    try:
        if isinstance(text, str) and text.strip().endswith("%"):
            rate = float(text.strip()[:-1]) / 100
        elif isinstance(text, bool):
            raise ValueError
        else:
            rate = float(text)
    except ValueError:
        raise ValueError(f"rate {text!r} is not a number like 0.05 or 5%") from None
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate {text!r} is outside 0..1 (it is a share of trajectories)")
    return rate


def find(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The nearest config file from start upward and its forensics table, or None."""
    directory = (start or Path.cwd()).resolve()
    for d in [directory, *directory.parents]:
        for name in CONFIG_FILES:
            path = d / name
            if not path.is_file():
                continue
            data = _read(path)
            if name == "pyproject.toml":
                table = data.get("tool", {}).get("forensics")
                if table is None:
                    continue
                return path, table
            return path, data
    return None


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def parse(
    table: Any, source: Path | None = None, flags: Mapping[str, Any] | None = None
) -> Settings:
    """Settings from a config table, checked against `Table` so a typo does not pass silently.

    flags: the command line's, by `Table` field name, only those it was given: each wins over
    the key of its name; a table (max-rate) is merged over the file's entry by entry.
    """
    where = str(source) if source else "config"
    written = _checked(table, where)
    max_rate: dict[str, float] = {}
    for rule, value in written.max_rate.items():
        try:
            max_rate[rule] = parse_rate(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: max-rate.{rule}: {exc}") from None
    if both := sorted(set(written.disable) & set(max_rate)):
        raise ConfigError(
            f"{where}: {', '.join(both)}: both disabled and given a max-rate; a disabled rule "
            "never runs, so its rate can not be judged: remove it from one of the two"
        )
    written = msgspec.structs.replace(written, max_rate=max_rate)
    given = {
        name: {**getattr(written, name), **value} if isinstance(value, dict) else value
        for name, value in (flags or {}).items()
    }
    merged = msgspec.structs.replace(written, **given)
    origins = _origins(table if isinstance(table, Mapping) else {}, source, flags or {})
    return Settings(
        source=source,
        fail_on=merged.fail_on,
        max_rate=dict(merged.max_rate),
        disable=tuple(merged.disable),
        severity=dict(merged.severity),
        ignore_paths=tuple(merged.ignore_paths),
        params={rule: dict(values) for rule, values in merged.params.items()},
        limits=Limits(
            max_decompressed_bytes=merged.max_decompressed_mb * MIB,
            max_document_bytes=merged.max_document_mb * MIB,
            max_line_bytes=merged.max_line_mb * MIB,
            max_yaml_aliases=merged.max_yaml_aliases,
            max_records=merged.max_records,
            max_stdin_bytes=merged.max_stdin_mb * MIB,
        ),
        allow_unchecked=merged.allow_unchecked,
        allow_unreadable=merged.allow_unreadable,
        max_rejects=merged.max_rejects,
        fuse=merged.fuse,
        base=source.resolve().parent if source else Path.cwd(),
        origins=origins,
    )


# The command-line flag that sets a key, where it is not the key's own name.
_FLAGS = {"fuse": "--no-fuse"}


def flag_of(key: str) -> str:
    """The command line's flag for a `[tool.forensics]` key ("fail-on" -> "--fail-on")."""
    return _FLAGS.get(key, f"--{key}")


def _origins(
    table: Mapping[str, Any], source: Path | None, flags: Mapping[str, Any]
) -> dict[str, str]:
    """Where each key came from: the flag when the command line gave it, else the file when it
    names the key, else the default. max-rate is merged entry by entry, so its entries too."""
    by_flag = {name.replace("_", "-"): value for name, value in flags.items()}
    where = str(source) if source else "config"
    out: dict[str, str] = {}
    for key in KEYS:
        out[key] = flag_of(key) if key in by_flag else where if key in table else "default"
    for rule in table.get("max-rate", {}) or {}:
        out[f"max-rate.{rule}"] = where
    for rule in by_flag.get("max-rate", {}):
        out[f"max-rate.{rule}"] = "--max-rate"
    return out


def no_such_rule(name: str, known: set[str] | list[str]) -> str:
    """The words for a rule id that names no rule: the ids closest to it, if any; else where to
    find them all (not all of them here: the pack has dozens)."""
    return f"no such rule{did_you_mean(name, known) or '; `forensics rules` lists them all'}"


def choose(settings: Settings, known: list[str], select: Any = (), ignore: Any = ()) -> Settings:
    """The settings with --select/--ignore applied (ids or globs, comma-separated; every rule
    not selected, or ignored, is disabled), and max-rate checked against what will run: an
    unknown rule, or one that does not run, is an error naming where it was given.
    `select`/`ignore`: a string or strings, as the flags take them."""
    chosen = settings
    if select or ignore:
        on = _named(select, known, "--select") if select else set(known)
        off = set(settings.disable) | (set(known) - on) | _named(ignore, known, "--ignore")
        before = settings.origin("disable")
        by = "--select/--ignore" + ("" if before == "default" else f" and {before}")
        chosen = replace(
            settings, disable=tuple(sorted(off)), origins={**settings.origins, "disable": by}
        )
    for rule in sorted(chosen.max_rate):
        where = chosen.origin(f"max-rate.{rule}")
        given = f"--max-rate {rule}" if where == "--max-rate" else f"{where}: max-rate.{rule}"
        if rule not in known:
            raise ConfigError(f"{given}: {no_such_rule(rule, known)}")
        if rule in chosen.disable:
            raise ConfigError(
                f"{given}: the rule does not run (--select, --ignore or disable leave it out), "
                "so its rate can not be judged"
            )
    return chosen


def _named(specs: Any, known: list[str], flag: str) -> set[str]:
    ids: set[str] = set()
    for spec in [specs] if isinstance(specs, str) else specs:
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            hits = fnmatch.filter(known, part)
            if not hits:
                raise ConfigError(f"{flag} {part}: {no_such_rule(part, known)}")
            ids.update(hits)
    return ids


def _checked(table: Any, where: str) -> Table:
    try:
        return msgspec.convert(table, Table)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: {_explained(str(exc), table)}") from None


# Where msgspec found the error: `$.key`, `$.key[...]` (an entry of a table), `$.key[3]`.
_AT = re.compile(r" - at `\$\.([^.\[`]+)(\[\.\.\.\])?")


def _explained(error: str, table: Any) -> str:
    """msgspec's error in the words of the key's declaration (its `_must_be`), naming the key,
    or the entry of a table (`severity.think-loop`), and for an entry the value given."""
    if error.startswith("Object contains unknown field"):
        unknown = sorted(set(table) - set(KEYS))
        said = [f"{k}{did_you_mean(k, KEYS)}" for k in unknown]
        if any("did you mean" in k for k in said):
            return f"unknown key {'; unknown key '.join(said)}"
        return f"unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}"
    at = _AT.search(error)
    if at is None:
        return "[tool.forensics] must be a table"
    key = at[1]
    hint = _HINTS[key]
    if at[2] and isinstance(table[key], dict):
        entry = get_args(get_args(hint)[0])[1]  # Annotated[dict[str, entry], ...]
        for name, value in table[key].items():
            try:
                msgspec.convert(value, entry)
            except msgspec.ValidationError:
                return f"{key}.{name} must be {_description(entry)}, not {value!r}"
    return f"{key} must be {_description(hint)}"


def _description(hint: Any) -> str:
    return next(m.description for m in get_args(hint)[1:] if isinstance(m, Meta) and m.description)


_HINTS = {
    key: get_type_hints(Table, include_extras=True)[name]
    for name, key in zip(Table.__struct_fields__, KEYS, strict=True)
}


def load(
    path: Path | None = None,
    start: Path | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings from an explicit file, else from the nearest config file; defaults if none.
    flags: the command line's, over the file's keys (see parse)."""
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"{path}: no such config file")
        data = _read(path)
        if path.name == "pyproject.toml":
            data = data.get("tool", {}).get("forensics", {})
        return parse(data, path, flags)
    found = find(start)
    if found is None:
        return parse({}, None, flags)
    return parse(found[1], found[0], flags)


def _toml(value: Any) -> str:
    """A value as TOML writes it (strings as JSON strings, which TOML reads the same)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k} = {_toml(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    return str(value)


def describe(settings: Settings, how: str | None = None) -> list[str]:
    """The effective settings as `[tool.forensics]` lines, each with where its value came from
    (`--show-settings`): the config file, a flag, or the default. `how`: how the file was
    chosen ("--config", "--no-config"); by default the nearest from the working directory."""
    if settings.source is not None:
        how = how or "the nearest from the working directory upward"
        head = f"config: {settings.shown_source()} ({how})"
    elif how == "--no-config":
        head = "config: none (--no-config): the defaults and the flags apply"
    else:
        head = (
            f"config: none (no {' or '.join(CONFIG_FILES)} with [tool.forensics] from "
            f"{Path.cwd()} upward): the defaults and the flags apply"
        )
    values: list[tuple[str, Any]] = [
        ("fail-on", settings.fail_on),
        *((f"max-rate.{rule}", rate) for rule, rate in sorted(settings.max_rate.items())),
        ("disable", list(settings.disable)),
        ("severity", dict(sorted(settings.severity.items()))),
        ("ignore-paths", list(settings.ignore_paths)),
        ("params", dict(sorted(settings.params.items()))),
        ("max-decompressed-mb", settings.limits.max_decompressed_bytes // MIB),
        ("max-document-mb", settings.limits.max_document_bytes // MIB),
        ("allow-unchecked", settings.allow_unchecked),
        ("allow-unreadable", settings.allow_unreadable),
        ("max-rejects", settings.max_rejects),
        ("fuse", settings.fuse),
    ]
    if not settings.max_rate:
        values.insert(1, ("max-rate", {}))
    source = settings.shown_source()
    lines = []
    for key, value in values:
        origin = settings.origin(key)
        if settings.source is not None:  # the file as the head names it
            origin = origin.replace(str(settings.source), source or "")
        text = (
            f"{key} = {_toml(value)}"
            if value is not None
            else f"# {key}: not set (rejected records are not gated)"
        )
        lines.append(f"{text:<40} # {origin}")
    return [head, *lines]
