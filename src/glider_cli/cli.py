"""The root `glider` command: composes one module per subcommand and is the one GliderError boundary.

The root group is lazy, as in Click's "lazily loading subcommands" pattern: a group that overrides
`list_commands` and `get_command`, so a command's module is imported, and its Click command built, only
when that command is looked up to run or to show its own help. `glider --help` lists the commands
from the COMMANDS table and imports none of them. Command modules in turn import the core lazily, so
each command pays only for what it uses.

Only Typer's public API is used (`typer.Typer`, `typer.Context`, `typer.main.get_command`,
`typer.core.TyperGroup` / `TyperCommand`), never `typer._click` or Click itself: Typer 0.26 and later
carry their own copy of Click under a private name, earlier ones use the `click` package, and this
module runs on both (CI runs `glider` on the lowest Typer pyproject.toml allows).

The root's `--home` is passed down in the Click context object (`commands.options.RootOptions`),
never written to `os.environ`.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterator, MutableMapping
from gettext import gettext as _
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from glider_cli import __version__
from glider_cli.commands.options import HOME, RootOptions
from glider_cli.errors import GliderError

# (name, module under glider_cli.commands, "group" for a Typer with subcommands | "command" for `main`,
# help: the command's docstring or its Typer's help, which `glider --help` shortens as Click does).
# Listed in the order `glider --help` shows them. tests/test_cli.py checks each help against its module.
COMMANDS: tuple[tuple[str, str, str, str], ...] = (
    ("paths", "paths", "command", "Show where Glider keeps its state (GLIDER_HOME and the stores under it)."),
    (
        "delegate",
        "delegate",
        "command",
        "Run a task with another agent CLI, giving it what happened earlier in this workspace.",
    ),
    (
        "serve",
        "serve",
        "command",
        "Run the routing proxy (Anthropic and OpenAI APIs in; local or cloud models out).",
    ),
    ("lint", "lint", "command", "Check a config or profile for errors and warnings (exit 1 on any error)."),
    (
        "doctor",
        "doctor",
        "command",
        "Check that the configured backends answer: models, context window, tools (exit 1 when unusable).",
    ),
    (
        "prune",
        "prune",
        "command",
        "Delete event files older than the retention window; prints the plan, acts only with --yes.",
    ),
    ("continuity", "continuity", "group", "Inspect the per-workspace continuity record."),
    ("route", "route", "group", "See how the router decides."),
    ("context", "context", "group", "Query and maintain the context store."),
    (
        "mcp",
        "mcp",
        "command",
        "Serve Glider's context store and continuity record to an agent over MCP (stdio).",
    ),
    (
        "setup",
        "setup",
        "command",
        "Point Claude Code, Codex, Gemini CLI, Cursor or cursor-agent at Glider; --undo takes it back.",
    ),
)
_BY_NAME = {name: (module, kind) for name, module, kind, _help in COMMANDS}


def load_command(name: str) -> Any:
    """Import one command's module and build its Click command as the root's `add_typer` / `command`
    would have (a Click command of whichever Click the installed Typer uses)."""
    module, kind = _BY_NAME[name]
    mod = importlib.import_module(f"glider_cli.commands.{module}")
    # A scratch Typer with the root's settings registers the one command; `typer.main.get_command`
    # turns a Typer holding one group into a group of one, and one holding one command into it.
    scratch = typer.Typer(
        add_completion=False,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        pretty_exceptions_show_locals=False,
    )
    if kind == "group":
        scratch.add_typer(mod.app, name=name)
        return typer.main.get_command(scratch).commands[name]  # type: ignore[attr-defined]
    scratch.command(name)(mod.main)
    return typer.main.get_command(scratch)


class _LazyCommands(MutableMapping[str, Any]):
    """Every command name in COMMANDS; a command is built on first access.

    The group's `commands` attribute: Typer's did-you-mean for an unknown command draws on its keys,
    which need no import.
    """

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        cmd = self._built.get(name)
        if cmd is None:
            if name not in _BY_NAME:
                raise KeyError(name)
            cmd = self._built[name] = load_command(name)
        return cmd

    def __setitem__(self, name: str, cmd: Any) -> None:
        self._built[name] = cmd

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from _BY_NAME
        yield from (name for name in self._built if name not in _BY_NAME)

    def __len__(self) -> int:
        return len(_BY_NAME) + sum(1 for name in self._built if name not in _BY_NAME)


class LazyGroup(TyperGroup):
    """The root group: imports only the command that runs; lists all from COMMANDS."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands()

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # Group.format_commands, with each help from COMMANDS instead of the built command: a bare
        # TyperCommand carrying the text shortens it exactly as the real one would.
        limit = formatter.width - 6 - max(len(name) for name, *_rest in COMMANDS)
        rows = [
            (name, TyperCommand(name, help=text).get_short_help_str(limit)) for name, _m, _k, text in COMMANDS
        ]
        with formatter.section(_("Commands")):
            formatter.write_dl(rows)


app = typer.Typer(
    name="glider",
    cls=LazyGroup,
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
    ctx: typer.Context,
    home: str | None = HOME,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """A local-first router for coding agents."""
    ctx.obj = RootOptions(home)


def main() -> None:
    """Entry point: Typer handles usage errors (exit 2); GliderError becomes a message and exit 1."""
    # What is loaded by now (Typer, Click, this module) lives as long as the process. Frozen, it is
    # left out of every later collection, the one at exit included, instead of being walked each
    # time: about 25 ms of `glider --help` and 40 ms of `glider route explain` (bench/bench_cli.py).
    gc.freeze()
    try:
        app()
    except GliderError as exc:
        sys.stderr.write(f"Error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"Hint: {exc.hint}\n")
        sys.exit(1)
