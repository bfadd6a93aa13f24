"""`glider mcp` on stdio, driven by the official Python SDK's client, over a store a real `glider serve`
session wrote: the four tools, scoping to the workspace, bad input as tool errors, resources, and a
stdout that carries nothing but protocol messages."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp_client import call, calls, params
from mcp_store import SECRET, Recorded

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content)


def test_the_four_tools_are_listed_with_schemas_and_read_only_hints(recorded: Recorded) -> None:
    async def run() -> Any:
        async with Client(params(recorded, recorded.alpha)) as client:
            return await client.list_tools()

    tools = {t.name: t for t in asyncio.run(run()).tools}
    assert set(tools) == {"context_query", "continuity", "recent_turns", "route_explain"}
    for t in tools.values():
        assert t.description and len(t.description) > 80
        assert t.input_schema["type"] == "object"
        assert "workspace" in t.input_schema["properties"]
        assert t.annotations is not None and t.annotations.read_only_hint is True
    assert tools["context_query"].input_schema["required"] == ["query"]
    assert tools["route_explain"].input_schema["required"] == ["message"]


def test_context_query_answers_what_the_cli_answers_narrowed_to_the_workspace(recorded: Recorded) -> None:
    query = "* kind=file main OR lexer OR parser OR zebra"
    cli = json.loads(recorded.glider("context", "query", *query.split(), "--json").stdout)
    res = call(recorded, recorded.alpha, "context_query", query=query)
    assert not res.is_error, _text(res)
    got = res.structured_content
    alpha = str(recorded.alpha)
    expected = [r for r in cli if r["path"].startswith(alpha + "/")]
    assert got["results"] == expected
    assert {r["name"] for r in got["results"]} == {"lexer.py", "parser.py"}
    assert got["omitted"] == len(cli) - len(expected) >= 1  # beta's zebra.py
    assert got["workspace"] == alpha and got["mode"] == "search"
    assert "lexer.py" in _text(res) and "zebra" not in _text(res)


def test_another_workspace_only_when_asked_for_by_path(recorded: Recorded) -> None:
    beta_turn = recorded.turns["beta"][0]
    refused, asked = calls(
        recorded,
        recorded.alpha,
        [
            ("context_query", {"query": f"{beta_turn} key=clone_path"}),
            ("context_query", {"query": f"{beta_turn} key=clone_path", "workspace": str(recorded.beta)}),
        ],
    )
    assert refused.is_error and str(recorded.beta) in _text(refused)
    assert not asked.is_error, _text(asked)
    assert [r["value"] for r in asked.structured_content["results"]] == [str(recorded.beta)]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"query": "* key=nope"}, "key"),
        ({"query": "* path=lexer.py"}, "path"),
        ({"query": "no-such-turn goal"}, "unknown turn 'no-such-turn'"),
        ({"query": "* " + "x" * 2_001}, "limit is 2000"),
        ({"query": "* lexer", "bogus": 1}, "unknown argument 'bogus'"),
        ({"query": 5}, "query must be a string"),
        ({}, "needs 'query'"),
        ({"query": "* lexer", "workspace": "relative/dir"}, "not an absolute path"),
    ],
)
def test_bad_input_is_a_tool_error_and_the_server_keeps_answering(
    recorded: Recorded, args: dict[str, Any], says: str
) -> None:
    bad, good = calls(recorded, recorded.alpha, [("context_query", args), ("recent_turns", {})])
    assert bad.is_error, _text(bad)
    assert says in _text(bad) and bad.structured_content["error"] == _text(bad)
    assert not good.is_error and len(good.structured_content["turns"]) == 2


def test_an_unknown_tool_is_a_tool_error(recorded: Recorded) -> None:
    res = call(recorded, recorded.alpha, "forget_everything")
    assert res.is_error and "unknown tool 'forget_everything'" in _text(res)


def test_recent_turns_says_where_each_went_and_returns_no_secret(recorded: Recorded) -> None:
    res = call(recorded, recorded.alpha, "recent_turns", limit=5)
    assert not res.is_error, _text(res)
    turns = res.structured_content["turns"]
    assert [t["turn_id"] for t in turns] == recorded.turns["alpha"]
    first, second = turns
    assert (first["side"], first["rule"]) == ("cloud", "explicit_cloud")
    assert (second["side"], second["rule"]) == ("local", "explicit_local")
    assert "answered by origin" in first["outcome"] and "answered locally" in second["outcome"]
    everything = _text(res) + json.dumps(res.structured_content)
    assert SECRET not in everything and SECRET[:20] not in everything
    assert "[REDACTED]" in first["asked"]
    assert recorded.turns["beta"][0] not in everything


def test_continuity_is_the_delegate_block_of_the_workspace(recorded: Recorded) -> None:
    plain, ranked = calls(
        recorded, recorded.alpha, [("continuity", {}), ("continuity", {"task": "fix the tokenizer"})]
    )
    for res in (plain, ranked):
        assert not res.is_error, _text(res)
        assert _text(res).startswith("# Earlier in the calling session")
        assert "explain the parser module" in _text(res)
        assert SECRET not in _text(res) and "zebra" not in _text(res)
    from glider_cli.delegate import continuity
    from glider_cli.paths import Paths

    newest = [e for e in continuity.read(Paths(recorded.home), recorded.alpha).entries if e.kind == "turn"][
        -1
    ]
    assert plain.structured_content["task"] == newest.text  # no task: ranked against the newest turn
    assert ranked.structured_content["task"] == "fix the tokenizer"
    assert len(ranked.structured_content["items"]) == 2


def test_route_explain_names_the_rule_a_message_obeys(recorded: Recorded) -> None:
    res = call(recorded, recorded.alpha, "route_explain", message="/cloud refactor the router", tools=True)
    assert not res.is_error, _text(res)
    d = res.structured_content
    assert (d["target"], d["rule"]) == ("cloud", "explicit_cloud")
    assert "decision: cloud via rule explicit_cloud" in _text(res)
    assert d["config"] == str(recorded.cfg)


def test_resources_are_the_workspace_record_and_turn_index(recorded: Recorded) -> None:
    async def run() -> tuple[Any, Any, Any]:
        async with Client(params(recorded, recorded.alpha)) as client:
            listed = await client.list_resources()
            record = await client.read_resource("glider://workspace/continuity")
            turns = await client.read_resource("glider://workspace/turns")
            return listed, record, turns

    listed, record, turns = asyncio.run(run())
    assert {str(r.uri) for r in listed.resources} == {
        "glider://workspace/continuity",
        "glider://workspace/turns",
    }
    text = record.contents[0].text
    assert f"Workspace: `{recorded.alpha}`" in text and "explain the parser module" in text
    assert [t["turn_id"] for t in json.loads(turns.contents[0].text)["turns"]] == recorded.turns["alpha"]


def test_stdout_carries_only_protocol_messages(recorded: Recorded) -> None:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "context_query", "arguments": {"query": "* key=nope"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "route_explain", "arguments": {"message": "hi"}},
        },
    ]
    feed = "not json at all\n" + "".join(json.dumps(m) + "\n" for m in lines)
    proc = subprocess.Popen(
        [sys.executable, "-m", "glider_cli", "mcp", "--home", str(recorded.home), "-c", str(recorded.cfg)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=recorded.env,
        cwd=recorded.alpha,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(feed)
    proc.stdin.flush()
    out: list[dict[str, Any]] = []
    while {1, 2, 3} - {m.get("id") for m in out}:  # stdin stays open until the three are answered
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        out.append(json.loads(line))  # every line on stdout is a JSON-RPC message
    proc.stdin.close()
    out += [json.loads(line) for line in proc.stdout.read().splitlines()]
    assert proc.wait(timeout=60) == 0
    assert all(m["jsonrpc"] == "2.0" for m in out)
    answered = {m["id"]: m for m in out if "id" in m}
    assert answered[1]["result"]["serverInfo"]["name"] == "glider"
    assert answered[1]["result"]["protocolVersion"] == "2025-06-18"
    assert answered[2]["result"]["isError"] is True
    assert answered[3]["result"]["isError"] is False


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_the_root_the_client_names_is_the_workspace(recorded: Recorded) -> None:
    # A client that starts the server elsewhere (Cursor may) and names the project as its root; in the
    # handshake era (`initialize`, up to 2025-11-25), which the agent CLIs speak: roots are gone after it.
    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=recorded.beta.as_uri(), name="beta")])

    async def run() -> Any:
        async with Client(
            params(recorded, recorded.root), list_roots_callback=roots, mode="legacy"
        ) as client:
            return await client.call_tool("recent_turns", {})

    res = asyncio.run(run())
    assert not res.is_error, _text(res)
    assert res.structured_content["workspace"] == str(recorded.beta)
    assert [t["turn_id"] for t in res.structured_content["turns"]] == recorded.turns["beta"]
