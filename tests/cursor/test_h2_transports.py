"""`glider doctor` says which transport each Cursor client used last through the proxy: the IDE on
HTTP/2 `Run`, cursor-agent on HTTP/1.1 `RunSSE` (as the proxy saw their runs; kept in
`$GLIDER_HOME/cursor/transports.json`, with no header value in it)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import cursor_wire as wire
import pytest
from cursor_client import CursorClient, texts
from cursor_h2_client import H2CursorClient
from cursor_harness import cursor_yaml
from fake_cursor import FakeCursor
from typer.testing import CliRunner

from fake_upstream import closed_port_url
from glider_cli.cli import app

pytestmark = pytest.mark.live
AGENT = "agent.api5.cursor.sh"


@pytest.fixture
def origin() -> Iterator[FakeCursor]:
    with FakeCursor() as f:
        yield f


def test_doctor_says_which_transport_each_cursor_client_used_last(origin, glider_for, tmp_path: Path) -> None:
    cfg = cursor_yaml(origin, tmp_path, closed_port_url())
    g = glider_for(cfg)
    home = tmp_path / "home"
    cli = {"x-cursor-client-type": "cli", "x-cursor-client-version": "cli-2026.07.01-abc"}

    async def go() -> None:
        conn = await H2CursorClient(g.port, g.ca).connect(AGENT)  # the IDE (x-cursor-client-type: ide)
        assert texts(await conn.run(wire.run_request("c-ide", wire.user_action("/cloud hi")))) != []
        await conn.close()
        await CursorClient(g.port, g.ca).turn(
            AGENT, wire.run_request("c-cli", wire.user_action("/cloud hi")), headers=cli
        )

    asyncio.run(go())
    saved = json.loads((home / "cursor" / "transports.json").read_text())
    assert {c: (e["transport"], e["host"]) for c, e in saved.items()} == {
        "ide": ("HTTP/2 Run", AGENT),
        "cli": ("HTTP/1.1 RunSSE", AGENT),
    }
    assert "Bearer" not in json.dumps(saved) and "cli-2026" not in json.dumps(saved)
    doctor_cfg = tmp_path / "doctor.yaml"
    doctor_cfg.write_text(cfg)
    env = {"GLIDER_HOME": str(home), "COLUMNS": "250"}
    report = json.loads(CliRunner().invoke(app, ["doctor", "-c", str(doctor_cfg), "--json"], env=env).stdout)
    assert report["cursor"]["ide"]["transport"] == "HTTP/2 Run"
    assert report["cursor"]["cli"]["transport"] == "HTTP/1.1 RunSSE"
    text = CliRunner().invoke(app, ["doctor", "-c", str(doctor_cfg)], env=env).stdout
    assert "Cursor clients" in text and "HTTP/2 Run" in text and "HTTP/1.1 RunSSE" in text
