"""Ingest: files in, tables out. Each file's format is detected from its first bytes.

The formats are declared in their own modules (`ingest/formats/`, each a `registry.FormatSpec`)
or by installed packages (entry point group `forensics.formats`); FORMATS lists them in the
order detection asks them.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from forensics import interrupts, progress
from forensics.ingest import companions, formats, fusion
from forensics.ingest.formats import sidecars
from forensics.ingest.parse import files, jsonwalk
from forensics.ingest.records import NESTED_TOO_DEEPLY, Collector
from forensics.ingest.registry import TEXT_SCANNER, FormatSpec, load_plugins, ordered
from forensics.ingest.rows import clean_text

_BUILTIN = formats.builtin_specs()
# Every format in detection order (registry.ordered: declared priority, then name): the built-in
# declarations and the formats installed packages register, loaded once, here.
FORMATS: list[FormatSpec] = ordered(
    [*_BUILTIN, *load_plugins(taken=(spec.name for spec in _BUILTIN))]
)


def spec_of(name: str | None) -> FormatSpec | None:
    """The declaration of a format by name (a source_format), or None for an unknown one."""
    return next((spec for spec in FORMATS if spec.name == name), None)


@dataclass
class FileReport:
    path: str
    format: str | None
    reason: str
    records: int
    # What ingest says about a file it read without rows (an empty checkpoint, run metadata).
    note: str | None = None
    # The file describes a run rather than holds its episodes: no rows is no failure.
    metadata: bool = False
    # Plainly not an agent artifact (companions.py): the scan lists it as skipped, with reason.
    skipped: bool = False


@dataclass
class Ingested:
    turns: pa.Table
    trajectories: pa.Table
    rejects: pa.Table
    files: list[FileReport]
    # (path, reason) of entries a directory walk passed over: hidden, not artifacts, outputs.
    skipped: list[tuple[str, str]] = field(default_factory=list)


def detect(head: bytes, path: Path | None = None) -> tuple[FormatSpec | None, str]:
    """The format of a file from its first bytes (and its path, for containers), and the
    reason for the verdict."""
    for fmt in FORMATS:
        try:
            why = fmt.claim(head, path) if fmt.claim is not None else None
        except Exception:  # a claim that fails on this head: that format does not claim it
            continue
        if why is not None:
            return fmt, why
    if not head.strip():
        return None, "empty file"
    if b"\x00" in head:
        return None, "binary file (NUL bytes), not a log or JSON"
    text = head.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(8, len(text) // 100):
        return None, "binary file (mostly invalid UTF-8), not a log or JSON"
    # A first record cut short still shows its keys (the sniffers read a cut head): asked
    # first as it is, and only if no reader of records knows it, past the broken lines.
    opens = text.lstrip("\ufeff \t\r\n")[:1] in ("{", "[")
    if opens and (found := _sniff(text, text_scanner=False)) is not None:
        return found
    return _sniff(jsonwalk.skip_broken_lead(text)) or (None, "unknown format")


def _sniff(text: str, *, text_scanner: bool = True) -> tuple[FormatSpec, str] | None:
    for fmt in FORMATS:
        if not text_scanner and fmt.priority >= TEXT_SCANNER:
            continue
        try:
            why = fmt.sniff_text(text)
        except Exception:  # a sniffer that fails on this head: that format does not know it
            continue
        if why is not None:
            return fmt, why
    return None


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Parsed JSON holds no reference cycles, nor do the rows built from it, yet every dict
    parsed would trigger the cyclic collector, which re-walks all the rows collected so far: a
    fifth of the ingest time on large captures. Reference counting still frees everything (a
    cycle an ingester did make waits for the collector to be back); the collector's previous
    state is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def ingest(
    paths: list[str],
    *,
    exclude: list[Path] | None = None,
    limits: files.Limits | None = None,
    fuse: bool = True,
) -> Ingested:
    """Read every file named by paths (files, directories, globs) into the tables.

    exclude: the tool's own outputs, skipped in directory walks; fuse: one trajectory per
    episode seen in several artifacts (fusion). Raises files.InputError only for a path that
    does not exist.
    """
    return read(files.expand(paths, exclude), limits=limits, fuse=fuse)


def read(
    expansion: files.Expansion,
    *,
    limits: files.Limits | None = None,
    fuse: bool = True,
    sink: Callable[[pa.RecordBatch], None] | None = None,
) -> Ingested:
    """Read the files of an expansion into the tables; the entries it could not read come
    first, as rejects, and the entries it skipped are listed.

    sink: where the turns go, in record batches of whole episodes, as they are read; the
    turns table is then empty, and fusion (which needs the turns) is left to the caller.
    """
    # The collector comes back on only once the rows are Arrow tables and the Python objects
    # they were built from are freed: it never walks them (otherwise its first passes after
    # the read walk every row and message once more, for nothing).
    with no_cyclic_gc():
        ingested = _read(expansion, limits or files.Limits(), fuse, sink)
    # A full collection empties the interpreter's free lists (tuples, dicts, floats): their
    # objects, the last ones the read freed, are scattered over the arenas of the parsed JSON
    # and keep them from going back to the system (about 100 MB after a 1 GB capture).
    gc.collect()
    return ingested


def _read(
    expansion: files.Expansion,
    limits: files.Limits,
    fuse: bool,
    sink: Callable[[pa.RecordBatch], None] | None,
) -> Ingested:
    collector = Collector(sink)
    reports: list[FileReport] = []
    for named, reason in expansion.rejected:
        collector.reject(named, None, reason)
        reports.append(FileReport(clean_text(named), None, reason, 0))
    progress.begin(expansion.files)
    progress.counting(lambda: collector.turn_count)
    for path in expansion.files:
        progress.file(path)
        with files.reading(limits) as damage:
            reports.append(_read_file(path, collector, damage))
    turns, trajectories, rejects = collector.tables()
    trajectories = sidecars.apply(trajectories, collector.run_metadata)
    for report in reports:
        if report.format == sidecars.FORMAT:
            report.note = sidecars.describe(Path(report.path), trajectories)
    if sink is None:
        fused = fusion.fuse(turns, trajectories) if fuse else fusion.unfused(turns, trajectories)
        turns, trajectories = fused.turns, fused.trajectories
        note_merged(reports, fused.merged_into)
    reports.sort(key=lambda r: r.path)
    skipped = [(clean_text(p), reason) for p, reason in expansion.skipped]
    return Ingested(turns, trajectories, rejects, reports, skipped)


def note_merged(reports: list[FileReport], merged_into: dict[str, set[str]]) -> None:
    """Each file whose episodes fusion counted under another's says so in its note."""
    for report in reports:
        if others := merged_into.get(report.path):
            said = f"episodes also read from {', '.join(sorted(others))}: counted once there"
            report.note = f"{report.note}; {said}" if report.note else said


