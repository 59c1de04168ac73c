"""`forensics compare`: many runs side by side, a runs × causes matrix."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from forensics.commands.shared import (
    config_options,
    fail,
    is_dash,
    output_option,
    rules_option,
    settings,
    write,
)


@click.command("compare")
@click.argument("runs", nargs=-1, required=True)
@output_option("--json", "Write the comparison as JSON here (- for stdout).")
@output_option("--md", "Write the comparison as Markdown here (- for stdout).")
@click.option(
    "--by-run",
    is_flag=True,
    help="Split each RUN into the runs it holds (a folder of several models or settings): "
    "one column per run.",
)
@rules_option
@config_options
def command(
    runs: tuple[str, ...],
    json_path: Path | None,
    md_path: Path | None,
    by_run: bool,
    rules_dirs: tuple[Path, ...],
) -> None:
    """Compare two runs or more: for each cause, its rate in each run with a 95% Wilson
    interval, the reward it cost, and what changed from the first run.

    Each RUN is a --json result of `forensics scan` or scan input (a file, a folder, a glob);
    the runs are the columns, in the order given, and the first is the reference. With
    --by-run, each RUN is split into the runs it holds, one column each.

    Exit codes: 0 no run is worse than the first; 1 a cause appeared in a run, or its rate rose
    beyond the overlap of the two intervals; 2 usage or input error (fewer than two runs, a run
    that does not exist or holds no readable episode); 130 interrupted.
    """
    from forensics import config
    from forensics.check import engine
    from forensics.ingest.parse.files import InputError
    from forensics.report.render import text
    from forensics.tools import compare

    if len(runs) < 2 and not by_run:
        fail(
            "compare needs two runs or more, not 1 (forensics scan shows one; --by-run splits "
            "each input into the runs it holds)"
        )
    if is_dash(json_path) and is_dash(md_path):
        fail("--json - and --md - both ask for stdout: give one of them a file")
    try:
        chosen = settings()
        models = []
        for spec in runs:
            model = compare.load_run(spec, list(rules_dirs), chosen)
            models += [(spec, m) for m in (compare.by_run(model) if by_run else [model])]
        result = compare.compare(models)
    except (InputError, config.ConfigError, compare.CompareError) as exc:
        fail(str(exc))
    except engine.RuleError as exc:
        fail(f"rule pack: {exc}")
    from forensics.report.render.safe import guard_lines, json_visible

    to_stdout = None
    # As scan writes them to stdout: JSON with escapes a terminal does not obey, Markdown
    # (escaped by its renderer) with no line the Actions runner takes for a command.
    for path, render, shown in (
        (json_path, compare.render_json, json_visible),
        (md_path, compare.render_md, guard_lines),
    ):
        if path is None:
            continue
        if is_dash(path):
            to_stdout = shown(render(result))
        else:
            write(path, render(result))
    # Each line escaped like the gate's: paths and titles come from the command and the logs.
    summary = text.gate_lines(compare.render_text(result).splitlines())
    if to_stdout is not None:  # the document has stdout; people read stderr then
        click.echo(to_stdout, nl=False)
        click.echo(summary, nl=False, err=True)
    else:
        click.echo(summary, nl=False)
    sys.exit(1 if result["worse"] else 0)
