"""`forensics schema`: the tables, their columns and the SQL views."""

from __future__ import annotations

import click


@click.command("schema")
def command() -> None:
    """Print every table and column with its description, and the SQL views."""
    from forensics import schema
    from forensics.diagnosis.result import VIEWS

    click.echo(schema.describe(), nl=False)
    click.echo("views (in --db files and forensics.scan(...).sql)")
    width = max(len(name) for name in VIEWS)
    for name, (doc, _select) in VIEWS.items():
        click.echo(f"  {name:<{width}}  {doc}")
