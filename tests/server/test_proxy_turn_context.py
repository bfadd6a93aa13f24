"""goal, plan and clone_path after real traffic: captured Claude Code and Codex bodies through `glider
serve`, a fake upstream that answers with TodoWrite / update_plan, then `glider context query`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from cli_helpers import invoke_json
from fake_upstream import FakeUpstream
from fake_wire import ToolReply

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-opus-5-5", "gpt-5"])]
CLIENTS = Path(__file__).resolve().parent.parent / "fixtures" / "clients"
_DROP = {"host", "content-length", "connection", "accept-encoding"}
TODO_TOOL = {
    "name": "TodoWrite",
    "description": "Create and manage a structured task list for your current coding session.",
    "input_schema": {"type": "object", "properties": {"todos": {"type": "array"}}, "required": ["todos"]},
}
PLAN_TOOL = {
    "type": "function",
    "name": "update_plan",
    "description": "Updates the task plan.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"plan": {"type": "array"}, "explanation": {"type": "string"}},
    },
}


def _capture(name: str, repo: Path) -> tuple[dict[str, Any], dict[str, str], str]:
    cap = json.loads((CLIENTS / name).read_text().replace("<CWD>", str(repo)))
    req = cap["requests"][0]
    headers = {k: v for k, v in req["headers"] if k.lower() not in _DROP}
    query = "?beta=true" if req.get("query") else ""
    return req["body"], headers, req["path"] + query


def _sse(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if line.startswith("data: ") and line[6:].strip() not in ("", "[DONE]"):
            out.append(json.loads(line[6:]))
    return out


def _turn(asked: str) -> str:
    turns = invoke_json("context", "turns", "--json")
    assert isinstance(turns, list)
    return next(t["turn_id"] for t in turns if t["asked"] == asked)


def _keys(turn: str) -> dict[str, Any]:
    found = invoke_json("context", "query", turn, "goal", "OR", "plan", "OR", "clone_path", "--json")
    assert isinstance(found, list)
    return {r["name"]: r for r in found if r["kind"] == "key"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def test_claude_code_turn_gets_its_goal_plan_and_clone_path(
    fake: FakeUpstream, tmp_path: Path, glider_env: Path, repo: Path
) -> None:
    body, headers, path = _capture("claude-code-02-tool-use-followup.json", repo)
    body["tools"] = [*body["tools"], TODO_TOOL]
    first = [
        {"content": "Find the failing parser test", "status": "in_progress", "activeForm": "Finding it"},
        {"content": "Fix src/parser.go", "status": "pending", "activeForm": "Fixing it"},
    ]
    fake.reset()
    fake.set_reply(tool=ToolReply("TodoWrite", {"todos": first}))
    env = {"GLIDER_HOME": str(glider_env)}
    with GliderServer(backends_yaml(fake.url), tmp_path, environ=env, record=False) as g:
        r = httpx.post(g.url + path, json=body, headers=headers, timeout=30)
        assert r.status_code == 200
        starts = [e["content_block"] for e in _sse(r.text) if e.get("type") == "content_block_start"]
        call = next(b for b in starts if b["type"] == "tool_use")
        assert call["name"] == "TodoWrite"
        done = [dict(first[0], status="completed"), dict(first[1], status="in_progress")]
        fake.set_reply(tool=ToolReply("TodoWrite", {"todos": done}))
        body["messages"] += [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": call["id"], "name": "TodoWrite", "input": {"todos": first}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "ok"}],
            },
        ]
        assert httpx.post(g.url + path, json=body, headers=headers, timeout=30).status_code == 200
    fake.reset()
    turn = _turn("GLIDER_TOOL:Bash - run echo")
    keys = _keys(turn)
    assert keys["goal"]["value"] == "GLIDER_TOOL:Bash - run echo"  # no <system-reminder> left
    assert keys["plan"]["value"] == "[x] Find the failing parser test\n[>] Fix src/parser.go"
    assert keys["clone_path"]["value"] == str(repo)
    assert {k["prov"] for k in keys.values()} == {"RUNTIME"}
    detail = invoke_json("context", "turn", turn, "--json")
    assert isinstance(detail, dict)
    assert [e["type"] for e in detail["events"]].count("TurnContext") == 2  # the plan changed once


def test_codex_turn_gets_its_update_plan(
    fake: FakeUpstream, tmp_path: Path, glider_env: Path, repo: Path
) -> None:
    body, headers, path = _capture("codex-exec-01-tool-followup.json", repo)
    body["tools"] = [*body["tools"], PLAN_TOOL]
    steps = [
        {"step": "Reproduce the crash", "status": "completed"},
        {"step": "Patch the lexer", "status": "pending"},
    ]
    fake.reset()
    fake.set_reply(tool=ToolReply("update_plan", {"explanation": "Two steps.", "plan": steps}))
    env = {"GLIDER_HOME": str(glider_env)}
    with GliderServer(backends_yaml(fake.url), tmp_path, environ=env, record=False) as g:
        r = httpx.post(g.url + path, json=body, headers=headers, timeout=30)
        assert r.status_code == 200
    fake.reset()
    keys = _keys(_turn("GLIDER_TOOL:exec_command run echo"))
    assert keys["goal"]["value"] == "GLIDER_TOOL:exec_command run echo"
    assert keys["plan"]["value"] == "Two steps.\n[x] Reproduce the crash\n[ ] Patch the lexer"
    assert keys["clone_path"]["value"] == str(repo)
