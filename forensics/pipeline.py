"""The pipeline as functions: files -> turns -> findings -> causes -> report. The command line
and notebooks call `scan`; the CLI only wires its results to files, the terminal and exit
codes.

`scan` is its stages in order, each a function of its own: `load_rules`, `expand` (the inputs,
minus ignore-paths), `read` (ingest, then the one redaction pass), `check` (enrichment and the
rules) and `diagnose`. In one process, `read` streams the turns to a store
(check.turnstore), which redacts and enriches them a batch at a time as they come, and the
later stages read them there. The distributed scan (forensics.distributed) calls the same
stages, each shard in memory: the driver expands and diagnoses, each shard reads and checks
its files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import duckdb
import polars as pl
import pyarrow as pa

from forensics import atomic, ingest, progress, schema
from forensics import config as config_mod
from forensics.check import engine, enrich, turnstore
from forensics.config import Settings
from forensics.diagnosis import coverage
from forensics.diagnosis import diagnose as diagnose_mod
from forensics.diagnosis.result import ScanResult
from forensics.ingest import fusion
from forensics.ingest.parse import files as ingest_files
from forensics.ingest.parse.files import InputError
from forensics.redact import redact_name, redact_table, redact_text
from forensics.report import model as report_model
from forensics.report.render import html, jsonout, markdown
from forensics.report.types import Report

PathLike = str | os.PathLike[str]


class Scan(ScanResult):
    """A scan's tables and diagnosis, with the writers the command line uses.

    Examples
    --------
    >>> import forensics
    >>> result = forensics.scan("sample_logs/output2.txt")
    >>> result
    Scan(files=1, trajectories=4, turns=82, findings=47, rejects=0)
    >>> result.findings.group_by("rule").len().sort("rule").rows()
    [('no-action-failure', 3), ('reasoning-leak', 21), ('think-loop', 5), ('unclosed-think', 18)]
    """

    def report(self, *, page: bool = False, turn_text: bool = False) -> Report:
        """The report model every output renders (see forensics.report.types.Report);
        turn_text: the opening of every finding's turn, as `scan --json-text`."""
        return report_model.build(self, page=page, turn_text=turn_text)

    def write_report(self, directory: PathLike = "forensics-report") -> Path:
        """Write the self-contained HTML report; returns the path of report.html.

        Examples
        --------
        >>> import tempfile, forensics
        >>> out = forensics.scan("sample_logs/output2.txt").write_report(tempfile.mkdtemp())
        >>> out.name
        'report.html'
        """
        return atomic.write_text(
            Path(directory) / "report.html", html.render(self.report(page=True))
        )

    def write_json(self, path: PathLike, *, turn_text: bool = False) -> Path:
        """Write the machine result (what `scan --json` writes, without the gate verdict);
        turn_text as `--json-text`."""
        return jsonout.write(Path(path), self.report(turn_text=turn_text), turn_text=turn_text)

    def write_markdown(self, path: PathLike) -> Path:
        """Write the Markdown summary (what `scan --md` writes)."""
        return atomic.write_text(Path(path), markdown.render(self.report()))


