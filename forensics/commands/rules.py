"""`forensics rules`: the rule pack listed, one rule explained, the README table, a new rule
and its fixtures run."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from forensics.commands.shared import fail, load_rules, rules_option, write
from forensics.report.render.safe import block


@click.group("rules", invoke_without_command=True)
@rules_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown"]),
    default="text",
    help="markdown: the catalogue table (`forensics rules readme` writes it to docs/rules.md).",
)
@click.pass_context
def command(ctx: click.Context, rules_dirs: tuple[Path, ...], fmt: str) -> None:
    """List the rule pack (id, severity, confidence, summary); preview rules are marked."""
    ctx.obj = {"rules_dirs": rules_dirs}
    if ctx.invoked_subcommand is not None:
        return
    from forensics.tools import rule_catalogue as catalogue

    rules = load_rules(rules_dirs)
    if fmt == "markdown":
        click.echo(block(catalogue.markdown_table(rules)))
        return
    width = max(len(r.id) for r in rules)
    for r in rules:
        mark = "[preview] " if r.preview else ""
        line = f"{r.id:<{width}}  {r.severity:<8} {r.confidence:<9} {mark}{r.summary}"
        click.echo(block(line))


@command.command("explain")
@click.argument("rule_id")
@rules_option
@click.pass_context
def explain(ctx: click.Context, rule_id: str, rules_dirs: tuple[Path, ...]) -> None:
    """Print the documentation of one rule, and its parameters."""
    from forensics import schema

    rules = {r.id: r for r in load_rules((*ctx.obj["rules_dirs"], *rules_dirs))}
    if rule_id not in rules:
        from forensics.config import no_such_rule

        fail(f"{rule_id}: {no_such_rule(rule_id, list(rules))}")
    r = rules[rule_id]
    status = ", status preview (runs, not yet measured on the accuracy corpus)" if r.preview else ""
    # A rule pack is text from elsewhere (--rules DIR): shown, never obeyed, like log text.
    click.echo(
        block(
            f"{r.id} — {r.title}\nseverity {r.severity}, confidence {r.confidence}, "
            f"cause {r.cause}{status}\n"
        )
    )
    for section in schema.DOC_SECTIONS:
        click.echo(block(f"## {section.replace('_', ' ')}\n{r.docs[section]}\n"))
    if r.params:
        click.echo("## parameters")
        for p in r.params.values():
            click.echo(block(f"{p.name} = {p.literal()}\n  {p.doc}"))
        first = next(iter(r.params.values()))
        click.echo(
            block(
                f"\nOverride in [tool.forensics]: params = {{ {r.id} = {{ {first.name} = "
                f'{first.literal()} }} }}; in a fixture case: "params": {{"{first.name}": …}}\n'
            )
        )


@command.command("readme")
@click.argument("path", default="docs/rules.md", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--check", is_flag=True, help="Only check: exit 1 when the table is stale.")
def readme(path: Path, check: bool) -> None:
    """Write the pack's rule table between the rule-table markers of docs/rules.md."""
    from forensics.check import engine
    from forensics.tools import rule_catalogue as catalogue

    try:
        text = path.read_text(encoding="utf-8")
        table = catalogue.markdown_table(engine.load_rules())
        stale = catalogue.current(text) != table
    except (OSError, catalogue.CatalogueError) as exc:
        fail(f"{path}: {exc}")
    except engine.RuleError as exc:
        fail(f"rule pack: {exc}")
    if check:
        click.echo(f"{path}: rule table {'is stale' if stale else 'is up to date'}")
        sys.exit(1 if stale else 0)
    if stale:
        write(path, catalogue.replaced(text, table))
    click.echo(f"{path}: rule table {'updated' if stale else 'already up to date'}")


@command.command("new")
@click.argument("rule_id")
@click.option(
    "--dir",
    "rules_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the rule file (default: rules/ of the checkout you are in, else of the "
    "one forensics runs from).",
)
@click.option(
    "--fixtures-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the fixture files (default: tests/rule_fixtures/ of that checkout, or "
    "DIR/fixtures for a --dir of your own).",
)
def new(rule_id: str, rules_dir: Path | None, fixtures_dir: Path | None) -> None:
    """Scaffold a preview rule with its fixtures, snapshot and cause; never overwrites."""
    from forensics.tools import scaffold

    try:
        made = scaffold.new_rule(rule_id, rules_dir, fixtures_dir)
    except scaffold.ScaffoldError as exc:
        fail(str(exc))
    click.echo(f'created {made.rule} (status = "preview")')
    for path in (made.fixtures, made.snapshot, made.cause):
        if path is not None:
            click.echo(f"created {path}")
    if made.cause is None:
        click.echo(f"cause: {rule_id}, declared already")
    if made.catalogue is not None:
        click.echo(f"updated the rule table of {made.catalogue}")
    if made.builtin:
        click.echo(
            "next: write the query, the cases and the cause's fix, then\n"
            f"  pytest tests/check/test_rule_fixtures.py -k {rule_id} --update-snapshots\n"
            "  forensics rules readme"
        )
        return
    rules_dir = made.rule.parent
    fixtures = (
        ""
        if made.fixtures.parent == rules_dir / "fixtures"
        else (f" --fixtures-dir {shlex.quote(str(made.fixtures.parent))}")
    )
    click.echo(
        "next: write the query, the cases and the cause's fix, then check the rule on its "
        f"fixtures:\n  forensics rules test {shlex.quote(str(rules_dir))}{fixtures}\n"
        f"and scan with it: forensics scan --rules {shlex.quote(str(rules_dir))} PATHS"
    )


@command.command("test")
@click.argument("rules_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--fixtures-dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Directory of the fixture files (default: DIR/fixtures, or tests/rule_fixtures/ for "
    "a checkout's rules/).",
)
def test(rules_dir: Path, fixtures_dir: Path | None) -> None:
    """Run the rules of DIR on their fixtures: each must fire on exactly its `ruleid` turns,
    on no `ok` turn, and find what its snapshot pins. Exit 1 when one does not."""
    from forensics.check import engine
    from forensics.tools import rule_fixtures, scaffold

    fixtures_dir = fixtures_dir or scaffold.fixtures_for(rules_dir)
    if not fixtures_dir.is_dir():
        fail(f"{fixtures_dir}: no such directory (pass --fixtures-dir)")
    try:
        problems, cases = rule_fixtures.check_directory(rules_dir, fixtures_dir)
    except engine.RuleError as exc:
        fail(f"rule pack: {exc}")
    except rule_fixtures.FixtureError as exc:
        fail(str(exc))
    for problem in problems:
        click.echo(problem)
    verdict = f"{len(problems)} failed" if problems else "all passed"
    click.echo(f"{rules_dir}: {cases} fixture cases, {verdict}")
    sys.exit(1 if problems else 0)
