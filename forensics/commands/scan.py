"""`forensics scan`: read the inputs, run the pipeline, judge the gate, write and print."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from forensics import progress
from forensics.commands.shared import (
    F,
    config_options,
    fail,
    gathered,
    is_dash,
    output_option,
    rules_option,
    setting,
    settings,
    settings_chosen_by,
    shown,
    style,
    write,
)

if TYPE_CHECKING:
    from forensics import config, gate
    from forensics.diagnosis.result import ScanResult
    from forensics.pipeline import Scan
    from forensics.report.types import Report

# schema.SEVERITIES, spelled here so that `forensics --help` need not import pyarrow, polars
# and duckdb (tests/test_cli_lazy.py keeps the two equal). Commands import what they use.
FAIL_ON = ["info", "low", "medium", "high", "critical"]
OUTPUT_FORMATS = ["text", "json", "sarif", "junit", "github", "md"]


def _rates(value: tuple[str, ...]) -> dict[str, float]:
    from forensics import gate

    return gate.parse_max_rates(value)


def _terminal_options(f: F) -> F:
    """What the terminal shows, and which rules run: the flags ruff users reach for."""
    for option in reversed(
        [
            click.option(
                "--select",
                multiple=True,
                metavar="RULES",
                help="Run only these rules: ids or globs (think-*), comma-separated; may repeat.",
            ),
            click.option(
                "--ignore",
                multiple=True,
                metavar="RULES",
                help="Do not run these rules (ids or globs, comma-separated; may repeat); "
                "wins over --select.",
            ),
            click.option(
                "--output-format",
                type=click.Choice(OUTPUT_FORMATS),
                default="text",
                show_default=True,
                help="What stdout carries: the summary (text) or one machine output, the "
                "summary then going to stderr.",
            ),
            click.option(
                "-q", "--quiet", is_flag=True, help="Print nothing but errors: the exit code tells."
            ),
            click.option(
                "--statistics",
                is_flag=True,
                help="Print the number of findings per rule instead of the summary.",
            ),
            click.option(
                "--color",
                type=click.Choice(["auto", "always", "never"]),
                default="auto",
                show_default=True,
                help="Colour by severity; auto: on a terminal, unless NO_COLOR is set.",
            ),
        ]
    ):
        f = option(f)
    return f


def page_file(output: Path) -> Path:
    """Where -o puts the page: a name ending in .html (or .htm) is the page itself, unless a
    directory of that name is there already; anything else is its directory."""
    if output.suffix.lower() in (".html", ".htm") and not output.is_dir():
        return output
    return output / "report.html"


@dataclass(frozen=True)
class Outputs:
    """Where a scan's results go: files by kind (html: the report directory; - is stdout),
    the stores, and the one output stdout carries instead of the summary, if any."""

    files: dict[str, Path | None]
    db: Path | None
    parquet: Path | None
    stdout: str | None
    # --json-text: the JSON result carries the opening of every finding's turn (turn_text)
    json_text: bool = False

    def written(self) -> list[Path]:
        """This scan's own outputs: a directory walk skips them."""
        every = (*self.files.values(), self.db, self.parquet)
        return [p for p in every if p is not None and not is_dash(p)]


def _outputs(
    output: Path,
    no_report: bool,
    json_path: Path | None,
    json_text: bool,
    sarif_path: Path | None,
    junit_path: Path | None,
    md_path: Path | None,
    write_baseline: Path | None,
    db_path: Path | None,
    parquet_dir: Path | None,
    output_format: str,
) -> Outputs:
    """The outputs asked for; a usage error when two want stdout or a store wants it."""
    files = {
        "html": None if no_report else output,
        "json": json_path,
        "sarif": sarif_path,
        "junit": junit_path,
        "md": md_path,
        "baseline": write_baseline,
    }
    to_stdout = [kind for kind, path in files.items() if is_dash(path)]
    if output_format != "text":
        to_stdout.append(output_format)
    if len(to_stdout) > 1:
        fail(f"only one output can go to stdout, not {' and '.join(to_stdout)}")
    for flag, path in (("--db", db_path), ("--parquet", parquet_dir)):
        if is_dash(path):
            fail(f"{flag} -: a database can not be written to stdout")
    stdout = to_stdout[0] if to_stdout else None
    if json_text and json_path is None and stdout != "json":
        fail("--json-text adds turn text to the JSON result: ask for one (--json FILE)")
    return Outputs(files, db_path, parquet_dir, stdout, json_text)