def scan(
    paths: PathLike | Sequence[PathLike],
    *,
    rules_dirs: Sequence[PathLike] | None = None,
    settings: Settings | None = None,
    exclude: Sequence[PathLike] | None = None,
    config: bool | PathLike = True,
    select: str | Sequence[str] = (),
    ignore: str | Sequence[str] = (),
) -> Scan:
    """Scan logs and result files: ingest, enrich, check, diagnose.

    The settings are those `forensics scan` applies: `[tool.forensics]` of the nearest
    `forensics.toml` or `pyproject.toml` from the working directory upward (`config`), then
    `select` and `ignore` as the flags of those names. `result.config` names the file applied.

    Parameters
    ----------
    paths : path or sequence of paths
        Files, directories (walked; hidden entries, non-artifacts and `exclude` skipped) and
        globs. `.gz` is read transparently; each file's format is detected from its content.
    rules_dirs : sequence of paths, optional
        Extra rule directories in the rule pack's TOML format, added to the built-in pack.
    settings : Settings, optional
        Disabled rules, severity overrides, ignore-paths and size caps, used as given: no config
        file is read then (`forensics.config.load()` reads one into Settings).
    exclude : sequence of paths, optional
        This scan's own outputs: skipped (and listed as skipped) when a walk meets them.
    config : bool or path, default True
        Without `settings`: True reads the nearest config file, as the command line does; a
        path reads that file (`--config`); False reads none, the defaults apply (`--no-config`).
    select, ignore : str or sequence of str, optional
        Run only these rules / not these: ids or globs (`think-*`), comma-separated, as
        `--select` and `--ignore`; `ignore` wins. An unknown name is a ConfigError.

    Returns
    -------
    Scan
        `turns`, `trajectories`, `findings` and `rejects` as polars DataFrames, the files read
        and skipped, the diagnosis, `sql()` over every table and view, and the writers.

    Raises
    ------
    forensics.ingest.parse.files.InputError
        A path that does not exist (every other input problem is a row of `rejects`).
    forensics.check.engine.RuleError
        A rule file that can not be loaded.
    forensics.config.ConfigError
        Settings that can not be used as given.

    Examples
    --------
    >>> import forensics
    >>> result = forensics.scan(["sample_logs/output2.txt"])
    >>> result.sql("select count(*) from findings where rule = 'unclosed-think'").fetchall()
    [(18,)]
    >>> result.diagnosis.causes[0].id
    'truncated-output'
    """
    if settings is None:
        settings = load_settings(config)
    pack = engine.load_rules([Path(d) for d in rules_dirs or []])
    settings = config_mod.choose(settings, [r.id for r in pack], select, ignore)
    rules = settings.apply(pack)
    expansion = expand(names(paths), settings, exclude)
    store = turnstore.TurnStore()
    result = diagnose(check(read(expansion, settings, store), rules, store), rules)
    result.config = settings.shown_source()
    return result


def load_settings(config: bool | PathLike = True) -> Settings:
    """`[tool.forensics]` as the command line reads it: the nearest config file (True), the
    file named (a path) or none (False)."""
    if config is False:
        return config_mod.parse({})
    return config_mod.load(None if config is True else Path(config))


def names(paths: PathLike | Sequence[PathLike]) -> list[str]:
    """One path or many, as the strings the stages take."""
    if isinstance(paths, str | os.PathLike):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def load_rules(rules_dirs: Sequence[PathLike] | None, settings: Settings) -> list[engine.Rule]:
    """The rules a scan runs: the built-in pack and `rules_dirs`, with the settings applied."""
    return settings.apply(engine.load_rules([Path(d) for d in rules_dirs or []]))


def expand(
    paths: Sequence[str],
    settings: Settings,
    exclude: Sequence[PathLike] | None = None,
    *,
    others: Sequence[str] = (),
) -> ingest_files.Expansion:
    """The inputs of a scan: paths expanded as the readers walk them, then ignore-paths (the
    files it excludes are listed as skipped).

    others: inputs named apart from the paths (the distributed scan's object-store URLs).
    Raises InputError for a path that does not exist, and when ignore-paths leaves nothing.
    """
    expansion = ingest_files.expand(list(paths), [Path(p) for p in exclude or []])
    _drop_outputs(expansion, exclude or [])
    if settings.ignore_paths:
        ignored = {p for p in expansion.files if settings.ignores(p)}
        expansion.skipped += [(str(p), "ignore-paths") for p in sorted(ignored)]
        expansion.files = [p for p in expansion.files if p not in ignored]
        if not (expansion.files or expansion.rejected or others) and expansion.skipped:
            raise InputError(f"every input file is excluded by ignore-paths ({settings.where()})")
    return expansion


