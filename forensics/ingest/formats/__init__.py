"""File formats: one module per artifact format, each reading its files into episodes.

Owns: how a format is recognised and read, and its declaration: every module here declares
`SPECS`, a tuple of `registry.FormatSpec`, and the registry in `forensics.ingest` is built from
them (a module whose name starts with `_` is a helper and declares nothing). May import
`ingest.api`, `ingest.parse`, `ingest.registry`, the table builders (`ingest.records`,
`ingest.rows`, `ingest.jsonrecords`) and the core (`schema`, `markers`, `limits`); never
`check`, `diagnosis` or anything downstream.
"""

from __future__ import annotations

import importlib
import pkgutil

from forensics.ingest.registry import FormatSpec


def builtin_specs() -> list[FormatSpec]:
    """The declarations of every format module of this package, in module name order.

    Adding a format is adding its module: nothing else lists it. Raises TypeError for a module
    that declares no SPECS, so a format cannot drop out of detection unnoticed.
    """
    specs: list[FormatSpec] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        declared = getattr(module, "SPECS", None)
        if not isinstance(declared, tuple) or not all(isinstance(s, FormatSpec) for s in declared):
            raise TypeError(f"{module.__name__} declares no SPECS (a tuple of FormatSpec)")
        specs.extend(declared)
    return specs
