"""Talk to `glider mcp` with the official Python SDK's client (a real MCP client over stdio)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_store import Recorded


def params(rec: Recorded, cwd: Path, *extra: str) -> StdioServerParameters:
    argv = ["-m", "glider_cli", "mcp", "--home", str(rec.home), "-c", str(rec.cfg), *extra]
    return StdioServerParameters(command=sys.executable, args=argv, env=rec.env, cwd=str(cwd))


def calls(rec: Recorded, cwd: Path, todo: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each (tool, arguments) called in order in one session; the CallToolResults."""

    async def run() -> list[Any]:
        async with Client(params(rec, cwd), read_timeout_seconds=120) as client:
            return [await client.call_tool(name, args) for name, args in todo]

    return asyncio.run(run())


def call(rec: Recorded, cwd: Path, name: str, **args: Any) -> Any:
    return calls(rec, cwd, [(name, args)])[0]