def _drop_outputs(expansion: ingest_files.Expansion, exclude: Sequence[PathLike]) -> None:
    """Files that are one of the outputs by identity (device and inode), not by name: the file
    a shell redirected stdout to (`scan . > out.txt`, named /dev/fd/1 by the command), or an
    output named among the inputs. They are listed as skipped, never read: the scan would
    otherwise judge its own, still empty, output."""
    own = set()
    for p in exclude:
        try:
            st = os.stat(p)
        except (OSError, ValueError):
            continue  # not written yet: nothing of it to read either
        if stat.S_ISREG(st.st_mode):
            own.add((st.st_dev, st.st_ino))
    if not own:
        return
    kept = []
    for p in expansion.files:
        try:
            st = os.stat(p)
        except OSError:
            kept.append(p)  # the reader says why it can not be read
            continue
        if (st.st_dev, st.st_ino) in own:
            expansion.skipped.append((str(p), "an output of this scan"))
        else:
            kept.append(p)
    expansion.files = kept
    expansion.skipped.sort()


def read(
    expansion: ingest_files.Expansion,
    settings: Settings,
    store: turnstore.TurnStore | None = None,
) -> ingest.Ingested:
    """The expansion's files read into tables (its unreadable entries as rejects), redacted:
    what every later stage sees.

    With a store, the turns go there as they are read (redacted and enriched a batch at a
    time), the turns table returned is empty, and fusion completes the stored episodes.
    """
    if store is None:
        return redacted(ingest.read(expansion, limits=settings.limits, fuse=settings.fuse))
    data = redacted(ingest.read(expansion, limits=settings.limits, sink=store.write))
    store.flush()
    members = fusion.plan(data.trajectories, lambda: _pairs(store)) if settings.fuse else {}
    if not members:
        return replace(data, trajectories=fusion.with_sources(data.trajectories))
    ids = sorted({t for group in members.values() for t in group})
    stored = store.of_trajectories(ids, schema.RAW_TURNS.names)
    raw = stored.drop(turnstore.ROW).to_arrow().cast(schema.RAW_TURNS)
    fused = fusion.merge(raw, data.trajectories, members)
    absorbed = [t for group in members.values() for t in group[1:]]
    kept = stored.filter(~pl.col("trajectory_id").is_in(absorbed)).get_column(turnstore.ROW)
    store.replace(ids, frame(fused.turns).with_columns(kept))
    files = [replace(f) for f in data.files]
    ingest.note_merged(files, fused.merged_into)
    return replace(data, trajectories=fused.trajectories, files=files)


def _pairs(store: turnstore.TurnStore) -> pl.DataFrame:
    """Fusion's (trajectory_id, fp) pairs of every stored turn, read a slice at a time."""
    columns = ["trajectory_id", "turn_index", "role", "content", "tool_calls"]
    parts = [fusion.pairs_of(frame(pa.Table.from_batches([b]))) for b in store.chunks(columns)]
    if not parts:
        return pl.DataFrame(schema={"trajectory_id": pl.String, "fp": pl.UInt64})
    return pl.concat(parts).unique(maintain_order=True)


@dataclass
class Checked:
    """A read's tables, enriched and checked by the rules, with the files it read and skipped:
    what diagnosis takes (and what a shard of a distributed scan writes)."""

    # a frame, or the store the scan streamed them to (a scan in one process)
    turns: pl.DataFrame | turnstore.TurnStore
    trajectories: pl.DataFrame
    findings: pl.DataFrame
    rejects: pl.DataFrame
    files: list[ingest.FileReport]
    skipped: list[tuple[str, str]]
    # file -> rule -> the columns it lacks, for rules that could not run on that file
    not_checked: dict[str, dict[str, list[str]]]


def check(
    data: ingest.Ingested, rules: list[engine.Rule], store: turnstore.TurnStore | None = None
) -> Checked:
    """Enrich the turns and run the rules. Pass the read as a temporary (check(read(...))):
    its Arrow turns are freed before enrichment grows the frame that holds their copy. With
    the store the read streamed its turns to (already enriched), the rules run over it."""
    progress.stage("checking rules")
    if store is not None:
        rejects = _with_failures(frame(data.rejects), store.failures)
        trajectories = frame(data.trajectories)
        checked = engine.check(store, trajectories, rules)
        return Checked(
            turns=store,
            trajectories=trajectories,
            findings=checked.findings,
            rejects=rejects,
            files=_with_notes(data.files, coverage.excerpt_notes(store)),
            skipped=data.skipped,
            not_checked=checked.not_checked,
        )
    raw_turns = frame(data.turns)
    trajectories = frame(data.trajectories)
    rejects = frame(data.rejects)
    files, skipped = data.files, data.skipped
    del data
    failures: list[dict[str, object]] = []
    turns = enrich.enrich(raw_turns, failures)
    rejects = _with_failures(rejects, failures)
    checked = engine.check(turns, trajectories, rules)
    files = _with_notes(files, coverage.excerpt_notes(turns))
    return Checked(
        turns=turns,
        trajectories=trajectories,
        findings=checked.findings,
        rejects=rejects,
        files=files,
        skipped=skipped,
        not_checked=checked.not_checked,
    )


