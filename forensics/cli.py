"""Command line: thin wiring of the pipeline to files, the terminal and exit codes."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import click

from forensics import atomic, progress

if TYPE_CHECKING:
    from forensics import config
    from forensics.check import engine

# schema.SEVERITIES, spelled here so that `forensics --help` need not import pyarrow, polars
# and duckdb (tests/test_cli_lazy.py keeps the two equal). Commands import what they use.
FAIL_ON = ["info", "low", "medium", "high", "critical"]


def _fail(message: str) -> NoReturn:
    progress.interrupt()
    click.echo(f"forensics: error: {_shown(message)}", err=True)
    sys.exit(2)


def _shown(message: str) -> str:
    """An error message on stderr: a path in it may hold a secret or terminal escapes."""
    from forensics.redact import redact_text
    from forensics.report.render.safe import guard_line, one_line

    return guard_line(one_line(redact_text(message) or ""))


def _write(path: Path, text: str) -> None:
    try:
        atomic.write_text(path, text)
    except OSError as exc:
        _fail(f"{path}: cannot write: {exc.strerror or exc}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="forensics")
def cli() -> None:
    """Offline trajectory forensics: why did this agent run fail?"""


def _parse_rates(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> dict:
    from forensics import gate

    try:
        return gate.parse_max_rates(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _settings(config_path: Path | None, no_config: bool) -> config.Settings:
    from forensics import config

    return config.Settings() if no_config else config.load(config_path)


def _config_options(f: Callable) -> Callable:  # shared by scan and diff
    f = click.option(
        "--no-config", is_flag=True, help="Ignore pyproject.toml / forensics.toml settings."
    )(f)
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Settings file (forensics.toml or a pyproject.toml with [tool.forensics]); "
        "default: the nearest one from the current directory upward.",
    )(f)


def _rules_option(f: Callable) -> Callable:
    return click.option(
        "--rules",
        "rules_dirs",
        multiple=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="Extra rule directory (same TOML format); may repeat.",
    )(f)


OUTPUT_FORMATS = ["text", "json", "sarif", "junit", "github", "md"]


def _is_dash(path: Path | None) -> bool:
    return path is not None and str(path) == "-"


def _terminal_options(f: Callable) -> Callable:
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


def _style(stream: TextIO, color: str) -> Any:
    """Wrapping at the terminal's width and colour, only for a person at a terminal."""
    from forensics.report.render import text

    tty = progress.wanted(stream, quiet=False, env={})  # a terminal, CI or not
    on = color == "always" or (color == "auto" and tty and not os.environ.get("NO_COLOR"))
    width = shutil.get_terminal_size().columns if tty else None
    return text.Style(width, on)


