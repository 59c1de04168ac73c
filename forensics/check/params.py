"""Rule parameters: the thresholds a rule declares in its TOML and its SQL names as {name}.

    [params]
    min_similarity = { default = 0.5, doc = "Jaccard similarity at which a turn repeats" }

A parameter's type is its default's: integer, float or boolean. Only those three exist, and
every value is rendered as a SQL literal by this module, never pasted as text, so an override
in a config file or a fixture can change a threshold but can not change the query.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

Value = bool | int | float

# {name} in a rule's SQL; only an identifier between the braces, so DuckDB struct literals
# ({'k': v}) and JSON text in string literals ({"name", "arguments"}) are never mistaken for one.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
NAME = re.compile(r"[a-z][a-z0-9_]*")
PARAM_KEYS = ("default", "doc")
_KINDS = {bool: "a boolean", int: "an integer", float: "a number"}


class ParamError(ValueError):
    """A parameter declaration or value that can not be used (the message says where)."""


@dataclass(frozen=True)
class Param:
    name: str
    default: Value
    doc: str
    value: Value

    @property
    def kind(self) -> type:
        return type(self.default)

    @property
    def overridden(self) -> bool:
        return self.value != self.default

    def literal(self) -> str:
        """The value as DuckDB reads it: the same text the threshold had when it was inline."""
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return repr(self.value)

    def with_value(self, value: Any) -> Param:
        return replace(self, value=coerce(self, value))


def coerce(param: Param, value: Any) -> Value:
    """`value` checked against the parameter's type; ints are accepted where floats are."""
    kind = param.kind
    ok = type(value) is kind or (kind is float and type(value) is int)
    if not ok:
        raise ParamError(
            f"{param.name} must be {_KINDS[kind]} (like its default {param.default!r}), "
            f"not {value!r}"
        )
    if kind is float:
        value = float(value)
        if not math.isfinite(value):
            raise ParamError(f"{param.name} must be a finite number, not {value!r}")
    return value


def declare(table: Any, where: str) -> dict[str, Param]:
    """The [params] table of a rule file, checked strictly; `where` names the file."""
    if not isinstance(table, dict):
        raise ParamError(f"{where}: [params] must be a table of name = {{ default, doc }}")
    params: dict[str, Param] = {}
    for name, spec in table.items():
        if not NAME.fullmatch(name):
            raise ParamError(f"{where}: params.{name}: a name is lower_snake_case")
        if not isinstance(spec, dict):
            raise ParamError(f'{where}: params.{name} must be {{ default = …, doc = "…" }}')
        if unknown := sorted(set(spec) - set(PARAM_KEYS)):
            raise ParamError(
                f"{where}: unknown key params.{name}.{unknown[0]} (known: {', '.join(PARAM_KEYS)})"
            )
        default, doc = spec.get("default"), spec.get("doc")
        if not isinstance(default, bool | int | float) or type(default) not in _KINDS:
            raise ParamError(
                f"{where}: params.{name}.default must be an integer, number or boolean"
            )
        if isinstance(default, float) and not math.isfinite(default):
            raise ParamError(f"{where}: params.{name}.default must be finite")
        if not isinstance(doc, str) or not doc.strip():
            raise ParamError(f"{where}: params.{name}.doc must say what the threshold means")
        params[name] = Param(name, default, " ".join(doc.split()), default)
    return params


def placeholders(sql: str) -> set[str]:
    return set(PLACEHOLDER.findall(sql))


def check_sql(sql: str, params: dict[str, Param], where: str) -> None:
    """Every {name} in the SQL is declared and every declared parameter is used: a typo on
    either side fails when the rule loads, not as a silently default threshold."""
    used = placeholders(sql)
    if undeclared := sorted(used - set(params)):
        raise ParamError(
            f"{where}: the query uses {{{undeclared[0]}}} but [params] has no such key"
        )
    if unused := sorted(set(params) - used):
        raise ParamError(f"{where}: params.{unused[0]} is declared but the query never uses it")


def render(sql: str, params: dict[str, Param]) -> str:
    """The SQL with each {name} replaced by the parameter's current value as a literal."""
    if not params:
        return sql
    return PLACEHOLDER.sub(lambda m: params[m.group(1)].literal(), sql)


def override(params: dict[str, Param], values: Any, where: str) -> dict[str, Param]:
    """The parameters with `values` ({name: value}) applied; unknown names and wrong types
    raise ParamError naming `where`."""
    if not isinstance(values, dict):
        raise ParamError(f"{where} must be a table of parameter = value")
    out = dict(params)
    for name, value in values.items():
        if name not in params:
            known = ", ".join(sorted(params)) or "none"
            raise ParamError(f"{where}: unknown parameter {name!r} (known: {known})")
        try:
            out[name] = params[name].with_value(value)
        except ParamError as exc:
            raise ParamError(f"{where}: {exc}") from None
    return out
