"""`forensics show`: one trajectory turn by turn, with its findings inline."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from forensics.commands.shared import config_options, fail, rules_option, settings, style


@click.command("show")
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
@rules_option
@config_options
def command(
    trajectory: str,
    paths: tuple[str, ...],
    db_path: Path | None,
    full: bool,
    color: str,
    rules_dirs: tuple[Path, ...],
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
            from forensics.pipeline import scan

            result = scan(list(paths), rules_dirs=list(rules_dirs), settings=settings())
            view = show.from_scan(result, trajectory)
        else:
            fail("show: give --db FILE (from scan --db) or the PATHS to scan")
    except (show.ShowError, InputError, config.ConfigError) as exc:
        fail(str(exc))
    except engine.RuleError as exc:
        fail(f"rule pack: {exc}")
    look = style(sys.stdout, color)
    click.echo(episode.render(view, look, full=full), nl=False, color=look.color)
