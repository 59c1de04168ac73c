"""What a file format declares about itself, and the detection order built from the declarations.

Each module of `ingest/formats/` declares its formats as `SPECS`, a tuple of `FormatSpec`; a
third-party package adds formats through the entry point group `forensics.formats` (an entry
point names a `FormatSpec`, a sequence of them, or a function returning either). Everything
the rest of the tool knows about a format comes from its declaration: detection and reading
(`forensics.ingest`), the rules it allows (`forensics formats`), whether its gaps in transport
columns are worth telling (`diagnosis.coverage`), the words of the validation plan
(`diagnosis.diagnose`) and the fuzz seeds of the robustness tests.

Detection order: every `claim` is asked first (containers recognised from raw bytes and the
path), then every `sniff` on the decoded head, each pass in ascending `priority`; the first
format that says yes reads the file. The built-in formats use these bands:

  100-599  agent and benchmark logs, each recognised by keys only its harness writes
           (Inspect AI, tau-bench, tau2-bench, Harbor, OpenHands, SWE-agent)
  600-799  API responses and captures (Gemini, cassettes, HAR, LiteLLM, Ollama, request/response
           records, SSE bodies)
  800-899  traces and datasets (ShareGPT, Claude Code, OpenTelemetry, Atropos)
  900      run-metadata sidecars: small objects that a lone API body could resemble
  1000     the text scanner, which takes any text: nothing after it is ever asked

A plugin picks a number in the band it belongs to (below 1000, or it is never reached by text).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forensics.ingest.records import Collector

ENTRY_POINT_GROUP = "forensics.formats"
# The text scanner's priority: it accepts any text, so a format declared after it is never
# detected from text.
TEXT_SCANNER = 1000


@dataclass(frozen=True, kw_only=True, eq=False)
class FormatSpec:
    """One input format, declared in full.

    A field without a default must be declared; `tests/formats/` checks that what is declared
    is also complete (a sentence where words are due, a seed that exists and is detected as the
    format). eq=False: specs are compared by identity (their seeds are a mapping).
    """

    name: str  # the source_format of every row it reads
    description: str  # one line, for `forensics formats`
    detection: str  # how it is recognised, in words
    ingest: Callable[[Path, Collector], int]
    # Lower is asked first (see the module docstring for the bands); ties go by name.
    priority: int
    # The turn columns (schema.RAW_TURNS) the reader fills from what the format defines, beyond
    # the identity columns every reader fills: `forensics formats` derives from them which
    # rules can run on the format. Empty: the format describes a run and fills no turn.
    columns: frozenset[str]
    # A benchmark's own record of its episodes (results, console logs), which never holds the
    # HTTP exchange: a rule that needs transport columns is no news there (diagnosis.coverage).
    benchmark: bool
    # What the validation plan tells the user to scan next ("Scan the new log: ...").
    artifact: str
    # How to rerun a few tasks with the harness that wrote the file, `{tasks}` standing for the
    # task ids joined by rerun_separator; None: no harness whose rerun flag the file names.
    rerun: str | None
    # Fuzz seeds: label -> file (relative to the repository root) detected as this format. The
    # labels name the robustness tests (tests/hostile.py).
    seeds: Mapping[str, str]
    # The head of the file as text -> why it matches, or None.
    sniff: Callable[[str], str | None] | None = None
    # A container format (a zip of JSON members, …) claims its file from the raw first bytes
    # and the path, before text detection would call the file binary.
    claim: Callable[[bytes, Path | None], str | None] | None = None
    # Columns read only from fields outside the format's definition (an agent's `extra`): filled
    # when a writer adds them, so no rule is promised on them.
    extra_columns: frozenset[str] = frozenset()
    rerun_separator: str = " "
    # The distribution a plugin format came from (None: built in).
    origin: str | None = field(default=None)

    def __post_init__(self) -> None:
        if self.sniff is None and self.claim is None:
            raise ValueError(f"format {self.name!r} declares neither sniff nor claim")
        object.__setattr__(self, "columns", frozenset(self.columns))
        object.__setattr__(self, "extra_columns", frozenset(self.extra_columns))
        object.__setattr__(self, "seeds", MappingProxyType(dict(self.seeds)))

    def sniff_text(self, head: str) -> str | None:
        """The sniff verdict; a format that only claims never matches text."""
        return self.sniff(head) if self.sniff is not None else None

    def rerun_hint(self, tasks: Iterable[str]) -> str | None:
        """The rerun command for these tasks, or None when the format names no harness."""
        if self.rerun is None:
            return None
        return self.rerun.format(tasks=self.rerun_separator.join(tasks))


def ordered(specs: Iterable[FormatSpec]) -> list[FormatSpec]:
    """The detection order: by declared priority, then by name. Raises ValueError on a name
    declared twice."""
    specs = list(specs)
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ValueError(f"format {spec.name!r} is declared twice")
        seen.add(spec.name)
    return sorted(specs, key=lambda s: (s.priority, s.name))


class FormatPluginWarning(UserWarning):
    """A format plugin could not be loaded; the scan goes on without it."""


def _specs_of(value: Any) -> list[FormatSpec]:
    if callable(value) and not isinstance(value, FormatSpec):
        value = value()
    if isinstance(value, FormatSpec):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
        items = list(value)
        if items and all(isinstance(v, FormatSpec) for v in items):
            return items
    raise TypeError(
        f"expected a FormatSpec, a sequence of them or a function returning one, "
        f"got {type(value).__name__}"
    )


def load_plugins(taken: Iterable[str] = ()) -> list[FormatSpec]:
    """The formats that installed packages register under ENTRY_POINT_GROUP.

    taken: names already declared (the built-in formats): a plugin cannot replace one. A plugin
    that fails to import, declares something else or reuses a name becomes a
    FormatPluginWarning naming it and its package; the others load.
    """
    names = set(taken)
    out: list[FormatSpec] = []
    try:
        points = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # broken metadata of some installed package
        warnings.warn(
            f"format plugins not loaded: {type(exc).__name__}: {exc}", FormatPluginWarning, 2
        )
        return out
    for point in points:
        dist = point.dist.name if point.dist is not None else "an unknown package"
        where = f"format plugin {point.name!r} ({point.value}, from {dist})"
        try:
            specs = _specs_of(point.load())
        except Exception as exc:  # any failure of third-party code: warn, never crash the scan
            warnings.warn(
                f"{where} not loaded: {type(exc).__name__}: {exc}", FormatPluginWarning, 2
            )
            continue
        for spec in specs:
            if spec.name in names:
                warnings.warn(
                    f"{where} not loaded: format {spec.name!r} is already declared",
                    FormatPluginWarning,
                    2,
                )
                continue
            if spec.claim is None and spec.priority >= TEXT_SCANNER:
                warnings.warn(
                    f"{where}: format {spec.name!r} has priority {spec.priority}, at or after "
                    f"the text scanner ({TEXT_SCANNER}), which takes any text first: it will "
                    "never be detected",
                    FormatPluginWarning,
                    2,
                )
            names.add(spec.name)
            out.append(spec if spec.origin else dataclasses.replace(spec, origin=dist))
    return out
