"""`glider setup <client> --mcp`: register `glider mcp` (Glider's MCP server on stdio) with a client,
where and how the client itself keeps its MCP servers.

- claude-code: what `claude mcp add --scope user glider -- <command>` writes, `mcpServers.glider` in
  `~/.claude.json` (`{"type": "stdio", "command", "args", "env"}`); with `--project`, what
  `--scope project` writes, the same entry in the project's `.mcp.json`.
- codex: a `[mcp_servers.glider]` table (`command`, `args`) in `~/.codex/config.toml` (`$CODEX_HOME`).
- gemini: `mcpServers.glider` (`command`, `args`) in `~/.gemini/settings.json` (`$GEMINI_CLI_HOME`
  instead of HOME); with `--project`, in the project's `.gemini/settings.json`.
- cursor: `mcpServers.glider` in `~/.cursor/mcp.json` (read by the IDE and by cursor-agent); with
  `--project`, in the project's `.cursor/mcp.json`.
The command is this Python running `-m glider_cli mcp --home <GLIDER_HOME>`, so the client starts the
Glider that set it up, on the same home. The plan's client is `<client> --mcp` (`manifest_key`): the
manifest keeps the registration apart from the client's other keys, and `--mcp --undo` removes only
it. As for every setup target, nothing the user wrote is overwritten and no key is written.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from typing import Any

from glider_cli.app.setup_plan import Manifest, Options, Plan, block, plan_block, plan_set
from glider_cli.errors import ConfigError

MCP_CLIENTS = ("claude-code", "codex", "gemini", "cursor")
NAME = "glider"


def manifest_key(client: str) -> str:
    if client not in MCP_CLIENTS:
        extra = " (cursor-agent reads Cursor's mcp.json: `glider setup cursor --mcp`)"
        raise ConfigError(
            f"--mcp registers Glider with {', '.join(MCP_CLIENTS)}, not {client!r}"
            + (extra if client == "cursor-agent" else "")
        )
    return f"{client} --mcp"


def plan(client: str, o: Options, command: Sequence[str], manifest: Manifest) -> Plan:
    """The changes that register `command` (argv: the program, then its arguments) as `glider`."""
    p = Plan(manifest_key(client))
    program, args = command[0], list(command[1:])
    entry: dict[str, Any] = {"command": program, "args": args}
    if client == "claude-code":
        path = (o.project / ".mcp.json") if o.project is not None else (o.home / ".claude.json")
        plan_set(p, path, f"mcpServers.{NAME}", {"type": "stdio", **entry, "env": {}}, manifest)
        p.notes.append("`claude mcp list` shows glider; a project's .mcp.json server asks for approval once.")
    elif client == "codex":
        _codex(p, o, program, args, manifest)
    elif client == "gemini":
        base = o.project if o.project is not None else (o.gemini_home or o.home)
        plan_set(p, base / ".gemini" / "settings.json", f"mcpServers.{NAME}", entry, manifest)
    else:
        base = o.project if o.project is not None else o.home
        plan_set(p, base / ".cursor" / "mcp.json", f"mcpServers.{NAME}", entry, manifest)
    p.notes.append(
        "The agent starts `glider mcp` itself; its tools (context_query, continuity, recent_turns, "
        "route_explain) answer about the project the agent runs in."
    )
    return p


def _codex(p: Plan, o: Options, program: str, args: list[str], manifest: Manifest) -> None:
    path = (o.codex_home or o.home / ".codex") / "config.toml"
    try:
        data = tomllib.loads(path.read_text()) if path.exists() else {}
    except tomllib.TOMLDecodeError as exc:
        p.skipped.append((str(path), f"not valid TOML ({exc}); left as it is"))
        return
    # JSON strings and arrays of strings are TOML basic strings and arrays.
    table = block(
        p.client,
        [f"[mcp_servers.{NAME}]", f"command = {json.dumps(program)}", f"args = {json.dumps(args)}"],
    )
    servers = data.get("mcp_servers")
    if isinstance(servers, dict) and NAME in servers and table not in path.read_text():
        p.skipped.append((str(path), f"[mcp_servers.{NAME}] is already there; not overwritten"))
        return
    plan_block(p, path, table, "end", manifest)
