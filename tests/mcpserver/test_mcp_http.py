"""`glider serve`'s `/mcp`: the same MCP server over streamable HTTP, behind the Host and Origin checks
and GLIDER_TOKEN, reading the store the running server writes."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp_client import params
from mcp_store import Recorded, config_for, send

from fake_upstream import FakeUpstream
from serve_process import ServeProcess

pytestmark = [pytest.mark.live, pytest.mark.slow]
TOKEN = "mcp-test-token"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Served:
    def __init__(self, url: str, rec: Recorded) -> None:
        self.url = url
        self.rec = rec

    def rpc(self, method: str, params: dict[str, Any] | None = None, **headers: str) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
        sent = {**ACCEPT, "authorization": f"Bearer {TOKEN}", "mcp-protocol-version": "2025-11-25", **headers}
        return httpx.post(self.url + "/mcp", json=body, headers=sent, timeout=60)

    def tool(self, name: str, header: Path | None = None, **args: Any) -> dict[str, Any]:
        """Call a tool; `header`: the workspace the x-glider-workspace header names."""
        headers = {"x-glider-workspace": str(header)} if header else {}
        r = self.rpc("tools/call", {"name": name, "arguments": args}, **headers)
        assert r.status_code == 200, r.text
        result: dict[str, Any] = r.json()["result"]
        return result


@pytest.fixture(scope="module")
def served(recorded: Recorded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # A copy of the recorded home: the tests here add turns to it.
    root = tmp_path_factory.mktemp("mcp-http")
    home = root / "glider-home"
    shutil.copytree(recorded.home, home)
    with FakeUpstream(models=("claude-x",), ollama_models=("qwen-local",)) as fake:
        cfg = config_for(fake, root / "glider.yaml")
        env = {**recorded.env, "GLIDER_HOME": str(home), "GLIDER_TOKEN": TOKEN}
        rec = Recorded(recorded.root, home, cfg, env)
        rec.turns = recorded.turns
        with ServeProcess("-c", str(cfg), env=env) as proc:
            yield Served(proc.url, rec)


def test_initialize_and_list_the_tools(served: Served) -> None:
    r = served.rpc(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert result["serverInfo"]["name"] == "glider" and result["protocolVersion"] == "2025-06-18"
    tools = served.rpc("tools/list").json()["result"]["tools"]
    assert [t["name"] for t in tools] == ["context_query", "continuity", "recent_turns", "route_explain"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"authorization": ""}, 401),  # GLIDER_TOKEN is set: /mcp needs it, as /api/* does
        ({"authorization": "Bearer wrong"}, 401),
        ({"host": "evil.example"}, 403),  # DNS rebinding
        ({"origin": "http://evil.example"}, 403),  # a web page
    ],
)
def test_the_gate_stands_in_front_of_mcp(served: Served, headers: dict[str, str], status: int) -> None:
    r = served.rpc("tools/list", **headers)
    assert r.status_code == status, r.text
    assert "tools" not in r.text


def test_the_header_names_the_workspace_and_a_call_naming_none_is_a_tool_error(served: Served) -> None:
    rec = served.rec
    alpha = served.tool("recent_turns", rec.alpha)
    assert not alpha["isError"]
    assert [t["turn_id"] for t in alpha["structuredContent"]["turns"]] == rec.turns["alpha"]
    beta = served.tool("recent_turns", rec.alpha, workspace=str(rec.beta))  # the argument wins
    assert [t["turn_id"] for t in beta["structuredContent"]["turns"]] == rec.turns["beta"]
    none = served.tool("recent_turns")
    assert none["isError"] and "no workspace" in none["content"][0]["text"]


def test_a_turn_the_running_server_just_served_is_answered_at_once(served: Served) -> None:
    rec = served.rec
    before = served.tool("context_query", rec.alpha, query="* kind=file main")
    assert not before["isError"], before
    send(served.url, rec.alpha, "/local rename the tokenizer to lexer_main")
    turns = served.tool("recent_turns", rec.alpha)["structuredContent"]["turns"]
    assert len(turns) == 3 and turns[-1]["asked"] == "/local rename the tokenizer to lexer_main"
    query = served.tool("context_query", rec.alpha, query=f"{turns[-1]['turn_id']} key=clone_path")
    assert [r["value"] for r in query["structuredContent"]["results"]] == [str(rec.alpha)]


def test_a_glider_mcp_session_reads_what_the_running_server_writes(served: Served) -> None:
    # The stdio server beside a running `glider serve` on the same home: one long session sees the turns
    # served after it started (the store index follows the day files), never a half-written line.
    rec = served.rec

    async def run() -> list[str]:
        async with Client(params(rec, rec.beta), read_timeout_seconds=120) as client:
            first = await client.call_tool("recent_turns", {})
            assert [t["turn_id"] for t in first.structured_content["turns"]] == rec.turns["beta"]
            await asyncio.to_thread(send, served.url, rec.beta, "/local name the stripes")
            deadline = time.monotonic() + 60
            while True:
                res = await client.call_tool("recent_turns", {})
                assert not res.is_error, res.content
                asked = [t["asked"] for t in res.structured_content["turns"]]
                if len(asked) == 2 or time.monotonic() > deadline:
                    return asked
                await asyncio.sleep(0.2)

    assert asyncio.run(run()) == ["/cloud paint the zebra stripes", "/local name the stripes"]
