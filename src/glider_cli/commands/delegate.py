"""`glider delegate`: run one task with another agent CLI, handing it the workspace's continuity block."""

from __future__ import annotations

from pathlib import Path

import typer

from glider_cli.commands.options import (
    AGY,
    CLAUDE,
    CODEX,
    CONFIG,
    CURSOR_AGENT,
    HOME,
    PROFILE,
    home_for,
    json_option,
    vendor_of,
)


def main(
    ctx: typer.Context,
    task: str = typer.Argument(..., help="What the delegate should do.", show_default=False),
    claude: bool = CLAUDE,
    cursor_agent: bool = CURSOR_AGENT,
    agy: bool = AGY,
    codex: bool = CODEX,
    workspace: Path | None = typer.Option(
        None, "--workspace", help="Workspace (default: the current directory)."
    ),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds before the run is stopped."),
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    json_out: bool = json_option("Print the run's result as JSON."),
    home: str | None = HOME,
) -> None:
    """Run a task with another agent CLI, giving it what happened earlier in this workspace."""
    from glider_cli.commands.console import emit_json, err
    from glider_cli.config.load import load_config
    from glider_cli.delegate import service
    from glider_cli.delegate.workspace import shell_front
    from glider_cli.errors import DelegateError
    from glider_cli.store.eventlog.writer import EventWriter

    vendor = vendor_of(claude, cursor_agent, agy, codex)
    where = home_for(ctx, home)
    settings = load_config(config=config, profile=profile, environ=where.environ).settings
    # Not started: no warm load for one CLI run; close() writes what was emitted.
    sink = EventWriter(where.paths, settings.context)
    compactor = service.make_compactor(where.paths, settings, environ=where.environ, events=sink)
    result = service.delegate(
        where.paths,
        settings,
        vendor,
        task,
        workspace or Path.cwd(),
        # The outcome belongs to the session that sent the work: the agent whose shell runs this.
        shell_front(where.environ),
        timeout=timeout,
        environ=where.environ,
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
