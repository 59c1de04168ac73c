"""Command line: thin wiring of the pipeline to files, the terminal and exit codes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from forensics import engine, schema
from forensics.ingest.files import InputError

FAIL_ON = engine.SEVERITIES


def _fail(message: str) -> None:
    click.echo(f"forensics: error: {message}", err=True)
    sys.exit(2)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="forensics")
def cli() -> None:
    """Offline trajectory forensics: why did this agent run fail?"""


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    "output",
    default="forensics-report",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for the HTML report (report.html).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the machine result (summary, causes, findings, rejects) here.",
)
@click.option(
    "--rules",
    "rules_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Extra rule directory (same TOML format); may repeat.",
)
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default="info",
    show_default=True,
    help="Exit 1 when a finding has at least this severity.",
)
@click.option("--no-report", is_flag=True, help="Do not write the HTML report.")
@click.option("--explain-formats", is_flag=True, help="Print how each file was detected.")
def scan(
    paths: tuple[str, ...],
    output: Path,
    json_path: Path | None,
    rules_dirs: tuple[Path, ...],
    fail_on: str,
    no_report: bool,
    explain_formats: bool,
) -> None:
    """Scan logs and result files; print the diagnosis, write the report.

    Exit codes: 0 no findings at or above --fail-on, 1 findings, 2 usage or input error.
    """
    from forensics.pipeline import scan as run_scan
    from forensics.render import html, jsonout, model, text

    try:
        result = run_scan(list(paths), list(rules_dirs))
    except InputError as exc:
        _fail(str(exc))
    except engine.RuleError as exc:
        _fail(f"rule pack: {exc}")
    report = model.build(result)
    if explain_formats:
        for f in report["files"]:
            click.echo(f"{f['path']}: {f['format'] or 'rejected'} — {f['detected_because']}")
    report_file = None
    if not no_report:
        report_file = output / "report.html"
        _write(report_file, html.render(report, result))
    if json_path:
        _write(json_path, jsonout.render(report))
    click.echo(text.render(report, str(report_file) if report_file else None), nl=False)
    if result.trajectories.is_empty() and result.turns.is_empty():
        _fail("no readable input: every file was rejected (see the rejects above)")
    threshold = FAIL_ON.index(fail_on)
    if any(FAIL_ON.index(s) >= threshold for s in result.findings["severity"].to_list()):
        sys.exit(1)


@cli.command("schema")
def schema_cmd() -> None:
    """Print every table and column with its description."""
    click.echo(schema.describe(), nl=False)


@cli.group("rules", invoke_without_command=True)
@click.pass_context
def rules_cmd(ctx: click.Context) -> None:
    """List the rule pack (id, severity, confidence, summary)."""
    if ctx.invoked_subcommand is None:
        for r in engine.load_rules():
            click.echo(f"{r.id:<20} {r.severity:<8} {r.confidence:<9} {r.summary}")


@rules_cmd.command("explain")
@click.argument("rule_id")
def rules_explain(rule_id: str) -> None:
    """Print the documentation of one rule."""
    rules = {r.id: r for r in engine.load_rules()}
    if rule_id not in rules:
        _fail(f"unknown rule {rule_id!r}; known: {', '.join(rules)}")
    r = rules[rule_id]
    click.echo(
        f"{r.id} — {r.title}\nseverity {r.severity}, confidence {r.confidence}, cause {r.cause}\n"
    )
    for section in engine.DOC_SECTIONS:
        click.echo(f"## {section.replace('_', ' ')}\n{r.docs[section]}\n")


def main() -> None:
    """Entry point: no traceback ever reaches the user."""
    try:
        cli.main(standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("forensics: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        click.echo(f"forensics: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)