def _chosen_rules(
    settings: config.Settings,
    rules_dirs: tuple[Path, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
) -> config.Settings:
    """The settings with --select/--ignore applied: every rule not selected, or ignored, off."""
    from forensics import config
    from forensics.check import engine

    if not select and not ignore:
        return settings
    known = [r.id for r in engine.load_rules(list(rules_dirs))]

    def named(specs: tuple[str, ...], flag: str) -> set[str]:
        ids: set[str] = set()
        for part in (p.strip() for spec in specs for p in spec.split(",")):
            if not part:
                continue
            hits = fnmatch.filter(known, part)
            if not hits:
                raise config.ConfigError(f"{flag} {part}: no such rule; known: {', '.join(known)}")
            ids.update(hits)
        return ids

    chosen = named(select, "--select") if select else set(known)
    off = set(settings.disable) | (set(known) - chosen) | named(ignore, "--ignore")
    return replace(settings, disable=tuple(sorted(off)))


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    "output",
    default="forensics-report",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path, allow_dash=True),
    help="Directory for the HTML report (report.html); - prints the page to stdout.",
)
@click.option("--no-report", is_flag=True, help="Do not write the HTML report.")
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    help="Write the machine result (summary, causes, findings, rejects, gate) here; - for stdout.",
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
@click.option(
    "--md",
    "md_path",
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    help="Write the report as Markdown here; - for stdout.",
)
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
@_rules_option
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default=None,
    help="Exit 1 when a finding has at least this severity [default: config, else info].",
)
@click.option(
    "--max-rate",
    "max_rate",
    multiple=True,
    callback=_parse_rates,
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
@click.option(
    "--no-fuse",
    is_flag=True,
    help="Count each artifact's episodes apart: do not merge an episode seen in several files "
    "(console log, results file, capture of the same run) into one trajectory.",
)
@click.option(
    "--allow-unchecked",
    is_flag=True,
    help="Do not fail when a --max-rate rule can run on none of the inputs (it lacks the "
    "columns it reads); the gate says so instead [default: config, else fail].",
)
@click.option(
    "--allow-unreadable",
    is_flag=True,
    help="Do not fail when an input file yields nothing readable (wrong format, wholly "
    "truncated, an empty checkpoint); the gate still lists each [default: config, else fail]. "
    "No readable input at all always fails.",
)
@click.option(
    "--max-rejects",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Fail when more than N records of the files that were read are rejected "
    "[default: config, else not gated].",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when the gate fails (2 still 2).")
@_config_options
@click.option(
    "--max-decompressed-mb",
    type=click.IntRange(min=1),
    help="A .gz inflating past this many MiB is rejected (a bomb) [default: config, else 4096].",
)
@click.option(
    "--max-document-mb",
    type=click.IntRange(min=1),
    help="A JSON document larger than this many MiB is rejected, not read whole "
    "[default: config, else 1024].",
)
@click.option("--explain-formats", is_flag=True, help="Print how each file was detected.")
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
def scan(
    paths: tuple[str, ...],
    output: Path,
    no_report: bool,
    json_path: Path | None,
    sarif_path: Path | None,
    junit_path: Path | None,
    md_path: Path | None,
    github: bool,
    db_path: Path | None,
    parquet_dir: Path | None,
    rules_dirs: tuple[Path, ...],
    fail_on: str | None,
    max_rate: dict[str, float],
    baseline_path: Path | None,
    write_baseline: Path | None,
    allow_unchecked: bool,
    allow_unreadable: bool,
    no_fuse: bool,
    max_rejects: int | None,
    exit_zero: bool,
    config_path: Path | None,
    no_config: bool,
    max_decompressed_mb: int | None,
    max_document_mb: int | None,
    explain_formats: bool,
    workers: int | None,
    ray_address: str | None,
    shard_dir: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    output_format: str,
    quiet: bool,
    statistics: bool,
    color: str,
) -> None:
    """Scan logs and result files; print the diagnosis, write the report and outputs.

    PATHS are files, directories or globs; - reads one artifact from stdin (named <stdin>).
    Any file option given - writes to stdout, as --output-format does; the summary then goes
    to stderr, and only one output can have stdout.

    Exit codes: 0 the gate passes; 1 the gate fails: a finding at or above --fail-on, a
    --max-rate exceeded or naming a rule that can run on none of the inputs, an input file
    with nothing readable (or no readable input at all), more rejected records than
    --max-rejects; 2 usage or input error; 130 interrupted. With --write-baseline: 0 once it
    is written, whatever was found. Flags win over [tool.forensics] settings.
    """
    from forensics import __version__, config, gate
    from forensics.check import engine
    from forensics.ingest.parse.files import InputError
    from forensics.pipeline import scan as run_scan
    from forensics.report import model as report_model
    from forensics.report.render import github as github_out
    from forensics.report.render import html, jsonout, junit, markdown, sarif, text

    files = {
        "html": None if no_report else output,
        "json": json_path,
        "sarif": sarif_path,
        "junit": junit_path,
        "md": md_path,
        "baseline": write_baseline,
    }
    to_stdout = [kind for kind, path in files.items() if _is_dash(path)]
    if output_format != "text":
        to_stdout.append(output_format)
    if len(to_stdout) > 1:
        _fail(f"only one output can go to stdout, not {' and '.join(to_stdout)}")
    for flag, path in (("--db", db_path), ("--parquet", parquet_dir)):
        if _is_dash(path):
            _fail(f"{flag} -: a database can not be written to stdout")
    if paths.count("-") > 1:
        _fail("scan -: standard input can be read once")
    if "-" in paths and sys.stdin.isatty():
        _fail("scan -: standard input is a terminal; pipe an artifact in (forensics scan - < FILE)")
    with contextlib.ExitStack() as stack:
        if progress.wanted(sys.stderr, quiet):
            stack.enter_context(progress.shown(sys.stderr, shutil.get_terminal_size().columns))
        names, spool = list(paths), None
        if "-" in names:
            from forensics.tools import stdin

            spool = stack.enter_context(stdin.spooled(sys.stdin.buffer))
            names = [str(spool) if p == "-" else p for p in names]
        try:
            settings = _settings(config_path, no_config).with_limits(
                max_decompressed_mb, max_document_mb
            )
            settings = _chosen_rules(settings, rules_dirs, select, ignore)
            if no_fuse:
                settings = replace(settings, fuse=False)
            baseline = gate.load_baseline(baseline_path) if baseline_path else None
            outputs = [p for p in (*files.values(), db_path, parquet_dir) if not _is_dash(p)]
            sharded = workers or ray_address or shard_dir
            result = (_sharded_scan(workers, ray_address, shard_dir) if sharded else run_scan)(
                names,
                rules_dirs=list(rules_dirs),
                settings=settings,
                exclude=[p for p in outputs if p is not None],
            )
            if spool is not None:
                result = stdin.relabel(result, spool)
            policy = gate.Policy(
                fail_on=fail_on or settings.fail_on or "info",
                max_rate={**settings.max_rate, **max_rate},
                baseline=baseline,
                exit_zero=exit_zero,
                allow_unchecked=allow_unchecked or settings.allow_unchecked,
                allow_unreadable=allow_unreadable or settings.allow_unreadable,
                max_rejects=settings.max_rejects if max_rejects is None else max_rejects,
            )
            verdict = gate.evaluate(
                result.findings,
                result.trajectories.height,
                [r.id for r in result.rules],
                policy,
                gate.coverage(result),
            )
        except (InputError, config.ConfigError, gate.GateError) as exc:
            _fail(str(exc))
        except engine.RuleError as exc:
            _fail(f"rule pack: {exc}")
        progress.stage("writing outputs")
        report = report_model.build(result, page=not no_report)
        if not write_baseline:  # writing a baseline is not a gate run: no verdict to record
            report["gate"] = verdict.to_dict()
        base = Path.cwd()
        new = set(verdict.new) if baseline and not write_baseline else None
        renderers: dict[str, Callable[[], str]] = {
            "html": lambda: html.render(report),
            "json": lambda: jsonout.render(report),
            "sarif": lambda: sarif.render(report, base, __version__, new),
            "junit": lambda: junit.render(report, base),
            "md": lambda: markdown.render(report),
            "github": lambda: github_out.render(report, base, new),
            "baseline": lambda: gate.baseline_document(result.findings),
        }
        document = renderers[to_stdout[0]]() if to_stdout else None
        report_file = None
        for kind, path in files.items():
            if path is None or _is_dash(path):
                continue
            target = path / "report.html" if kind == "html" else path
            _write(target, renderers[kind]())
            if kind == "html":
                report_file = target
        if db_path or parquet_dir:
            from forensics import store  # only then: it loads pyarrow.parquet and the views

            try:
                if db_path:
                    store.write_duckdb(result, db_path)
                if parquet_dir:
                    store.write_parquet(result, parquet_dir)
            except store.StoreError as exc:
                _fail(str(exc))
    # stdout carries one document when one was asked for there; people read stderr then.
    err = document is not None
    if document is not None:
        click.echo(document, nl=False)
    style = _style(sys.stderr if err else sys.stdout, color)
    if explain_formats:  # file names and notes escaped, no line a workflow command
        click.echo(text.explain_formats(report), nl=False, err=err)
    if github and "github" not in to_stdout:
        click.echo(github_out.render(report, base, new), nl=False)
    if not quiet:
        summary = text.statistics(report, style) if statistics else None
        summary = summary or text.render(report, str(report_file) if report_file else None, style)
        click.echo(summary, nl=False, err=err, color=style.color)
    if write_baseline:
        if not quiet:
            n = result.findings["finding_id"].n_unique()
            noun = "finding" if n == 1 else "findings"
            where = "stdout" if _is_dash(write_baseline) else write_baseline
            line = f"baseline: wrote {n} {noun} to {where}"
            click.echo(text.gate_lines([line]), nl=False, err=err)
        sys.exit(0)
    # Escaped like the summary. Unreadable input and unrunnable rules are gate lines too.
    if not quiet:
        click.echo(text.gate_lines(verdict.lines(), style), nl=False, err=err, color=style.color)
    sys.exit(verdict.exit_code)


def _sharded_scan(workers: int | None, ray_address: str | None, shard_dir: str | None) -> Callable:
    from functools import partial

    from forensics import distributed

    if ray_address:
        try:
            runner = distributed.ray_runner(None if ray_address == "local" else ray_address)
        except ImportError:
            _fail("--ray needs Ray: pip install 'forensics[ray]'")
    else:
        runner = distributed.processes(workers or 1)
    shards = workers or (4 if ray_address else 1)
    return partial(distributed.scan, runner=runner, shards=shards, shard_dir=shard_dir)


@cli.command("show")
@click.argument("trajectory")
@click.argument("paths", nargs=-1)
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Read the episode from this database (written by scan --db) instead of scanning.",
)
@click.option("--full", is_flag=True, help="Show every turn whole, not clipped.")
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour by role and severity; auto: on a terminal, unless NO_COLOR is set.",
)
@_rules_option
@_config_options
def show_cmd(
    trajectory: str,
    paths: tuple[str, ...],
    db_path: Path | None,
    full: bool,
    color: str,
    rules_dirs: tuple[Path, ...],
    config_path: Path | None,
    no_config: bool,
) -> None:
    """Print one trajectory turn by turn, with its findings inline.

    TRAJECTORY is a trajectory id, a prefix that names one, a task id, or TASK:TRIAL. The
    episode is read from --db (what that scan saw, at once) or by scanning PATHS again.

    Exit codes: 0 shown; 2 no such trajectory, an ambiguous one (the candidates are listed),
    or no --db and no PATHS.
    """
    from forensics import config
    from forensics.check import engine
    from forensics.ingest.parse.files import InputError
    from forensics.report.render import episode
    from forensics.tools import show

    try:
        if db_path is not None:
            view = show.from_db(db_path, trajectory)
        elif paths:
            from forensics.pipeline import scan as run_scan

            settings = _settings(config_path, no_config)
            result = run_scan(list(paths), rules_dirs=list(rules_dirs), settings=settings)
            view = show.from_scan(result, trajectory)
        else:
            _fail("show: give --db FILE (from scan --db) or the PATHS to scan")
    except (show.ShowError, InputError, config.ConfigError) as exc:
        _fail(str(exc))
    except engine.RuleError as exc:
        _fail(f"rule pack: {exc}")
    style = _style(sys.stdout, color)
    click.echo(episode.render(view, style, full=full), nl=False, color=style.color)


