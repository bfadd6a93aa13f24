"""`glider mcp`: Glider's context store and continuity record as an MCP server on stdio.

An agent (Claude Code, Codex, Gemini CLI, Cursor: `glider setup <client> --mcp` registers it) starts it
and speaks MCP on its stdin/stdout; the tools are `app.mcp_tools`, the wire `server.mcp_server`.
Answers are scoped to the root the client names (MCP roots), else to the workspace the server runs in
(`--workspace`, else its working directory).
The store is read by a worker process (`server.store_worker`), which exits when idle.
Only protocol messages go to stdout; logs and errors go to stderr.
"""

from __future__ import annotations

from pathlib import Path

import typer

from glider_cli.commands.options import CONFIG, HOME, PROFILE, home_for

IDLE = 60.0
# The worker exits after an answer that leaves it and this server together above this (the next call
# starts a fresh one): a query of every turn of weeks of history holds about 120 MB there.
BUDGET_MB = 400.0


def main(
    ctx: typer.Context,
    workspace: Path | None = typer.Option(
        None, "--workspace", help="The project the answers are about (default: the current directory)."
    ),
    config: str | None = CONFIG,
    profile: str | None = PROFILE,
    home: str | None = HOME,
) -> None:
    """Serve Glider's context store and continuity record to an agent over MCP (stdio)."""
    import logging
    import sys

    from glider_cli.config.load import load_config
    from glider_cli.server.mcp_server import WorkerTools, run_stdio
    from glider_cli.server.store_worker import StoreWorker

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="glider mcp: %(message)s")
    where = home_for(ctx, home)
    settings = load_config(config=config, profile=profile, environ=where.environ).settings  # fail early
    # The store is read in a worker process that exits after IDLE seconds without a call: an agent
    # session keeps this server for hours, the memory of a query of weeks of turns only while used.
    worker = StoreWorker(where.paths, settings.context, budget_mb=BUDGET_MB, idle=IDLE)
    try:
        run_stdio(WorkerTools(worker, config, profile, (workspace or Path.cwd()).absolute()))
    finally:
        worker.close()
