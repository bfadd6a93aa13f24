"""A run whose RunSSE never opens (the client sent the run's BidiAppend, then timed out or went
away) is closed after `cursor.stream_wait_seconds` with `outcome: abandoned`: a local one stops the
local model and never reaches Cursor; a cloud one is recorded as a call that left the machine.
`glider context turns` and `glider context egress` read it from the real event log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import cursor_wire as wire
import pytest
from cursor_client import CursorClient, trailer
from cursor_harness import cursor_yaml
from glider_harness import GliderServer
from typer.testing import CliRunner

from glider_cli.cli import app

pytestmark = pytest.mark.live
AGENT = "agent.api5.cursor.sh"
WAIT = "  stream_wait_seconds: 1\n"


def cursor_requests(fake: Any) -> list[str]:
    return [r.path for r in fake.requests if "AgentService" in r.path or "BidiAppend" in r.path]


def test_a_local_run_whose_stream_never_opens_is_abandoned(
    fake, fake_cursor, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    fake.set_fault(delay=30.0, paths=("/api/chat",), times=1)  # the model is still at work at the bound
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url, extra=WAIT))
    client = CursorClient(g.port, g.ca)
    rid = "rid-abandoned-local"

    async def go() -> tuple[Any, Any, float]:
        started = time.monotonic()
        msg = wire.run_request("conv-ab", wire.user_action("/local explain the build"))
        append = await asyncio.wait_for(client.append(AGENT, rid, 0, msg), 20)
        held = time.monotonic() - started
        late = await asyncio.wait_for(client.run_sse(AGENT, rid), 20)  # the stream, after the bound
        return append, late, held

    append, late, held = asyncio.run(go())
    # The held append is answered once the run is given up (not left hanging for the model's 30 s).
    assert append.status == 200 and append.body == b"" and held < 15
    done = g.server.wait_for("FulfilledLocal")[-1]
    assert done["outcome"] == "abandoned" and done["status"] == 499 and done["complete"] is False
    assert done["backend"] == "ollama"
    # A stream that opens after the run was given up is told so; it is not sent to Cursor.
    assert late.status == 200 and (trailer(late) or {}).get("error", {}).get("code") == "aborted"
    assert cursor_requests(fake_cursor) == []
    assert g.server.types().count("FulfilledLocal") == 1  # recorded once


def test_a_cloud_run_whose_stream_never_opens_is_abandoned(
    fake, fake_cursor, glider_for, tmp_path: Path
) -> None:
    fake.reset()
    g = glider_for(cursor_yaml(fake_cursor, tmp_path, fake.url, extra=WAIT))
    client = CursorClient(g.port, g.ca)
    msg = wire.run_request("conv-abc", wire.user_action("/cloud plan the refactor"))
    append = asyncio.run(client.append(AGENT, "rid-abandoned-cloud", 0, msg))
    assert append.status == 200
    done = g.server.wait_for("OriginPassthrough")[-1]
    assert done["outcome"] == "abandoned" and done["status"] == 499 and done["complete"] is False
    assert cursor_requests(fake_cursor) == ["/aiserver.v1.BidiService/BidiAppend"]


def test_context_turns_and_egress_show_abandoned_runs(fake, fake_cursor, tmp_path: Path) -> None:
    fake.reset()
    home = tmp_path / "home"
    with GliderServer(cursor_yaml(fake_cursor, tmp_path, fake.url, extra=WAIT), tmp_path, record=False) as g:
        client = CursorClient(g.app.state.cursor.service.port, str(home / "cursor" / "ca.pem"))

        async def go() -> None:
            for rid, text in (("rid-l", "/local say hello"), ("rid-c", "/cloud plan the refactor")):
                msg = wire.run_request("conv-log", wire.user_action(text))
                assert (await client.append(AGENT, rid, 0, msg)).status == 200

        asyncio.run(go())
        runner = CliRunner()

        def cli(*args: str) -> Any:
            result = runner.invoke(app, [*args, "--json"], env={"GLIDER_HOME": str(home)})
            assert result.exit_code == 0, result.output
            return json.loads(result.stdout)

        deadline = time.monotonic() + 20
        while True:
            turns = cli("context", "turns")
            outcomes = sorted(t["outcome"] for t in turns)
            done = len(outcomes) == 2 and all("abandoned" in o for o in outcomes)
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert outcomes == [
        "abandoned: the client never read the answer of ollama/fake-model status 499",
        "abandoned: the client never read the answer of origin status 499",
    ], outcomes
    calls = cli("context", "egress")["calls"]
    # Only the cloud run left the machine; the local one never did.
    assert [(c["backend"], c["outcome"], c["status"]) for c in calls] == [("origin", "abandoned", 499)]