@dataclass(frozen=True)
class Terminal:
    """What the terminal shows besides the document stdout may carry."""

    explain_formats: bool
    github: bool
    quiet: bool
    statistics: bool
    color: str


@dataclass(frozen=True)
class Judged:
    """A scan's result and the gate's verdict on it."""

    result: ScanResult
    verdict: gate.Verdict
    # Fingerprints of the findings the --baseline does not hold; None without one (or when
    # writing one: that is not a gate run).
    new: set[str] | None


def _scanner(
    workers: int | None, ray_address: str | None, shard_dir: str | None
) -> Callable[..., Scan]:
    """pipeline.scan, or with --workers, --ray or --shard-dir the same scan spread over shards
    (distributed.scan, which runs the same stages)."""
    from functools import partial

    if not (workers or ray_address or shard_dir):
        from forensics.pipeline import scan

        return scan
    from forensics import distributed

    if ray_address:
        try:
            runner = distributed.ray_runner(None if ray_address == "local" else ray_address)
        except ImportError:
            fail("--ray needs Ray: pip install 'forensics[ray]'")
    else:
        runner = distributed.processes(workers or 1)
    shards = workers or (4 if ray_address else 1)
    return partial(distributed.scan, runner=runner, shards=shards, shard_dir=shard_dir)


