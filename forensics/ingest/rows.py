"""Rows checked against the table schema as they are made.

Inputs are untrusted: a field of any record may hold any JSON value. A row is built from the
schema's own column list and every value is checked against the column's Arrow type before the
row is kept, so one wrong-typed value rejects its record instead of failing the whole table
when it is converted to Arrow. The checks are exactly what Arrow would refuse, plus what it
would accept and corrupt later (lone surrogates, NaN rewards).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pyarrow as pa

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

Check = Callable[[Any], str | None]  # value -> why it does not fit, or None


class BadValue(Exception):
    """A value does not fit its column; the message names the column and the problem."""


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, for messages a user reads."""
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    names |= {dict: "object", list: "array", tuple: "array", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _text(value: Any) -> str | None:
    if type(value) is not str:
        return f"expected a string, got {json_type(value)}"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string that is not valid Unicode (a lone surrogate)"
    return None


def _int(value: Any) -> str | None:
    if type(value) is not int:
        return f"expected an integer, got {json_type(value)}"
    if not INT64_MIN <= value <= INT64_MAX:
        return "an integer out of the 64-bit range"
    return None


def _float(value: Any) -> str | None:
    if type(value) not in (int, float):
        return f"expected a number, got {json_type(value)}"
    if not math.isfinite(value) or abs(value) > 1.7e308:
        return "not a finite number"
    return None


def _bool(value: Any) -> str | None:
    return None if type(value) is bool else f"expected a boolean, got {json_type(value)}"


def _checker(arrow_type: pa.DataType) -> Check:
    if pa.types.is_string(arrow_type):
        return _text
    if pa.types.is_int64(arrow_type):
        return _int
    if pa.types.is_float64(arrow_type):
        return _float
    if pa.types.is_boolean(arrow_type):
        return _bool
    if pa.types.is_list(arrow_type):
        item = _checker(arrow_type.value_type)

        def items(value: Any) -> str | None:
            if not isinstance(value, list | tuple):
                return f"expected an array, got {json_type(value)}"
            for i, v in enumerate(value):
                if v is not None and (why := item(v)):
                    return f"[{i}]: {why}"
            return None

        return items
    if pa.types.is_struct(arrow_type):
        fields = {f.name: _checker(f.type) for f in arrow_type}

        def struct(value: Any) -> str | None:
            if not isinstance(value, dict):
                return f"expected an object, got {json_type(value)}"
            for key, v in value.items():
                check = fields.get(key)
                if check is None:
                    return f"unexpected field {key!r}"
                if v is not None and (why := check(v)):
                    return f".{key}: {why}"
            return None

        return struct
    raise TypeError(f"no check for Arrow type {arrow_type}")


class RowMaker:
    """Rows of one table: `blank()` has every column, `check()` proves each value fits."""

    def __init__(self, schema: pa.Schema) -> None:
        self.names = tuple(schema.names)
        self._checks = tuple((f.name, _checker(f.type)) for f in schema)

    def blank(self) -> dict[str, Any]:
        return dict.fromkeys(self.names)

    def check(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row itself when every value fits its column; else BadValue naming the column."""
        if len(row) != len(self.names):
            unknown = sorted(row.keys() - set(self.names))
            raise ValueError(f"unknown columns: {unknown}")  # a bug in a reader, not the input
        for name, check in self._checks:
            value = row[name]
            if value is not None and (why := check(value)):
                raise BadValue(f"{name}: {why}")
        return row


def clean_text(text: str) -> str:
    """Text that is always valid UTF-8 (lone surrogates replaced), for reject reasons."""
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")
