"""`glider continuity`: look at a workspace's continuity record and at the block a delegate would get."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(help="Inspect the per-workspace continuity record.", no_args_is_help=True)

_WORKSPACE_HELP = "Workspace (default: the current directory)."


@app.command("show")
def show(
    workspace: Path | None = typer.Option(None, "--workspace", help=_WORKSPACE_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the workspace's continuity record, newest last."""
    from glider_cli import console, paths
    from glider_cli.delegate import continuity
    from glider_cli.delegate.workspace import normalise

    p = paths.resolve()
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
    task: str = typer.Option(..., "--task", help="The delegate's task the entries are ranked against."),
    workspace: Path | None = typer.Option(None, "--workspace", help=_WORKSPACE_HELP),
    vendor: str = typer.Option("claude", "--vendor", help="claude, cursor-agent, agy or codex (size caps)."),
    config: str | None = typer.Option(None, "--config", help="Config file (default: the usual resolution)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print exactly the block a delegate would get for TASK, and why each entry is in it."""
    import os

    from glider_cli import console, paths
    from glider_cli.config.load import load_config
    from glider_cli.delegate import continuity, service
    from glider_cli.delegate.workspace import normalise

    settings = load_config(config=config, environ=os.environ).settings
    p = paths.resolve()
    ws = normalise(workspace or Path.cwd())
    record = continuity.read(p, ws)
    _, blk = service.prepare_context(settings, vendor, task, ws, record.entries)
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
