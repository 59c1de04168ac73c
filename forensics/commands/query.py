"""`forensics query`: read-only SQL over a database written by `scan --db`."""

from __future__ import annotations

from pathlib import Path

import click

from forensics.commands.shared import fail, fail_lines


@click.command("query")
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
def command(sql: str, db_path: Path, fmt: str) -> None:
    """Run SQL (read-only) against a database written by `scan --db`.

    Tables: turns, trajectories, findings, rejects, causes, runs (see `forensics schema`);
    views: rule_rates, trajectory_findings, rule_pairs.
    """
    from forensics import store
    from forensics.report.render import table

    try:
        columns, rows = store.query(db_path, sql)
    except store.QueryError as exc:
        fail_lines(str(exc))
    except store.StoreError as exc:
        fail(str(exc))
    if not columns:
        return
    render = {"table": table.text, "csv": table.csv_text, "json": table.json_text}[fmt]
    click.echo(render(columns, rows), nl=False)