@cli.command("view")
@click.argument(
    "report", default="forensics-report", type=click.Path(path_type=Path), required=False
)
@click.option("--print-url", is_flag=True, help="Print the report's file:// URL, open nothing.")
def view_cmd(report: Path, print_url: bool) -> None:
    """Open the HTML report in the browser: REPORT is report.html or the -o directory of the
    scan that wrote it [default: forensics-report, scan's default].

    Exit codes: 0 opened (or printed); 2 no report there.
    """
    import webbrowser

    page = report / "report.html" if report.is_dir() else report
    if not page.is_file():
        _fail(f"{page}: no report there (forensics scan PATHS writes forensics-report/report.html)")
    url = page.resolve().as_uri()
    if print_url or not webbrowser.open(url):
        if not print_url:
            click.echo("forensics: no browser could be started; open this URL:", err=True)
        click.echo(url)


@cli.command()
@click.argument("sql")
@click.option(
    "--db",
    "db_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="DuckDB file written by forensics scan --db.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
def query(sql: str, db_path: Path, fmt: str) -> None:
    """Run SQL (read-only) against a database written by `scan --db`.

    Tables: turns, trajectories, findings, rejects, causes, runs (see `forensics schema`);
    views: rule_rates, trajectory_findings, rule_pairs.
    """
    from forensics import store
    from forensics.report.render import table

    try:
        columns, rows = store.query(db_path, sql)
    except store.StoreError as exc:
        _fail(str(exc))
    if not columns:
        return
    render = {"table": table.text, "csv": table.csv_text, "json": table.json_text}[fmt]
    click.echo(render(columns, rows), nl=False)


@cli.command("diff")
@click.argument("a")
@click.argument("b")
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the full comparison as JSON here.",
)
@click.option(
    "--only-common",
    is_flag=True,
    help="Compare only the episodes (task, trial) both A and B hold: causes, findings and "
    "rewards alike. Without it, B's extra episodes count (their findings are new).",
)
@_rules_option
@_config_options
def diff_cmd(
    a: str,
    b: str,
    json_path: Path | None,
    only_common: bool,
    rules_dirs: tuple[Path, ...],
    config_path: Path | None,
    no_config: bool,
) -> None:
    """Compare two scans: A before, B after. Each is a --json result or scan input.

    Prints new, fixed and persistent causes and findings and the reward per task. An episode
    (task, trial) of A that B does not hold was not rerun: its findings are "not rerun", never
    "fixed".

    Exit codes: 0 no new finding in B (findings of episodes not rerun do not count); 1 new
    findings in B; 2 usage or input error (a side that does not exist or holds no readable
    episode); 130 interrupted.
    """
    from forensics import config
    from forensics.check import engine
    from forensics.ingest.parse.files import InputError
    from forensics.tools import diff

    try:
        settings = _settings(config_path, no_config)
        before = diff.load_side(a, list(rules_dirs), settings)
        after = diff.load_side(b, list(rules_dirs), settings)
    except (InputError, config.ConfigError, diff.DiffError) as exc:
        _fail(str(exc))
    except engine.RuleError as exc:
        _fail(f"rule pack: {exc}")
    try:
        result = diff.compare(before, after, only_common=only_common)
    except diff.DiffError as exc:
        _fail(str(exc))
    if json_path:
        _write(json_path, diff.render_json(result))
    from forensics.report.render import text

    # Each line escaped like the gate's: paths and messages come from the command and the logs.
    click.echo(text.gate_lines(diff.render_text(result, a, b).splitlines()), nl=False)
    sys.exit(1 if result["findings"]["new"] else 0)


