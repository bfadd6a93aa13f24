"""`glider mcp`: Glider's context store and continuity record as an MCP server on stdio.

An agent (Claude Code, Codex, Gemini CLI, Cursor: `glider setup <client> --mcp` registers it) starts it
and speaks MCP on its stdin/stdout; the tools are `app.mcp_tools`, the wire `server.mcp_server`.
Answers are scoped to the workspace the server runs in (`--workspace`, else its working directory).
Only protocol messages go to stdout; logs and errors go to stderr.
"""

from __future__ import annotations

from pathlib import Path

import typer

from glider_cli.commands.options import CONFIG, HOME, PROFILE, home_for


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

    from glider_cli.app.mcp_tools import McpTools
    from glider_cli.config.load import load_config
    from glider_cli.server.mcp_server import run_stdio
    from glider_cli.store.service import ContextStore

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="glider mcp: %(message)s")
    where = home_for(ctx, home)
    settings = load_config(config=config, profile=profile, environ=where.environ).settings
    tools = McpTools(
        where.paths,
        ContextStore(where.paths, settings.context),
        lambda: settings,
        environ=where.environ,
        config=config,
        profile=profile,
        default=(workspace or Path.cwd()).absolute(),
    )
    run_stdio(tools)