def _with_failures(rejects: pl.DataFrame, failures: Sequence[dict[str, Any]]) -> pl.DataFrame:
    """Turns kept without a derived value are rejects of their own, after the read's."""
    if not failures:
        return rejects
    return pl.concat([rejects, frame(pa.Table.from_pylist(list(failures), schema=schema.REJECTS))])


def frame(table: pa.Table) -> pl.DataFrame:
    """An Arrow table as a polars frame (from_arrow gives a Series only for an Array)."""
    return cast(pl.DataFrame, pl.from_arrow(table))


def diagnose(checked: Checked, rules: list[engine.Rule]) -> Scan:
    """Causes from the findings: the diagnosis, and the scan's result."""
    progress.stage("diagnosing")
    diagnosis = diagnose_mod.diagnose(
        checked.findings,
        checked.turns,
        checked.trajectories,
        rules,
        engine.default_rules_dir(),
    )
    # Companion files (ingest.companions) were read to be told from artifacts; from here on
    # they are skipped entries, listed with their reason, as a walk's are.
    files = [f for f in checked.files if not f.skipped]
    skipped = sorted([*checked.skipped, *((f.path, f.reason) for f in checked.files if f.skipped)])
    return Scan(
        turn_source=checked.turns,
        trajectories=checked.trajectories,
        findings=checked.findings,
        rejects=checked.rejects,
        files=files,
        skipped=skipped,
        rules=rules,
        not_checked=checked.not_checked,
        diagnosis=diagnosis,
    )


def _with_notes(files: list[ingest.FileReport], notes: dict[str, str]) -> list[ingest.FileReport]:
    """The files with what coverage says about them added to their notes."""
    return [
        replace(f, note=f"{f.note}; {notes[f.path]}" if f.note else notes[f.path])
        if f.path in notes
        else f
        for f in files
    ]


def redacted(data: ingest.Ingested) -> ingest.Ingested:
    """The one redaction pass, between ingest and enrichment: every column the schema marks
    (Column.redact) of every table, and the file list. Nothing downstream sees a secret."""

    def table(t: pa.Table) -> pa.Table:
        return redact_table(t, schema.redacted_columns(t.schema))

    files = [
        replace(
            f,
            path=redact_name(f.path),
            reason=redact_text(f.reason) or f.reason,
            note=redact_text(f.note),
        )
        for f in data.files
    ]
    skipped = [(redact_name(p), redact_text(r) or r) for p, r in data.skipped]
    return ingest.Ingested(
        table(data.turns), table(data.trajectories), table(data.rejects), files, skipped
    )


def connect(
    paths: PathLike | Sequence[PathLike],
    *,
    rules_dirs: Sequence[PathLike] | None = None,
    settings: Settings | None = None,
    config: bool | PathLike = True,
    select: str | Sequence[str] = (),
    ignore: str | Sequence[str] = (),
) -> duckdb.DuckDBPyConnection:
    """Scan (with the settings `scan` takes) and return an in-memory DuckDB connection over
    every table and view.

    Examples
    --------
    >>> import forensics
    >>> con = forensics.connect("sample_logs/output2.txt")
    >>> con.sql("select count(*) from trajectories").fetchall()
    [(4,)]
    """
    result = scan(
        paths, rules_dirs=rules_dirs, settings=settings, config=config, select=select, ignore=ignore
    )
    return result.connection()
