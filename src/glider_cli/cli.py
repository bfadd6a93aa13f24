"""The root `glider` command: composes one module per subcommand and is the one GliderError boundary.

Command modules are thin and import the core lazily, so `glider --help` stays fast.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from glider_cli import __version__
from glider_cli.errors import GliderError

# (name, module under glider_cli.commands, "group" for a Typer with subcommands | "command" for `main`)
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("paths", "paths", "command"),
    ("delegate", "delegate", "command"),
    ("continuity", "continuity", "group"),
    ("serve", "serve", "command"),
    ("route", "route", "group"),
    ("lint", "lint", "command"),
    ("context", "context", "group"),
    ("prune", "prune", "command"),
)

app = typer.Typer(
    name="glider",
    help="A local-first router for coding agents.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    # Locals can hold API keys: never show them.
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"glider {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    home: str | None = typer.Option(
        None, "--home", help="State directory (default: $GLIDER_HOME or ~/.glider).", show_default=False
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """A local-first router for coding agents."""
    if home:
        os.environ["GLIDER_HOME"] = home


def _register() -> None:
    for name, module, kind in COMMANDS:
        mod = importlib.import_module(f"glider_cli.commands.{module}")
        if kind == "group":
            app.add_typer(mod.app, name=name)
        else:
            app.command(name)(mod.main)


_register()


def main() -> None:
    """Entry point: Typer handles usage errors (exit 2); GliderError becomes a message and exit 1."""
    try:
        app()
    except GliderError as exc:
        sys.stderr.write(f"Error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"Hint: {exc.hint}\n")
        sys.exit(1)
