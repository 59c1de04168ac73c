"""`forensics view`: open the HTML report a scan wrote."""

from __future__ import annotations

from pathlib import Path

import click

from forensics.commands.shared import fail


@click.command("view")
@click.argument(
    "report", default="forensics-report", type=click.Path(path_type=Path), required=False
)
@click.option("--print-url", is_flag=True, help="Print the report's file:// URL, open nothing.")
def command(report: Path, print_url: bool) -> None:
    """Open the HTML report in the browser: REPORT is report.html or the -o directory of the
    scan that wrote it [default: forensics-report, scan's default].

    Exit codes: 0 opened (or printed); 2 no report there.
    """
    import webbrowser

    page = report / "report.html" if report.is_dir() else report
    if not page.is_file():
        fail(f"{page}: no report there (forensics scan PATHS writes forensics-report/report.html)")
    url = page.resolve().as_uri()
    if print_url or not webbrowser.open(url):
        if not print_url:
            click.echo("forensics: no browser could be started; open this URL:", err=True)
        click.echo(url)