@cli.command("schema")
def schema_cmd() -> None:
    """Print every table and column with its description, and the SQL views."""
    from forensics import schema
    from forensics.diagnosis.result import VIEWS

    click.echo(schema.describe(), nl=False)
    click.echo("views (in --db files and forensics.scan(...).sql)")
    width = max(len(name) for name in VIEWS)
    for name, (doc, _select) in VIEWS.items():
        click.echo(f"  {name:<{width}}  {doc}")


@cli.command("formats")
@_rules_option
def formats_cmd(rules_dirs: tuple[Path, ...]) -> None:
    """List every input format: how it is detected, the columns it fills, the rules it allows."""
    from forensics.tools import format_catalogue

    rules = _load_rules(rules_dirs)
    click.echo(format_catalogue.render_text(format_catalogue.entries(rules), len(rules)), nl=False)


def _load_rules(rules_dirs: tuple[Path, ...]) -> list[engine.Rule]:
    from forensics.check import engine

    try:
        return engine.load_rules(list(rules_dirs))
    except engine.RuleError as exc:
        _fail(f"rule pack: {exc}")


@cli.group("rules", invoke_without_command=True)
@_rules_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown"]),
    default="text",
    help="markdown: the catalogue table (`forensics rules readme` writes it to docs/rules.md).",
)
@click.pass_context
def rules_cmd(ctx: click.Context, rules_dirs: tuple[Path, ...], fmt: str) -> None:
    """List the rule pack (id, severity, confidence, summary); preview rules are marked."""
    ctx.obj = {"rules_dirs": rules_dirs}
    if ctx.invoked_subcommand is not None:
        return
    from forensics.tools import rule_catalogue as catalogue

    rules = _load_rules(rules_dirs)
    if fmt == "markdown":
        click.echo(catalogue.markdown_table(rules))
        return
    width = max(len(r.id) for r in rules)
    for r in rules:
        mark = "[preview] " if r.preview else ""
        click.echo(f"{r.id:<{width}}  {r.severity:<8} {r.confidence:<9} {mark}{r.summary}")


