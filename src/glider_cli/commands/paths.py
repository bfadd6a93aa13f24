"""`glider paths`: say where Glider keeps its state."""

from __future__ import annotations

import typer


def main(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Show where Glider keeps its state (GLIDER_HOME and the stores under it)."""
    from glider_cli import paths

    p = paths.resolve().as_dict()
    if json_out:
        from glider_cli.console import emit_json

        emit_json(p)
        return
    for k, v in p.items():
        print(f"{k:<11} {v}")