@click.command("scan")
@click.argument("paths", nargs=-1)
@click.option(
    "-o",
    "--output",
    "output",
    default="forensics-report",
    show_default=True,
    type=click.Path(path_type=Path, allow_dash=True),
    help="Directory for the HTML report (report.html), or the page's own file name ending in "
    ".html; - prints the page to stdout.",
)
@click.option("--no-report", is_flag=True, help="Do not write the HTML report.")
@output_option(
    "--json",
    "Write the machine result (summary, causes, findings, rejects, gate) here; - for stdout.",
)
@click.option(
    "--json-text",
    is_flag=True,
    help="Also write, per finding, the opening and length of the turn it points at "
    "(turn_text) into the --json result; without it, only the findings' evidence excerpts.",
)
@click.option(
    "--sarif",
    "sarif_path",
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    help="Write SARIF 2.1.0 (code scanning) here; - for stdout.",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    help="Write JUnit XML here: a testsuite per run, a testcase per trajectory; - for stdout.",
)
@output_option("--md", "Write the report as Markdown here; - for stdout.")
@click.option(
    "--github",
    is_flag=True,
    help="Print GitHub Actions annotations (::error file=…,line=…::) for the findings.",
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write every table and view to this DuckDB file (replaced if it exists).",
)
@click.option(
    "--parquet",
    "parquet_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write every table as Parquet into this directory (one file per run with many runs).",
)
@rules_option
@setting(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default=None,
    help="Exit 1 when a finding has at least this severity [default: config, else info].",
)
@setting(
    "--max-rate",
    "max_rate",
    multiple=True,
    parse=_rates,
    metavar="RULE=RATE",
    help="Tolerate RULE in up to RATE of the trajectories (0.05 or 5%); exit 1 above it. "
    "The rule is then judged by its rate only. May repeat.",
)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Fail only on findings not in this baseline (or --json result); report fixed ones.",
)
@click.option(
    "--write-baseline",
    "write_baseline",
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    help="Record the current findings by fingerprint in this file and exit 0: writing a "
    "baseline is not a gate run.",
)
@setting(
    "--no-fuse",
    "fuse",
    flag_value=False,
    default=True,
    help="Count each artifact's episodes apart: do not merge an episode seen in several files "
    "(console log, results file, capture of the same run) into one trajectory.",
)
@setting(
    "--allow-unchecked",
    is_flag=True,
    help="Do not fail when a --max-rate rule can run on none of the inputs (it lacks the "
    "columns it reads); the gate says so instead [default: config, else fail].",
)
@setting(
    "--allow-unreadable",
    is_flag=True,
    help="Do not fail when an input file yields nothing readable (wrong format, wholly "
    "truncated, an empty checkpoint); the gate still lists each [default: config, else fail]. "
    "No readable input at all always fails.",
)
@setting(
    "--max-rejects",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Fail when more than N records of the files that were read are rejected "
    "[default: config, else not gated].",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when the gate fails (2 still 2).")
@config_options
@setting(
    "--max-decompressed-mb",
    type=click.IntRange(min=1),
    help="A .gz inflating past this many MiB is rejected (a bomb) [default: config, else 4096].",
)
@setting(
    "--max-document-mb",
    type=click.IntRange(min=1),
    help="A JSON document larger than this many MiB is rejected, not read whole "
    "[default: config, else 1024].",
)
@setting(
    "--max-line-mb",
    type=click.IntRange(min=1),
    help="A line longer than this many MiB is skipped as a reject [default: config, else 64].",
)
@setting(
    "--max-yaml-aliases",
    type=click.IntRange(min=0),
    metavar="N",
    help="YAML nodes one file may visit again through aliases; past it the rest is rejected "
    "(a billion-laughs file) [default: config, else 1000000].",
)
@setting(
    "--max-records",
    type=click.IntRange(min=1),
    metavar="N",
    help="Records (turns and rejects) kept per file; the rest are counted in one reject "
    "[default: config, else 2000000].",
)
@setting(
    "--max-stdin-mb",
    type=click.IntRange(min=1),
    help="scan - reads at most this many MiB of standard input; the rest is a reject "
    "[default: config, else 4096].",
)
@click.option("--explain-formats", is_flag=True, help="Print how each file was detected.")
@click.option(
    "--show-settings",
    is_flag=True,
    help="Print the settings a scan would apply, each with where it came from (config file, "
    "flag or default), and exit; PATHS are not needed.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Scan on N local processes, one shard of files each; the same outputs as one process.",
)
@click.option(
    "--ray",
    "ray_address",
    metavar="ADDRESS",
    help="Run the shards as Ray tasks: 'local' starts an instance, 'auto' joins this machine's "
    "cluster, ray://HOST:10001 a remote one (needs forensics[ray]). Paths may be s3:// or gs://.",
)
@click.option(
    "--shard-dir",
    metavar="DIR|URL",
    help="With --workers/--ray: keep the shards' Parquet tables (Hive-partitioned by run) there, "
    "a directory or an s3:// / gs:// URL; default: a temporary directory.",
)
@_terminal_options
@gathered(outputs=_outputs, terminal=Terminal, scan_with=_scanner)
def command(
    paths: tuple[str, ...],
    outputs: Outputs,
    terminal: Terminal,
    scan_with: Callable[..., Scan],
    rules_dirs: tuple[Path, ...],
    baseline_path: Path | None,
    exit_zero: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    show_settings: bool,
) -> None:
    """Scan logs and result files; print the diagnosis, write the report and outputs.

    PATHS are files, directories or globs; - reads one artifact from stdin (named <stdin>).
    Any file option given - writes to stdout, as --output-format does; the summary then goes
    to stderr, and only one output can have stdout.

    Exit codes: 0 the gate passes (or there was nothing to check: every input a companion
    file named by its path); 1 the gate fails: a finding at or above --fail-on, a
    --max-rate exceeded or naming a rule that can run on none of the inputs, an input file
    with nothing readable (or no readable input at all), more rejected records than
    --max-rejects; 2 usage or input error; 130 interrupted. With --write-baseline: 0 once it
    is written, whatever was found. Flags win over [tool.forensics] settings.
    """
    if show_settings:
        _show_settings(rules_dirs, select, ignore)
        return
    if not paths:
        raise click.MissingParameter(param_type="argument", param_hint="'PATHS...'")
    writing_baseline = outputs.files["baseline"] is not None  # not a gate run: exit 0
    if paths.count("-") > 1:
        fail("scan -: standard input can be read once")
    if "-" in paths and sys.stdin.isatty():
        fail("scan -: standard input is a terminal; pipe an artifact in (forensics scan - < FILE)")
    with contextlib.ExitStack() as stack:
        if progress.wanted(sys.stderr, terminal.quiet):
            stack.enter_context(progress.shown(sys.stderr, shutil.get_terminal_size().columns))
        judged = _judged(
            paths,
            stack,
            scan_with,
            rules_dirs=rules_dirs,
            select=select,
            ignore=ignore,
            baseline_path=baseline_path,
            writing_baseline=writing_baseline,
            exit_zero=exit_zero,
            exclude=[*outputs.written(), *_redirected()],
        )
        progress.stage("writing outputs")
        report = _report(
            judged,
            page=outputs.files["html"] is not None,
            turn_text=outputs.json_text,
            gated=not writing_baseline,
        )
        document = _write_outputs(outputs, report, judged)
    # stdout carries one document when one was asked for there; people read stderr then.
    err = document is not None
    if document is not None:
        if outputs.stdout in ("json", "sarif", "baseline"):  # on a terminal or in a CI log
            from forensics.report.render.safe import json_visible

            document = json_visible(document)
        click.echo(document, nl=False)
    _print(report, judged, outputs, terminal, err)
    sys.exit(0 if writing_baseline else judged.verdict.exit_code)


def _show_settings(
    rules_dirs: tuple[Path, ...], select: tuple[str, ...], ignore: tuple[str, ...]
) -> None:
    """--show-settings: what a scan with these flags would apply, and where each came from."""
    from forensics import config

    try:
        chosen = _chosen_rules(settings(), rules_dirs, select, ignore)
    except config.ConfigError as exc:
        fail(str(exc))
    lines = config.describe(chosen, settings_chosen_by())
    click.echo("\n".join(shown(line) for line in lines))


def _redirected() -> list[Path]:
    """stdout and stderr when a shell sent them to a file (`scan . > out.txt`): the scan's
    outputs too, as /dev/fd/N (pipeline.expand compares them by identity, not by name)."""
    out = []
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
        except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture)
            continue
        if regular:
            out.append(Path(f"/dev/fd/{fd}"))
    return out