@rules_cmd.command("explain")
@click.argument("rule_id")
@_rules_option
@click.pass_context
def rules_explain(ctx: click.Context, rule_id: str, rules_dirs: tuple[Path, ...]) -> None:
    """Print the documentation of one rule, and its parameters."""
    from forensics import schema

    rules = {r.id: r for r in _load_rules((*ctx.obj["rules_dirs"], *rules_dirs))}
    if rule_id not in rules:
        _fail(f"unknown rule {rule_id!r}; known: {', '.join(rules)}")
    r = rules[rule_id]
    status = ", status preview (runs, not yet measured on the accuracy corpus)" if r.preview else ""
    click.echo(
        f"{r.id} — {r.title}\nseverity {r.severity}, confidence {r.confidence}, cause {r.cause}"
        f"{status}\n"
    )
    for section in schema.DOC_SECTIONS:
        click.echo(f"## {section.replace('_', ' ')}\n{r.docs[section]}\n")
    if r.params:
        click.echo("## parameters")
        for p in r.params.values():
            click.echo(f"{p.name} = {p.literal()}\n  {p.doc}")
        first = next(iter(r.params.values()))
        click.echo(
            f"\nOverride in [tool.forensics]: params = {{ {r.id} = {{ {first.name} = "
            f'{first.literal()} }} }}; in a fixture case: "params": {{"{first.name}": …}}\n'
        )


