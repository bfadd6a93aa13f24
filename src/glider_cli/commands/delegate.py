"""`glider delegate`: run one task with another agent CLI, handing it the workspace's continuity block."""

from __future__ import annotations

from pathlib import Path

import typer


def main(
    task: str = typer.Argument(..., help="What the delegate should do.", show_default=False),
    claude: bool = typer.Option(False, "--claude", help="Delegate to Claude Code (claude -p)."),
    cursor_agent: bool = typer.Option(False, "--cursor-agent", help="Delegate to cursor-agent."),
    agy: bool = typer.Option(False, "--agy", help="Delegate to the Antigravity CLI (agy)."),
    codex: bool = typer.Option(False, "--codex", help="Delegate to Codex (codex exec)."),
    workspace: Path | None = typer.Option(
        None, "--workspace", help="Workspace (default: the current directory)."
    ),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds before the run is stopped."),
    config: str | None = typer.Option(None, "--config", help="Config file (default: the usual resolution)."),
    json_out: bool = typer.Option(False, "--json", help="Print the run's result as JSON."),
) -> None:
    """Run a task with another agent CLI, giving it what happened earlier in this workspace."""
    import os

    from glider_cli import paths
    from glider_cli.config.load import load_config
    from glider_cli.console import emit_json, err
    from glider_cli.delegate import service
    from glider_cli.errors import DelegateError
    from glider_cli.store.writer import EventWriter

    chosen = [
        v
        for v, on in (("claude", claude), ("cursor-agent", cursor_agent), ("agy", agy), ("codex", codex))
        if on
    ]
    if len(chosen) != 1:
        raise typer.BadParameter("choose exactly one of --claude, --cursor-agent, --agy, --codex")
    settings = load_config(config=config, environ=os.environ).settings
    p = paths.resolve()
    # Not started: no warm load for one CLI run; close() writes what was emitted.
    sink = EventWriter(p, settings.context)
    compactor = service.make_compactor(p, settings, environ=os.environ, events=sink)
    result = service.delegate(
        p,
        settings,
        chosen[0],
        task,
        workspace or Path.cwd(),
        "glider-cli",
        timeout=timeout,
        environ=os.environ,
        compactor=compactor,
        events=sink,
    )
    if json_out:
        emit_json(result.to_dict())
    elif result.text:
        print(result.text)
    files = ", ".join(result.files) or "none"
    err.print(
        f"{result.vendor}: {'ok' if result.ok else 'failed'} in {result.duration_s:g} s; "
        f"changed: {files}; context: {result.block_entries} entries",
        markup=False,
        highlight=False,
    )
    compactor.wait()
    compactor.close()
    sink.close()
    if not result.ok:
        if json_out:
            raise typer.Exit(1)
        raise DelegateError(
            f"{result.vendor} did not complete the task" + (" (timed out)" if result.timed_out else "")
        )
