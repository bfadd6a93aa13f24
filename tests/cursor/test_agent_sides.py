"""One Cursor conversation switching sides: a cloud turn (Cursor's own loop, its tool steps recorded
as `routing.tool_followup` would decide them, not touched), a local tool turn (Glider's loop, nothing
of it reaches Cursor), a cloud turn again that Cursor gets exactly as the client sent it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import cursor_wire as wire
import pytest
from cursor_client import CursorClient, texts, trailer
from cursor_exec import Executor
from fake_agent_model import FakeAgentModel, last_tool_result
from fake_cursor import _append_id
from test_agent_loop import agent_yaml, events
from typer.testing import CliRunner

from glider_cli.cli import app

pytestmark = pytest.mark.live
AGENT = "agent.api5.cursor.sh"
CONV = "conv-sides"
DENY_SHELL = "routing:\n  tool_followup: {denylist: [shell]}\n"


def shell_exec(number: int, command: str) -> bytes:
    """What Cursor's server sends for a shell step: ExecServerMessage 1 id, 15 exec_id, 2 shell_args."""
    args = wire.ld(1, command) + wire.ld(4, f"tool-{number}")
    return wire.envelope(wire.ld(2, wire.vi(1, number) + wire.ld(15, f"exec-{number}") + wire.ld(2, args)))


def test_cloud_local_cloud_in_one_conversation(fake_cursor, glider_for, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the secret is 42\n")
    with FakeAgentModel() as model:
        model.script = [
            lambda b: {"tool": "read", "args": {"path": "notes.txt"}},
            lambda b: {"text": "local says: " + last_tool_result(b).strip()},
        ]
        g = glider_for(agent_yaml(fake_cursor, tmp_path, model, extra=DENY_SHELL))
        client = CursorClient(g.port, g.ca)
        fake_cursor.execs = [shell_exec(1, "echo from-cursor-loop")]
        cloud1 = Executor(ws)
        local = Executor(ws)
        cloud2 = Executor(ws)
        third = wire.run_request(CONV, wire.user_action("/cloud now finish it"))

        async def scenario() -> list[Any]:
            out = []
            out.append(
                await client.agent_turn(
                    AGENT, wire.run_request(CONV, wire.user_action("/cloud plan")), cloud1
                )
            )
            fake_cursor.execs = []
            out.append(
                await client.agent_turn(
                    AGENT, wire.run_request(CONV, wire.user_action("/local read notes")), local
                )
            )
            out.append(await client.agent_turn(AGENT, third, cloud2))
            return out

        (sse1, rid1), (sse2, _), (sse3, rid3) = asyncio.run(scenario())

    # Cursor's own loop ran its shell step on the client (Glider did not touch it) ...
    assert texts(sse1) == ["hello from cursor", " (done)"] and cloud1.execs[0][0] == "shell"
    assert trailer(sse3) == {} and texts(sse3) == ["hello from cursor", " (done)"]
    # ... and the step is recorded as the policy would have decided it: denied, not applied.
    cloud_steps = [e for e in events(g, "ToolStepDecided") if e["side"] == "cloud"]
    assert len(cloud_steps) == 1
    step = cloud_steps[0]
    assert (step["tool"], step["decision"], step["applied"], step["exec"]) == (
        "shell",
        "deny",
        False,
        "shell_args",
    )
    # The local turn ran in Glider.
    assert "".join(texts(sse2)) == "local says: the secret is 42"
    assert [name for name, _ in local.execs] == ["read"]
    # Cursor saw the two cloud runs only, with every append of them (the exec answers included) ...
    runs = [r for r in fake_cursor.requests if r.path.endswith("/RunSSE")]
    assert len(runs) == 2
    seen = [_append_id(r.body) for r in fake_cursor.requests if r.path.endswith("/BidiAppend")]
    assert {rid for rid, _ in seen} == {rid1, rid3}
    assert sorted(s for rid, s in seen if rid == rid1) == [0, 1, 2]  # the run, the result, stream_close
    # ... the third run's request exactly as the client sent it (its conversation state untouched),
    first3 = next(
        r for r in fake_cursor.requests if r.path.endswith("/BidiAppend") and _append_id(r.body) == (rid3, 0)
    )
    assert first3.body == wire.append_body(rid3, 0, third)
    # ... and nothing of the local turn: not its words, not its tool result.
    every = b"".join(r.body for r in fake_cursor.requests)
    assert b"read notes".hex().encode() not in every and b"the secret".hex().encode() not in every
    assert b"read notes" not in every and b"the secret" not in every
    # `glider route replay --against` shows what a policy changes for the recorded tool steps.
    log = tmp_path / "events.jsonl"
    lines = [{"v": 1, "type": t, "turn_id": tid, "data": d} for t, d, tid in g.server.events]
    log.write_text("\n".join(json.dumps(line, default=str) for line in lines) + "\n")
    deny, allow = tmp_path / "deny.yaml", tmp_path / "allow.yaml"
    deny.write_text("extends: default\n" + DENY_SHELL)
    allow.write_text("extends: default\n")
    args = ["route", "replay", str(log), "--config", str(deny), "--against", str(allow), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [(t["tool"], t["side"], t["decision"]) for t in out["tool_steps"]] == [
        ("shell", "cloud", "deny"),
        ("read", "local", "allow"),
    ]
    assert [(c["tool"], c["from"], c["to"]) for c in out["tool_changes"]] == [("shell", "deny", "allow")]
