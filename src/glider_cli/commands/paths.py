"""`glider paths`: say where Glider keeps its state."""

from __future__ import annotations

import typer

from glider_cli.commands.options import HOME, JSON, home_for


def main(ctx: typer.Context, json_out: bool = JSON, home: str | None = HOME) -> None:
    """Show where Glider keeps its state (GLIDER_HOME and the stores under it)."""
    p = home_for(ctx, home).paths.as_dict()
    if json_out:
        from glider_cli.commands.console import emit_json

        emit_json(p)
        return
    for k, v in p.items():
        print(f"{k:<11} {v}")
