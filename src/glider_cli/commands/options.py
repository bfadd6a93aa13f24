"""The options every command spells the same way, and the state directory a command works in.

- `-c/--config`, `-p/--profile`, `--json` and `--home` mean the same on every command that takes them
  (`config_option()`, `profile_option()`, `json_option()`, `home_option()`).
- The vendor of a delegate run is one switch, the same on `glider delegate` and `glider continuity
  block`: `--claude`, `--cursor-agent`, `--agy` or `--codex` (`vendor_of`).
- `--home` is taken by the root (`glider --home DIR CMD`) and by each command that touches disk
  (`glider CMD --home DIR`); the command's own wins. The root passes its value down in the Click
  context object (`RootOptions`); `home_for` turns both into a `Home`: the paths, and the environment
  the core is given (GLIDER_HOME set to the chosen directory, so config resolution and every child
  process agree). `os.environ` itself is never written.

Imports only Typer and `values` (the root imports this module for `glider --help`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer

from glider_cli.values import Frozen, init_fields

if TYPE_CHECKING:
    from glider_cli.paths import Paths

# Every vendor a delegate run can go to, in the order `--help` lists them (delegate/agents.py).
VENDORS: tuple[str, ...] = ("claude", "cursor-agent", "agy", "codex")


def home_option() -> Any:
    return typer.Option(
        None, "--home", help="State directory (default: $GLIDER_HOME or ~/.glider).", show_default=False
    )


def config_option() -> Any:
    return typer.Option(None, "--config", "-c", help="Config file (default: resolved as usual).")


def profile_option(example: str = "default") -> Any:
    return typer.Option(None, "--profile", "-p", help=f"A bundled profile, e.g. {example}.")


def json_option(help: str = "Print JSON.") -> Any:
    return typer.Option(False, "--json", help=help)


HOME = home_option()
CONFIG = config_option()
PROFILE = profile_option()
JSON = json_option()

CLAUDE = typer.Option(False, "--claude", help="Claude Code (claude -p).")
CURSOR_AGENT = typer.Option(False, "--cursor-agent", help="cursor-agent.")
AGY = typer.Option(False, "--agy", help="The Antigravity CLI (agy).")
CODEX = typer.Option(False, "--codex", help="Codex (codex exec).")


def vendor_of(
    claude: bool,
    cursor_agent: bool,
    agy: bool,
    codex: bool,
    *,
    named: str | None = None,
    default: str | None = None,
) -> str:
    """The one vendor switched on; `named` (an older `--vendor NAME`) counts as its switch; `default`
    when none is (if given). Anything else is a usage error."""
    if named is not None and named not in VENDORS:
        raise typer.BadParameter(f"unknown vendor {named!r}; one of {', '.join(VENDORS)}")
    switches = (claude, cursor_agent, agy, codex)
    chosen = [v for v, on in zip(VENDORS, switches, strict=True) if on or v == named]
    if not chosen and default is not None:
        return default
    if len(chosen) != 1:
        raise typer.BadParameter("choose exactly one of --claude, --cursor-agent, --agy, --codex")
    return chosen[0]


class RootOptions(Frozen):
    """What the root command was given, for its subcommands (the Click context object)."""

    home: str | None

    def __init__(self, home: str | None) -> None:
        init_fields(self, home)


class Home(Frozen):
    """The state directory a command works in, and the environment the core is given."""

    paths: Paths
    environ: Mapping[str, str]

    def __init__(self, paths: Paths, environ: Mapping[str, str]) -> None:
        init_fields(self, paths, environ)


def home_for(ctx: typer.Context, home: str | None = None) -> Home:
    """The command's `--home`, else the root's, else $GLIDER_HOME, else `~/.glider`."""
    from glider_cli import paths

    root = ctx.find_object(RootOptions)
    chosen = home if home is not None else (root.home if root is not None else None)
    p = paths.resolve(os.environ, home=chosen)
    environ: Mapping[str, str] = os.environ if chosen is None else {**os.environ, "GLIDER_HOME": str(p.home)}
    return Home(p, environ)
