"""What several commands share: errors and exit code 2, output files, the terminal's style, and
the settings: `[tool.forensics]` with the command line's flags over it."""

from __future__ import annotations

import functools
import inspect
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar, cast

import click
from click.core import ParameterSource

from forensics import atomic, interrupts, progress

if TYPE_CHECKING:
    from forensics import config
    from forensics.check import engine

F = TypeVar("F", bound=Callable[..., Any])

# ctx.meta keys: the settings flags the command line gave (by config.Table field), and the file
# options. Kept out of the commands' arguments: a command sees them only through settings().
_FLAGS = "forensics.settings.flags"
_FILE = "forensics.settings.file"


def fail(message: str) -> NoReturn:
    """A usage or input error: one line on stderr, exit code 2. After a Ctrl-C, an error is
    what the interrupt became (a query DuckDB stopped, a write cut short): exit code 130."""
    if interrupts.interrupted():
        raise KeyboardInterrupt
    progress.interrupt()
    click.echo(f"forensics: error: {shown(message)}", err=True)
    sys.exit(2)


def fail_lines(message: str) -> NoReturn:
    """fail(), for a message whose lines are meant as lines (DuckDB's SQL errors: the query,
    a caret under the error): each shown apart, the later ones indented under the first."""
    progress.interrupt()
    first, *rest = [line for line in message.split("\n") if line.strip()]
    lines = [f"forensics: error: {shown(first)}", *(f"  {shown(line)}" for line in rest)]
    click.echo("\n".join(line.rstrip() for line in lines), err=True)
    sys.exit(2)


def shown(message: str) -> str:
    """An error message on stderr: a path in it may hold a secret or terminal escapes."""
    from forensics.redact import redact_text
    from forensics.report.render.safe import guard_line, one_line

    return guard_line(one_line(redact_text(message) or ""))


def write(path: Path, text: str) -> None:
    try:
        atomic.write_text(path, text)
    except OSError as exc:
        fail(f"{path}: cannot write: {exc.strerror or exc}")


def is_dash(path: Path | None) -> bool:
    return path is not None and str(path) == "-"


def style(stream: TextIO, color: str) -> Any:
    """Wrapping at the terminal's width and colour, only for a person at a terminal."""
    from forensics.report.render import text

    tty = progress.wanted(stream, quiet=False, env={})  # a terminal, CI or not
    on = color == "always" or (color == "auto" and tty and not os.environ.get("NO_COLOR"))
    width = shutil.get_terminal_size().columns if tty else None
    return text.Style(width, on)


def output_option(flag: str, help: str) -> Callable[[F], F]:
    """An output file option (`--json`, `--md`, ...) given as `<name>_path`; `-` is stdout
    where the command's help says so."""
    return click.option(
        flag,
        f"{flag.removeprefix('--')}_path",
        type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
        help=help,
    )


def rules_option(f: F) -> F:
    return click.option(
        "--rules",
        "rules_dirs",
        multiple=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="Extra rule directory (same TOML format); may repeat.",
    )(f)


def load_rules(rules_dirs: tuple[Path, ...]) -> list[engine.Rule]:
    from forensics.check import engine

    try:
        return engine.load_rules(list(rules_dirs))
    except engine.RuleError as exc:
        fail(f"rule pack: {exc}")


def gathered(**builders: Callable[..., Any]) -> Callable[[F], F]:
    """Options that go together reach the command as one value: for each `name=build`, the
    command gets `name` = build(the parameters named like build's arguments) instead of them.
    A build runs before the command's body (a usage error it finds comes first)."""

    def decorate(f: F) -> F:
        takes = {name: list(inspect.signature(b).parameters) for name, b in builders.items()}

        @functools.wraps(f)
        def command(**params: Any) -> Any:
            for name, build in builders.items():
                params[name] = build(**{p: params.pop(p) for p in takes[name]})
            return f(**params)

        return cast(F, command)

    return decorate


# --- settings -----------------------------------------------------------------------------------


def settings() -> config.Settings:
    """This command's settings: `[tool.forensics]` of the nearest config file (--config FILE;
    none with --no-config) under the flags the command line gave (`setting` options). The one
    place flags and file meet: config.parse merges them, so the command line wins over the
    file, and the file over the defaults. Raises config.ConfigError."""
    from forensics import config

    ctx = click.get_current_context()
    flags = ctx.meta.get(_FLAGS, {})
    path, no_config = ctx.meta.get(_FILE, (None, False))
    return config.parse({}, None, flags) if no_config else config.load(path, flags=flags)


def settings_chosen_by() -> str | None:
    """How the config file was chosen: "--config", "--no-config", or None (the nearest)."""
    path, no_config = click.get_current_context().meta.get(_FILE, (None, False))
    return "--no-config" if no_config else "--config" if path is not None else None


def setting(
    *decls: str, parse: Callable[[Any], Any] | None = None, **attrs: Any
) -> Callable[[F], F]:
    """An option for the `[tool.forensics]` key of its parameter's name (a config.Table field):
    given on the command line it wins over the file's (see settings()). parse: its value as
    the key's (ValueError: a usage error)."""

    def given(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if parse is not None:
            try:
                value = parse(value)
            except ValueError as exc:
                raise click.BadParameter(str(exc)) from None
        if param.name and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE:
            ctx.meta.setdefault(_FLAGS, {})[param.name] = value
        return value

    return click.option(*decls, expose_value=False, callback=given, **attrs)


def config_options(f: F) -> F:
    """--config FILE and --no-config: which file settings() reads."""

    def chosen(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        path, no_config = ctx.meta.get(_FILE, (None, False))
        if param.name == "no_config":
            no_config = value
        else:
            path = value
        ctx.meta[_FILE] = (path, no_config)

    f = click.option(
        "--no-config",
        is_flag=True,
        expose_value=False,
        callback=chosen,
        help="Ignore pyproject.toml / forensics.toml settings.",
    )(f)
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        expose_value=False,
        callback=chosen,
        help="Settings file (forensics.toml or a pyproject.toml with [tool.forensics]); "
        "default: the nearest one from the current directory upward.",
    )(f)
