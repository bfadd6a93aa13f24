"""`glider delegate`: run one task with another agent CLI, handing it the workspace's continuity block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    yes_to: str | None = typer.Option(
        None,
        "--yes-to",
        help="Tools (comma-separated, e.g. Bash,Edit) whose refusals are allowed without asking: the run "
        "is resumed with exactly what was refused allowed.",
    ),
    home: str | None = HOME,
) -> None:
    """Run a task with another agent CLI, giving it what happened earlier in this workspace."""
    from glider_cli.commands.console import emit_json, err
    from glider_cli.config.load import load_config
    from glider_cli.delegate import operations
    from glider_cli.delegate.permissions import Grants
    from glider_cli.delegate.stop import Stop, on_signals
    from glider_cli.delegate.workspace import shell_front
    from glider_cli.errors import DelegateError
    from glider_cli.store.eventlog.writer import EventWriter

    grants = Grants()
    vendor = vendor_of(claude, cursor_agent, agy, codex)
    where = home_for(ctx, home)
    settings = load_config(config=config, profile=profile, environ=where.environ).settings
    # Not started: no warm load for one CLI run; close() writes what was emitted.
    sink = EventWriter(where.paths, settings.context)
    compactor = operations.make_compactor(where.paths, settings, environ=where.environ, events=sink)
    # Ctrl-C, SIGTERM and SIGHUP stop the delegate's whole process tree and remove its run directory
    # before Glider exits (`delegate.stop`, `delegate.guard`); outside a run they act as usual.
    stop = Stop()
    with on_signals(stop):
        result = operations.delegate(
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
            grants=grants,
            cancel=stop,
        )
    if result.token is not None and not stop.is_set():
        # What its CLI refused: allowed by --yes-to, or asked on a terminal (y/N); else only said.
        pending = grants.take(result.token)
        if pending is not None and _granted(pending, yes_to, json_out):
            from glider_cli.delegate import allow_deny

            # The resumed run's text is the answer: the refused run's is not printed before it.
            with on_signals(stop):
                result = allow_deny.allow(
                    where.paths,
                    settings,
                    pending,
                    timeout=timeout,
                    environ=where.environ,
                    compactor=compactor,
                    events=sink,
                    cancel=stop,
                )
        elif pending is not None:
            from glider_cli.delegate import allow_deny

            allow_deny.deny(where.paths, pending, pending.source_cli)
    if stop.is_set():
        # The record first: after SIGHUP the terminal may be gone, and writing to it fail. A compaction
        # pass is not waited for (nothing is lost: the record changes only when a pass has written).
        sink.close()
        _stopped(result, stop, json_out)
        raise typer.Exit(stop.exit_code or 1)
    if json_out:
        emit_json(result.to_dict())
    else:
        if result.text:
            print(result.text)
        if result.refused:
            print("\n" + refused_text(result.vendor, result.refused))
        changed = result.changes.render(operations.DIFF_CHARS_IN_REPLY)
        if changed:  # what the run changed in the workspace, from the workspace itself
            print(("\n" if result.text else "") + changed)
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


def _stopped(result: Any, stop: Any, json_out: bool) -> None:
    """What a signal stopped, on stderr (and the run's record as JSON with --json)."""
    from glider_cli.commands.console import emit_json, err
    from glider_cli.delegate.stop import said

    halted = result.stopped
    if halted is None:
        what = f"{result.vendor} had already finished; nothing was running"
    elif halted.pid is None:
        what = f"{result.vendor} was stopped before it started"
    else:
        others = halted.processes - 1
        tree = f" and {others} process{'es' if others != 1 else ''} it started" if others > 0 else ""
        gone = "was removed" if halted.run_dir_removed else "could not be removed"
        what = f"stopped {result.vendor} (pid {halted.pid}){tree}; its run directory {halted.run_dir} {gone}"
    try:
        if json_out:
            emit_json(result.to_dict())
        err.print(f"glider delegate: {said(stop.by)}: {what}", markup=False, highlight=False)
    except OSError:  # the terminal was closed (SIGHUP): nobody is left to read it
        pass


def _granted(pending: Any, yes_to: str | None, json_out: bool) -> bool:
    """Whether the person allows what the run was refused: every refused tool named by --yes-to, or
    "y" at the y/N question on a terminal (never asked with --json or without a terminal)."""
    import sys

    tools = {t.strip() for t in (yes_to or "").split(",") if t.strip()}
    if tools and all(r.tool in tools for r in pending.refused if r.grant):
        return True
    if json_out or not sys.stdin.isatty():
        return False
    from glider_cli.commands.console import err

    for r in pending.refused:
        err.print(f"{pending.vendor} was refused: {r.line()}", markup=False, highlight=False)
    rules = " ".join(pending.grants)
    return typer.confirm(f"Allow exactly this ({rules}) and let {pending.vendor} continue?", default=False)


def refused_text(vendor: str, refused: Any) -> str:
    """What the run was refused and had not been allowed, for the terminal."""
    lines = [f"{vendor} was refused permission for:", *(f"  - {r.line()}" for r in refused)]
    tools = sorted({r.tool for r in refused if r.grant})
    if tools:
        lines.append(f"Not allowed. To allow exactly this for one run: --yes-to {','.join(tools)}")
    else:
        lines.append(f"{vendor} has no switch that allows exactly this for one run.")
    return "\n".join(lines)