@rules_cmd.command("readme")
@click.argument("path", default="docs/rules.md", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--check", is_flag=True, help="Only check: exit 1 when the table is stale.")
def rules_readme(path: Path, check: bool) -> None:
    """Write the pack's rule table between the rule-table markers of docs/rules.md."""
    from forensics.check import engine
    from forensics.tools import rule_catalogue as catalogue

    try:
        text = path.read_text(encoding="utf-8")
        table = catalogue.markdown_table(engine.load_rules())
        stale = catalogue.current(text) != table
    except (OSError, catalogue.CatalogueError) as exc:
        _fail(f"{path}: {exc}")
    except engine.RuleError as exc:
        _fail(f"rule pack: {exc}")
    if check:
        click.echo(f"{path}: rule table {'is stale' if stale else 'is up to date'}")
        sys.exit(1 if stale else 0)
    if stale:
        _write(path, catalogue.replaced(text, table))
    click.echo(f"{path}: rule table {'updated' if stale else 'already up to date'}")


@rules_cmd.command("new")
@click.argument("rule_id")
@click.option(
    "--dir",
    "rules_dir",
    default="rules",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the rule file.",
)
@click.option(
    "--fixtures-dir",
    default="tests/rule_fixtures",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the fixture file.",
)
def rules_new(rule_id: str, rules_dir: Path, fixtures_dir: Path) -> None:
    """Scaffold a preview rule (DIR/ID.toml) and its fixtures (ID.jsonl); never overwrites."""
    from forensics.tools import scaffold

    try:
        made = scaffold.new_rule(rule_id, rules_dir, fixtures_dir)
    except scaffold.ScaffoldError as exc:
        _fail(str(exc))
    click.echo(f'created {made.rule} (status = "preview")\ncreated {made.fixtures}')
    click.echo(
        "next: write the query and the cases, then\n"
        f"  pytest tests/test_rule_fixtures.py -k {rule_id} --update-snapshots\n"
        "  forensics rules readme"
    )


def main() -> None:
    """Entry point: no traceback ever reaches the user.

    click's standalone mode would turn Ctrl-C (and an EOFError from anywhere, such as a
    damaged gzip) into "Aborted!" with exit 1, which reads like a finding; the exit codes are
    ours instead: 2 for usage, 130 for an interrupt.
    """
    try:
        # click's own main would print a blank line of its own on Ctrl-C: the context is
        # made and invoked here instead.
        with cli.make_context("forensics", sys.argv[1:]) as ctx:
            code = cli.invoke(ctx)
    except click.exceptions.Exit as exc:  # --help, --version
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("forensics: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # `forensics scan … | head`: the reader left, nothing to say
        # Python's documented recipe: point stdout at devnull so the flush at exit can not
        # raise again; 141 is what a process ended by SIGPIPE returns.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except Exception as exc:
        click.echo(
            f"forensics: internal error (a bug in forensics, please report it): "
            f"{type(exc).__name__}: {_shown(str(exc))}",
            err=True,
        )
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
