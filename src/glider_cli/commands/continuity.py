"""`glider continuity`: look at a workspace's continuity record and at the block a delegate would get."""

from __future__ import annotations

from pathlib import Path

import typer

from glider_cli.commands.options import (
    AGY,
    CODEX,
    CONFIG,
    CURSOR_AGENT,
    HOME,
    JSON,
    PROFILE,
    home_for,
    vendor_of,
)

app = typer.Typer(help="Inspect the per-workspace continuity record.", no_args_is_help=True)

_WORKSPACE_HELP = "Workspace (default: the current directory)."


@app.command("show")
def show(
    ctx: typer.Context,
    workspace: Path | None = typer.Option(None, "--workspace", help=_WORKSPACE_HELP),
    json_out: bool = JSON,
    home: str | None = HOME,
) -> None:
    """Show the workspace's continuity record, newest last."""
    from glider_cli.commands import console
    from glider_cli.delegate import continuity
    from glider_cli.delegate.workspace import normalise

    p = home_for(ctx, home).paths
    ws = normalise(workspace or Path.cwd())
    record = continuity.read(p, ws)
    path = continuity.record_path(p, ws)
    if json_out:
        console.emit_json(
            {"workspace": str(ws), "record": str(path), "entries": [e.to_dict() for e in record.entries]}
        )
        return
    rows = []
    for i, e in enumerate(record.entries, 1):
        what = f"{e.delegate} {'ok' if e.ok else 'failed'}" if e.kind == "delegate" else ""
        first = " ".join(e.text.split())
        rows.append((i, e.kind, e.ts, e.source_cli, len(e.text), what, first[:60]))
    console.table(
        f"{ws} ({len(rows)} entries)", ("#", "kind", "time", "source CLI", "chars", "delegate", "text"), rows
    )
    console.err.print(f"record: {path}", markup=False, highlight=False)


@app.command("block")
def block(
    ctx: typer.Context,
    task: str = typer.Option(..., "--task", help="The delegate's task the entries are ranked against."),
    workspace: Path | None = typer.Option(None, "--workspace", help=_WORKSPACE_HELP),
    claude: bool = typer.Option(False, "--claude", help="For Claude Code (the default)."),
    cursor_agent: bool = CURSOR_AGENT,
    agy: bool = AGY,
    codex: bool = CODEX,
    # The spelling before the vendor switches (kept for scripts): `--vendor codex` is `--codex`.
    vendor_name: str | None = typer.Option(None, "--vendor", hidden=True),
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    json_out: bool = JSON,
    home: str | None = HOME,
) -> None:
    """Print exactly the block a delegate would get for TASK, and why each entry is in it.

    The vendor (`--claude`, `--cursor-agent`, `--agy`, `--codex`, as for `glider delegate`) sets the size
    cap: codex reads at most 32 KiB of its context file.
    """
    from glider_cli.commands import console
    from glider_cli.config.load import load_config
    from glider_cli.delegate import continuity, operations
    from glider_cli.delegate.workspace import normalise

    vendor = vendor_of(claude, cursor_agent, agy, codex, named=vendor_name, default="claude")
    where = home_for(ctx, home)
    settings = load_config(config=config, profile=profile, environ=where.environ).settings
    p = where.paths
    ws = normalise(workspace or Path.cwd())
    record = continuity.read(p, ws)
    _, blk = operations.prepare_context(settings, vendor, task, ws, record.entries)
    if json_out:
        console.emit_json({"workspace": str(ws), "task": task, "vendor": vendor, **blk.to_dict()})
        return
    for it in blk.items:
        cut = ", truncated" if it.truncated else ""
        console.err.print(
            f"in   {it.entry.id} {it.entry.kind:<8} score {it.score:.3f}  {it.reason}{cut}",
            markup=False,
            highlight=False,
        )
    for x in blk.excluded:
        console.err.print(
            f"out  {x.entry.id} {x.entry.kind:<8} score {x.score:.3f}  {x.reason}",
            markup=False,
            highlight=False,
        )
    console.err.print(f"{len(blk.items)} entries, about {blk.tokens} tokens", markup=False, highlight=False)
    if blk.text:
        print(blk.text, end="")