def _head(path: Path, damage: list[str]) -> bytes:
    """The bytes detection reads: the file's first, or, when they are all JSON lines cut
    short, the first whole JSON line after them and what follows it (records behind a broken
    lead of any length are still found)."""
    head = files.head(path)
    text = head.decode("utf-8", errors="replace")
    if text.lstrip("\ufeff")[:1] != "{":
        return head
    known = len(damage)
    try:
        later = jsonwalk.past_broken_lead(text, files.iter_lines(path), files.SNIFF_BYTES)
    except (files.TooLarge, OSError):  # the reader meets it again, and reports it
        later = None
    del damage[known:]  # the same: the reader's own pass records it once
    return head if later is None else later.encode("utf-8", errors="replace")


def _read_file(path: Path, collector: Collector, damage: list[str]) -> FileReport:
    """One file into the collector. Whatever happens inside a reader stays with this file: it
    becomes a reject naming the file; the rows it had already produced are kept."""
    name = clean_text(str(path))  # what tables and reports call the file (see records)
    try:
        fmt, why = detect(_head(path, damage), path)
    except OSError as exc:
        fmt, why = None, f"cannot read: {exc.strerror or exc}"
    except RecursionError:
        fmt, why = None, f"format not detected: {NESTED_TOO_DEEPLY}"
    except Exception as exc:  # detection is per file too: its failure is this file's reject
        interrupts.raise_if_interrupted(exc)
        fmt, why = (
            None,
            (
                f"format detection failed ({type(exc).__name__}: {exc}); this is a bug in "
                "forensics, please report it"
            ),
        )
    if fmt is None:
        if damage:  # nothing could be inflated: the damage is the reason, not "empty"
            why = f"{damage[0]}; nothing before it could be read"
        collector.reject(name, None, why)
        return FileReport(name, None, why, 0)
    rejects_before = collector.rejects_of(name)
    episodes_before = len(collector.trajectory_rows)
    failure: str | None = None
    try:
        with files.counting_records():
            records = fmt.ingest(path, collector)
    except files.TooLarge as exc:
        failure = str(exc)
    except OSError as exc:
        failure = f"read error: {exc.strerror or exc}"
    except RecursionError:
        failure = NESTED_TOO_DEEPLY
    except json.JSONDecodeError as exc:  # a reader that parses the file whole
        failure = f"invalid JSON at line {exc.lineno}: {exc.msg}"
    except jsonwalk.WalkError as exc:
        failure = f"invalid JSON: {exc.msg}"
    except MemoryError:
        failure = "out of memory reading this file"
    except Exception as exc:  # a bug in a reader: this file's reject, never the scan's end
        interrupts.raise_if_interrupted(exc)
        failure = (
            f"the {fmt.name} reader failed ({type(exc).__name__}: {exc}); this is a bug in "
            "forensics, please report it"
        )
    if failure is not None:
        collector.reject(name, None, f"{failure}; records read before it are kept", "", fmt.name)
        records = len(collector.trajectory_rows) - episodes_before
    for reason in damage:
        collector.reject(name, None, reason, source_format=fmt.name)
    note = "; ".join(collector.notes.get(str(path), [])) or None
    if records == 0 and note is None and collector.rejects_of(name) == rejects_before:
        # The text scanner accepts any text; a file it found nothing in was never a log. One
        # that nothing in looks like an agent's record is a companion file (a config, notes):
        # skipped, not unreadable.
        reason = "no recognizable records (unknown format)"
        if fmt.priority >= TEXT_SCANNER and len(collector.trajectory_rows) == episodes_before:
            marker = companions.record_marker(path)
            if marker is None:
                return FileReport(name, None, companions.REASON, 0, skipped=True)
            reason += f"; {marker}"  # why it is not skipped as a companion file
        collector.reject(name, None, reason)
        return FileReport(name, None, reason, 0)
    metadata = str(path) in collector.metadata_files
    return FileReport(name, fmt.name, why, records, note, metadata)
