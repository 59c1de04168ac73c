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
    fuse = true                  # false: each artifact's episodes counted apart (no fusion)
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from forensics.limits import MIB, Limits
from forensics.schema import SEVERITIES

if TYPE_CHECKING:
    from forensics.check.engine import Rule

CONFIG_FILES = ("forensics.toml", "pyproject.toml")
KEYS = (
    "fail-on",
    "max-rate",
    "disable",
    "severity",
    "ignore-paths",
    "max-decompressed-mb",
    "max-document-mb",
    "params",
    "allow-unchecked",
    "allow-unreadable",
    "max-rejects",
    "fuse",
)


class ConfigError(Exception):
    """A configuration that can not be used as written (a usage error: exit code 2)."""


@dataclass(frozen=True)
class Settings:
    source: Path | None = None
    fail_on: str | None = None
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

    def with_limits(self, decompressed_mb: int | None, document_mb: int | None) -> Settings:
        """These settings with the size caps the command line gives (None: keep)."""
        limits = self.limits
        if decompressed_mb is not None:
            limits = replace(limits, max_decompressed_bytes=decompressed_mb * MIB)
        if document_mb is not None:
            limits = replace(limits, max_document_bytes=document_mb * MIB)
        return replace(self, limits=limits)

    def where(self) -> str:
        return str(self.source) if self.source else "settings"

    def apply(self, rules: list[Rule]) -> list[Rule]:
        """The rules to run: disabled ones dropped, severities and parameters overridden."""
        known = {r.id for r in rules}
        for key, ids in (
            ("disable", self.disable),
            ("severity", self.severity),
            ("params", self.params),
        ):
            if unknown := sorted(set(ids) - known):
                raise ConfigError(
                    f"{self.where()}: {key}: unknown rule(s) {', '.join(unknown)}; "
                    f"known: {', '.join(sorted(known))}"
                )
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


def parse(table: dict[str, Any], source: Path | None = None) -> Settings:
    """Settings from a config table; every key is checked so a typo does not pass silently."""
    where = str(source) if source else "config"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.forensics] must be a table")
    if unknown := sorted(set(table) - set(KEYS)):
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    fail_on = table.get("fail-on")
    if fail_on is not None and fail_on not in SEVERITIES:
        raise ConfigError(f"{where}: fail-on must be one of {', '.join(SEVERITIES)}")
    max_rate: dict[str, float] = {}
    for rule, value in _table(table, "max-rate", where).items():
        try:
            max_rate[rule] = parse_rate(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: max-rate.{rule}: {exc}") from None
    severity = _table(table, "severity", where)
    for rule, value in severity.items():
        if value not in SEVERITIES:
            raise ConfigError(
                f"{where}: severity.{rule} must be one of {', '.join(SEVERITIES)}, not {value!r}"
            )
    disable = _strings(table, "disable", where)
    if both := sorted(set(disable) & set(max_rate)):
        raise ConfigError(
            f"{where}: {', '.join(both)}: both disabled and given a max-rate; a disabled rule "
            "never runs, so its rate can not be judged: remove it from one of the two"
        )
    params = _table(table, "params", where)
    for rule, values in params.items():
        if not isinstance(values, dict):
            raise ConfigError(
                f"{where}: params.{rule} must be a table like {{ parameter = value }}"
            )
    return Settings(
        source=source,
        fail_on=fail_on,
        max_rate=max_rate,
        disable=tuple(disable),
        severity=dict(severity),
        ignore_paths=tuple(_strings(table, "ignore-paths", where)),
        params={rule: dict(values) for rule, values in params.items()},
        limits=Limits(
            max_decompressed_bytes=_mib(table, "max-decompressed-mb", where)
            or Limits.max_decompressed_bytes,
            max_document_bytes=_mib(table, "max-document-mb", where) or Limits.max_document_bytes,
        ),
        allow_unchecked=_bool(table, "allow-unchecked", where),
        allow_unreadable=_bool(table, "allow-unreadable", where),
        max_rejects=_count(table, "max-rejects", where),
        fuse=_bool(table, "fuse", where, default=True),
        base=source.resolve().parent if source else Path.cwd(),
    )


def _bool(table: dict[str, Any], key: str, where: str, default: bool = False) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false")
    return value


def _count(table: dict[str, Any], key: str, where: str, least: int = 0) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if type(value) is not int or value < least:
        raise ConfigError(f"{where}: {key} must be a whole number, {least} or more")
    return value


def _mib(table: dict[str, Any], key: str, where: str) -> int | None:
    value = _count(table, key, where, least=1)
    return None if value is None else value * MIB


def _table(table: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key} must be a table like {{ rule-id = value }}")
    return value


def _strings(table: dict[str, Any], key: str, where: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return value


def load(path: Path | None = None, start: Path | None = None) -> Settings:
    """Settings from an explicit file, else from the nearest config file; defaults if none."""
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"{path}: no such config file")
        data = _read(path)
        if path.name == "pyproject.toml":
            data = data.get("tool", {}).get("forensics", {})
        return parse(data, path)
    found = find(start)
    if found is None:
        return Settings()
    return parse(found[1], found[0])
