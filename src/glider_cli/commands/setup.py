"""`glider setup CLIENT`: point Claude Code, Codex, Gemini CLI, Cursor or cursor-agent at Glider
(`--undo` takes it back).

The logic is `glider_cli.app.setup`; this module reads the options and the environment (HOME and
CODEX_HOME for the clients' files; the manifest lives under GLIDER_HOME, or `--home`), calls it once
and prints the plan.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import typer

from glider_cli.commands.options import HOME, home_for, json_option


def main(
    ctx: typer.Context,
    client: str = typer.Argument(
        ..., help="claude-code, codex, gemini, cursor or cursor-agent.", show_default=False
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print what would be written; write nothing."),
    undo: bool = typer.Option(False, "--undo", help="Remove exactly what an earlier setup wrote."),
    project: bool = typer.Option(
        False,
        "--project",
        help="claude-code: write into ./.claude instead of ~/.claude. gemini: trust this folder "
        "(Gemini CLI's folder trust), so `gemini -p` runs in it.",
    ),
    statusline: bool = typer.Option(
        False, "--statusline", help="claude-code: add a statusline showing the session's last route."
    ),
    url: str = typer.Option("http://127.0.0.1:8787", "--url", help="Where `glider serve` listens."),
    cursor_proxy: str = typer.Option(
        "http://127.0.0.1:8789",
        "--cursor-proxy",
        help="cursor, cursor-agent: where the Cursor proxy listens (`glider serve --cursor-port`).",
    ),
    mcp: bool = typer.Option(
        False,
        "--mcp",
        help="claude-code, codex, gemini, cursor: register `glider mcp` (Glider's context tools) as an MCP "
        "server instead; with --undo, remove only that.",
    ),
    http1: bool = typer.Option(
        False,
        "--http1",
        help="cursor, cursor-agent: also switch the agent to HTTP/1.1 (RunSSE). Not needed: Glider "
        "routes HTTP/2 too; for a network where Cursor's HTTP/2 does not get through.",
    ),
    json_out: bool = json_option("Print the plan as JSON."),
    home: str | None = HOME,
) -> None:
    """Point Claude Code, Codex, Gemini CLI, Cursor or cursor-agent at Glider; --undo takes it back."""
    from glider_cli.app import setup, setup_plan
    from glider_cli.commands import console

    command = f"{shlex.quote(sys.executable)} -m glider_cli.app.statusline --url {shlex.quote(url)}"
    codex_home = os.environ.get("CODEX_HOME")
    gemini_home = os.environ.get("GEMINI_CLI_HOME")
    options = setup_plan.Options(
        home=Path.home(),
        base_url=url.rstrip("/"),
        project=Path.cwd() if project else None,
        statusline=command if statusline else None,
        codex_home=Path(codex_home) if codex_home else None,
        gemini_home=Path(gemini_home) if gemini_home else None,
        cursor_proxy=cursor_proxy.rstrip("/"),
        glider_home=home_for(ctx, home).paths.home,
        cursor_config_dir=Path(os.environ["CURSOR_CONFIG_DIR"])
        if os.environ.get("CURSOR_CONFIG_DIR")
        else None,
        platform=sys.platform,
        cursor_http1=http1,
    )
    manifest = setup_plan.Manifest(home_for(ctx, home).paths.home / "setup.json")
    if mcp:
        from glider_cli.app import setup_mcp

        server = [sys.executable, "-m", "glider_cli", "mcp", "--home", str(options.glider_home)]
        key = setup_mcp.manifest_key(client)
        plan = setup_plan.undo(key, manifest) if undo else setup_mcp.plan(client, options, server, manifest)
    else:
        plan = setup_plan.undo(client, manifest) if undo else setup.plan(client, options, manifest)
    if not dry_run:
        setup_plan.apply(plan, manifest)
    if json_out:
        console.emit_json({**plan.to_dict(), "applied": not dry_run})
        return
    verb = "would " if dry_run else ""
    for c in plan.changes:
        # A key is set in a JSON file: its value as JSON (`true`, `"override"`), never Python's repr.
        shown = json.dumps(c.value, ensure_ascii=False)
        console.line(f"{verb}{c.action} {c.path}" + (f": {c.key} = {shown}" if c.key else ""))
        if dry_run and c.text:
            for text in c.text.splitlines():
                console.line(f"    {text}")
    for path, why in plan.skipped:
        console.warn(f"skipped {path}: {why}")
    if not plan.changes and not plan.skipped:
        console.line("nothing to do")
    for note in plan.notes if not undo else []:
        console.err.print(note, markup=False)
