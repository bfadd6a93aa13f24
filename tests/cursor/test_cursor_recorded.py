"""Cursor turns in the real event log: `glider context turns` and the egress audit show them (a
`/local` turn left nothing on the wire, a `/cloud` turn is one call to the origin), and `glider
serve`'s line per request names the client `cursor`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import cursor_wire as wire
import pytest
from cursor_client import CursorClient
from cursor_harness import Glider, cursor_yaml
from glider_harness import GliderServer
from typer.testing import CliRunner

from glider_cli.cli import app
from glider_cli.commands.serve import request_line

pytestmark = pytest.mark.live


def test_context_turns_egress_and_terminal_line(fake, fake_cursor, tmp_path: Path) -> None:
    fake.reset()
    lines: list[str] = []
    server = GliderServer(
        cursor_yaml(fake_cursor, tmp_path, fake.url),
        tmp_path,
        record=False,
        observer=lambda seen, served: lines.append(request_line(seen, served)),
    )
    with server:
        g = Glider(server, tmp_path)
        client = CursorClient(g.port, g.ca)

        async def go() -> None:
            await client.turn(
                "agent.api5.cursor.sh", wire.run_request("conv-r", wire.user_action("/local hi"))
            )
            await client.turn(
                "agent.api5.cursor.sh", wire.run_request("conv-r", wire.user_action("/cloud go"))
            )

        asyncio.run(go())
    home = str(tmp_path / "home")
    runner = CliRunner()
    turns = runner.invoke(app, ["context", "turns", "--json", "--home", home])
    assert turns.exit_code == 0, turns.output
    eps = json.loads(turns.stdout)
    asked = [e.get("ask") or e.get("asked") for e in eps]
    assert any("/local hi" in str(a) for a in asked) and any("/cloud go" in str(a) for a in asked)
    egress = runner.invoke(app, ["context", "egress", "--json", "--home", home])
    assert egress.exit_code == 0, egress.output
    calls = json.loads(egress.stdout)["calls"]
    assert [c["backend"] for c in calls] == ["origin"] and calls[0]["session"] == "conv-r"
    assert len(lines) == 2 and all(" cursor " in line for line in lines)
    assert "local" in lines[0] and "ollama" in lines[0] and "origin" in lines[1]
