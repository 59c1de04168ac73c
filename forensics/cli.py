"""Command line: the `forensics` group, its exit codes, and the commands it loads on demand.

Each command is a module of forensics.commands; the group imports one only when it runs or when
help lists it, so starting `forensics` costs click and the command that runs, no more.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from forensics import interrupts

# command name -> its module (which defines `command`), in the order help lists them
COMMANDS = {
    "compare": "forensics.commands.compare",
    "diff": "forensics.commands.diff",
    "eval": "forensics.commands.eval",
    "formats": "forensics.commands.formats",
    "query": "forensics.commands.query",
    "rules": "forensics.commands.rules",
    "scan": "forensics.commands.scan",
    "schema": "forensics.commands.schema",
    "show": "forensics.commands.show",
    "view": "forensics.commands.view",
}


class LazyGroup(click.Group):
    """A group whose commands are modules, imported when a command is asked for by name."""

    def __init__(self, *args: Any, modules: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.modules = modules

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.modules})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.modules and cmd_name not in self.commands:
            command = importlib.import_module(self.modules[cmd_name]).command
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup, modules=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(package_name="forensics")
def cli() -> None:
    """Offline trajectory forensics: why did this agent run fail?"""


def main() -> None:
    """Entry point: no traceback ever reaches the user.

    click's standalone mode would turn Ctrl-C (and an EOFError from anywhere, such as a
    damaged gzip) into "Aborted!" with exit 1, which reads like a finding; the exit codes are
    ours instead: 2 for usage, 130 for an interrupt.
    """
    try:
        # click's own main would print a blank line of its own on Ctrl-C: the context is
        # made and invoked here instead.
        with interrupts.watched(), cli.make_context("forensics", sys.argv[1:]) as ctx:
            code = cli.invoke(ctx)
    except click.exceptions.Exit as exc:  # --help, --version
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("forensics: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # `forensics scan … | head`: the reader left, nothing to say
        # Python's documented recipe: point stdout at devnull so the flush at exit can not
        # raise again; 141 is what a process ended by SIGPIPE returns.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except Exception as exc:
        if interrupts.interrupted():  # what a Ctrl-C became inside a library: the interrupt
            click.echo("forensics: interrupted", err=True)
            sys.exit(130)
        from forensics.commands.shared import shown

        click.echo(
            f"forensics: internal error (a bug in forensics, please report it): "
            f"{type(exc).__name__}: {shown(str(exc))}",
            err=True,
        )
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
