"""`forensics formats`: every input format, what it fills and which rules it allows."""

from __future__ import annotations

from pathlib import Path

import click

from forensics.commands.shared import load_rules, rules_option


@click.command("formats")
@rules_option
def command(rules_dirs: tuple[Path, ...]) -> None:
    """List every input format: how it is detected, the columns it fills, the rules it allows."""
    from forensics.report.render.safe import block
    from forensics.tools import format_catalogue

    rules = load_rules(rules_dirs)
    # Formats installed packages declare, and rules from --rules DIR: shown, never obeyed.
    text = format_catalogue.render_text(format_catalogue.entries(rules), len(rules))
    click.echo(block(text), nl=False)