def _judged(
    paths: tuple[str, ...],
    stack: contextlib.ExitStack,
    scanner: Callable[..., Scan],
    *,
    rules_dirs: tuple[Path, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    baseline_path: Path | None,
    writing_baseline: bool,
    exit_zero: bool,
    exclude: list[Path],
) -> Judged:
    """Scan the paths (- spooled from stdin) with the settings, and judge the result."""
    from forensics import config, gate
    from forensics.check import engine
    from forensics.ingest.parse.files import InputError

    names, spool = list(paths), None
    if "-" in names:
        from forensics.tools import stdin

        try:
            limits = settings().limits
        except config.ConfigError as exc:
            fail(str(exc))
        spool = stack.enter_context(stdin.spooled(sys.stdin.buffer, limits))
        names = [str(spool) if p == "-" else p for p in names]
    try:
        chosen = _chosen_rules(settings(), rules_dirs, select, ignore)
        baseline = gate.load_baseline(baseline_path) if baseline_path else None
        result: ScanResult = scanner(
            names, rules_dirs=list(rules_dirs), settings=chosen, exclude=exclude
        )
        if spool is not None:
            result = stdin.relabel(result, spool)
        result.config = chosen.shown_source()
        policy = gate.Policy(
            fail_on=chosen.fail_on,
            max_rate=chosen.max_rate,
            baseline=baseline,
            exit_zero=exit_zero,
            allow_unchecked=chosen.allow_unchecked,
            allow_unreadable=chosen.allow_unreadable,
            max_rejects=chosen.max_rejects,
        )
        verdict = gate.evaluate(
            result.findings,
            result.trajectories.height,
            [r.id for r in result.rules],
            policy,
            gate.coverage(result, names),
        )
    except (InputError, config.ConfigError, gate.GateError) as exc:
        fail(str(exc))
    except engine.RuleError as exc:
        fail(f"rule pack: {exc}")
    new = set(verdict.new) if baseline and not writing_baseline else None
    return Judged(result, verdict, new)


def _chosen_rules(
    base: config.Settings,
    rules_dirs: tuple[Path, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
) -> config.Settings:
    """The settings with --select/--ignore applied and max-rate checked against the rules that
    will run (config.choose), before anything is read."""
    from forensics import config
    from forensics.check import engine

    known = [r.id for r in engine.load_rules(list(rules_dirs))]
    return config.choose(base, known, select, ignore)


def _report(judged: Judged, *, page: bool, turn_text: bool, gated: bool) -> Report:
    from forensics.report import model

    report = model.build(judged.result, page=page, turn_text=turn_text)
    if gated:  # writing a baseline is not a gate run: no verdict to record
        report["gate"] = judged.verdict.to_dict()
    return report


def _renderers(
    report: Report, judged: Judged, json_text: bool = False
) -> dict[str, Callable[[], str]]:
    """Each output's document, rendered only when asked for."""
    from forensics import __version__, gate
    from forensics.report.render import github, html, jsonout, junit, markdown, sarif

    base, new = Path.cwd(), judged.new
    return {
        "html": lambda: html.render(report),
        "json": lambda: jsonout.render(report, turn_text=json_text),
        "sarif": lambda: sarif.render(report, base, __version__, new),
        "junit": lambda: junit.render(report, base),
        "md": lambda: markdown.render(report),
        "github": lambda: github.render(report, base, new),
        "baseline": lambda: gate.baseline_document(judged.result.findings),
    }


def _write_outputs(outputs: Outputs, report: Report, judged: Judged) -> str | None:
    """Write the files and stores; returns the document stdout carries, if any."""
    renderers = _renderers(report, judged, outputs.json_text)
    document = renderers[outputs.stdout]() if outputs.stdout else None
    for kind, path in outputs.files.items():
        if path is None or is_dash(path):
            continue
        if kind == "json":  # written a piece at a time: a large result is never one text
            from forensics.report.render import jsonout

            try:
                jsonout.write(path, report, turn_text=outputs.json_text)
            except OSError as exc:
                fail(f"{path}: cannot write: {exc.strerror or exc}")
            continue
        write(page_file(path) if kind == "html" else path, renderers[kind]())
    if outputs.db or outputs.parquet:
        from forensics import store  # only then: it loads pyarrow.parquet and the views

        try:
            if outputs.db:
                store.write_duckdb(judged.result, outputs.db)
            if outputs.parquet:
                store.write_parquet(judged.result, outputs.parquet)
        except store.StoreError as exc:
            fail(str(exc))
    return document


def _print(report: Report, judged: Judged, outputs: Outputs, terminal: Terminal, err: bool) -> None:
    """The terminal's part: format notes, annotations, the summary and the gate's lines."""
    from forensics.report.render import github as github_out
    from forensics.report.render import text

    look = style(sys.stderr if err else sys.stdout, terminal.color)
    if terminal.explain_formats:  # file names and notes escaped, no line a workflow command
        click.echo(text.explain_formats(report), nl=False, err=err)
    if terminal.github and outputs.stdout != "github":
        click.echo(github_out.render(report, Path.cwd(), judged.new), nl=False)
    if terminal.quiet:
        return
    html = outputs.files["html"]
    report_file = page_file(html) if html is not None and not is_dash(html) else None
    summary = text.statistics(report, look) if terminal.statistics else None
    summary = summary or text.render(report, str(report_file) if report_file else None, look)
    click.echo(summary, nl=False, err=err, color=look.color)
    baseline = outputs.files["baseline"]
    if baseline is not None:
        n = judged.result.findings["finding_id"].n_unique()
        noun = "finding" if n == 1 else "findings"
        where = "stdout" if is_dash(baseline) else baseline
        line = f"baseline: wrote {n} {noun} to {where}"
        click.echo(text.gate_lines([line]), nl=False, err=err)
        return
    # Escaped like the summary. Unreadable input and unrunnable rules are gate lines too.
    click.echo(text.gate_lines(judged.verdict.lines(), look), nl=False, err=err, color=look.color)
