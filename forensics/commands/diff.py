"""`forensics diff`: what changed between two scans."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from forensics.commands.shared import (
    config_options,
    fail,
    output_option,
    rules_option,
    settings,
    write,
)


@click.command("diff")
@click.argument("a")
@click.argument("b")
@output_option("--json", "Write the full comparison as JSON here.")
@click.option(
    "--only-common",
    is_flag=True,
    help="Compare only the episodes (task, trial) both A and B hold: causes, findings and "
    "rewards alike. Without it, B's extra episodes count (their findings are new).",
)
@rules_option
@config_options
def command(
    a: str,
    b: str,
    json_path: Path | None,
    only_common: bool,
    rules_dirs: tuple[Path, ...],
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
    from forensics.report.render import text
    from forensics.tools import diff

    try:
        chosen = settings()
        before = diff.load_side(a, list(rules_dirs), chosen)
        after = diff.load_side(b, list(rules_dirs), chosen)
    except (InputError, config.ConfigError, diff.DiffError) as exc:
        fail(str(exc))
    except engine.RuleError as exc:
        fail(f"rule pack: {exc}")
    try:
        result = diff.compare(before, after, only_common=only_common)
    except diff.DiffError as exc:
        fail(str(exc))
    if json_path:
        write(json_path, diff.render_json(result))
    # Each line escaped like the gate's: paths and messages come from the command and the logs.
    click.echo(text.gate_lines(diff.render_text(result, a, b).splitlines()), nl=False)
    sys.exit(1 if result["findings"]["new"] else 0)
