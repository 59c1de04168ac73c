"""`forensics eval`: a scan's findings scored against labels through a crosswalk."""

from __future__ import annotations

import json
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


@click.command("eval")
@click.argument("labels", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--crosswalk",
    "crosswalk_name",
    required=True,
    help="Crosswalk from the labels' categories to rules: a TOML file, or the name of one "
    "shipped (trail, agentrx, whowhen, tau2-termination).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Score this saved `scan --json` result instead of scanning the labelled files.",
)
@click.option(
    "--disputes",
    "disputes_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Adjudicated labels and findings (JSONL, each with a reason): scored apart, listed.",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory the labels' file paths are relative to [default: the labels file's].",
)
@click.option(
    "--tolerance",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Steps or turns a finding may sit from the labelled one at the tolerant level.",
)
@click.option(
    "--line-tolerance",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Lines a labelled line may sit outside the finding's record at the tolerant level.",
)
@output_option("--json", "Write the figures as JSON here; - for stdout.")
@output_option("--md", "Write the figures as Markdown here; - for stdout.")
@rules_option
@config_options
def command(
    labels: Path,
    crosswalk_name: str,
    report_path: Path | None,
    disputes_path: Path | None,
    root: Path | None,
    tolerance: int,
    line_tolerance: int,
    json_path: Path | None,
    md_path: Path | None,
    rules_dirs: tuple[Path, ...],
) -> None:
    """Score findings against LABELS (JSONL; docs/eval.md) through a crosswalk.

    Scans the files the labels name (or reads --report) and prints, per category, precision and
    recall with n at three levels of place (exact, within --tolerance, same trajectory), the
    trajectory attribution (the labels' infra / model / none against the tool's fault class)
    and the disputes, applied apart from the labels.

    Exit codes: 0 scored; 2 usage or input error (a labels, crosswalk, disputes or report file
    that can not be used); 130 interrupted.
    """
    from forensics import config
    from forensics.check import engine
    from forensics.ingest.parse.files import InputError
    from forensics.tools import evaluate as ev

    if is_dash(json_path) and is_dash(md_path):
        fail("only one of --json and --md can write to stdout")
    base = root if root is not None else labels.parent
    try:
        crosswalk = ev.load_crosswalk(ev.crosswalk_path(crosswalk_name))
        label_list = ev.load_labels(labels, base)
        if not label_list:
            fail(f"{labels}: no label")
        disputes = ev.load_disputes(disputes_path, base)
        pack = ev.load_pack(list(rules_dirs))
        if report_path is not None:
            observed = ev.load_report(report_path, Path.cwd())
            missing: list[str] = []
        else:
            # a local copy of a public dataset may lack files (too large for its mirror): their
            # labels are left out and counted, not silently
            missing = [f for f in ev.files_named(label_list) if not Path(f).is_file()]
            present = [f for f in ev.files_named(label_list) if f not in missing]
            if not present:
                fail(f"{labels}: none of the {len(missing)} labelled files exists (--root?)")
            observed = ev.scan_files(present, list(rules_dirs), settings())
    except (ev.EvalError, InputError, config.ConfigError) as exc:
        fail(str(exc))
    except engine.RuleError as exc:
        fail(f"rule pack: {exc}")
    result = ev.evaluate(
        label_list,
        observed,
        crosswalk,
        pack,
        disputes,
        tolerance=tolerance,
        line_tolerance=line_tolerance,
        labels_path=str(labels),
        missing_files=missing,
    )
    from forensics.report.render import safe

    # labels, categories, notes and reasons are other people's text: no control character of
    # theirs reaches a terminal or the Actions runner
    doc = safe.json_visible(json.dumps(ev.as_json(result), indent=1, ensure_ascii=False)) + "\n"
    md = safe.block(ev.markdown(result))
    for path, body in ((json_path, doc), (md_path, md)):
        if path is None:
            continue
        if is_dash(path):
            sys.stdout.write(body)
        else:
            write(path, body)
    out = sys.stderr if is_dash(json_path) or is_dash(md_path) else sys.stdout
    click.echo(safe.block(ev.text(result)), file=out)
