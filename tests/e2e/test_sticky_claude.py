"""Turn families and sticky routing with the real Claude Code CLI through a live `glider serve`.

Glider (create_app under uvicorn) and the fake upstream (Anthropic for `origin`, Ollama for the local
side) run on 127.0.0.1. The config's rules are built so that the *rules alone* would send a tool
follow-up to the other side than its parent: a script rule (priority 100) routes any request whose
last message is a tool result to the side its first prompt names (FLIP-TO-CLOUD / FLIP-TO-LOCAL).
Stickiness has to keep each follow-on with its parent.
"""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import claude_code
from fake_upstream import FakeUpstream, ToolReply
from glider_cli.paths import resolve
from glider_cli.store.eventlog.log import iter_events
from server.glider_harness import GliderServer

REPO = Path(__file__).resolve().parents[2]
CLIENTS = REPO / "tests" / "fixtures" / "clients"
pytestmark = [pytest.mark.claude_code, pytest.mark.live, pytest.mark.slow]

SCRIPT = """
def evaluate(request):
    last = request.messages[-1]
    if last.role == "assistant" or last.content != "":
        return None
    for m in request.messages:
        if "FLIP-TO-CLOUD" in m.content:
            return {"matched": True, "action": {"target": "cloud", "backend": "origin"}}
        if "FLIP-TO-LOCAL" in m.content:
            return {"matched": True, "action": {"target": "local", "backend": "ollama"}}
    return None
"""


def config_yaml(fake_url: str, script: Path) -> str:
    return f"""
backends:
  ollama: {{type: ollama, side: local, base_url: '{fake_url}', model: qwen-local}}
  origin: {{type: origin, side: cloud, base_url: '{fake_url}'}}
routing:
  task_classifier: {{enabled: false}}
  sticky: {{ttl_seconds: 900, grace_seconds: 120}}
  rules:
    - name: tool_results_flip
      priority: 100
      trigger: {{type: script, file: '{script}'}}
      action: {{target: cloud, backend: origin}}
    - name: explicit_cloud
      priority: 99
      trigger: {{type: explicit, commands: ["/cloud", "/heavy"]}}
      action: {{target: cloud, backend: origin}}
    - name: local_default
      priority: 1
      trigger: {{type: always}}
      action: {{target: local, backend: ollama}}
"""


@pytest.fixture
def glider(tmp_path: Path) -> Iterator[tuple[GliderServer, FakeUpstream]]:
    script = tmp_path / "tool_results_flip.star"
    script.write_text(SCRIPT)
    with (
        FakeUpstream(
            models=[claude_code.MODEL, "claude-opus-5-5", "gpt-5"], ollama_models=["qwen-local"]
        ) as fake,
        GliderServer(config_yaml(fake.url, script), tmp_path) as g,
    ):
        yield g, fake


def run_claude(claude: str, url: str, home: Path, cwd: Path, *args: str) -> dict[str, Any]:
    env = claude_code.env(url, home)
    proc = subprocess.run(
        [claude, "-p", *args, "--output-format", "json", "--allowedTools", "Bash"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


@contextlib.contextmanager
def reset_after_first_request(fake: FakeUpstream) -> Iterator[None]:
    """The forced reply is taken when a request arrives; the tool runs before the next one is sent."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if fake.requests:
                fake.reset()
                return
            time.sleep(0.002)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(timeout=5)


def decided(g: GliderServer) -> list[tuple[dict[str, Any], str | None]]:
    return [(d, turn) for t, d, turn in g.events if t == "RouteDecided"]


def captured(name: str, index: int = 0) -> tuple[dict[str, str], dict[str, Any], str]:
    req = json.loads((CLIENTS / name).read_text())["requests"][index]
    headers = {k: v for k, v in req["headers"] if k.lower() not in ("host", "content-length")}
    query = "&".join(f"{k}={v}" for k, vs in req["query"].items() for v in vs)
    return headers, copy.deepcopy(req["body"]), req["path"] + (f"?{query}" if query else "")


def with_session(headers: dict[str, str], body: dict[str, Any], session: str) -> None:
    """Claude Code's two places for the session id: the header and metadata.user_id (a JSON string)."""
    for k in list(headers):
        if k.lower() == "x-claude-code-session-id":
            headers[k] = session
    user_id = json.loads(body["metadata"]["user_id"])
    user_id["session_id"] = session
    body["metadata"]["user_id"] = json.dumps(user_id)


def post(url: str, path: str, headers: dict[str, str], body: dict[str, Any]) -> httpx.Response:
    r = httpx.post(url + path, headers=headers, content=json.dumps(body), timeout=30)
    assert r.status_code == 200, r.text
    return r


def test_a_local_tool_round_trip_stays_local(
    claude_bin: str, glider: tuple[GliderServer, FakeUpstream], tmp_path: Path
) -> None:
    g, fake = glider
    home = tmp_path / "user-home"  # the agent's HOME; the server's GLIDER_HOME is tmp_path / "home"
    home.mkdir()
    out = run_claude(claude_bin, g.url, home, tmp_path, "GLIDER_TOOL:Bash FLIP-TO-CLOUD run it")
    assert out["result"] == "hello from fake ollama qwen-local" and out["num_turns"] == 2
    g.wait_for("FulfilledLocal", 2)
    assert [q.path for q in fake.requests] == ["/api/chat", "/api/chat"]
    (d1, t1), (d2, t2) = decided(g)
    assert (d1["target"], d1["rule"], d1["family"]["kind"]) == ("local", "local_default", "new_turn")
    assert (d2["target"], d2["rule"], d2["family"]["kind"], t2) == ("local", "sticky", "tool_result", t1)
    # The rules alone would have sent the tool result to the cloud; the trace says so and why not.
    assert any(r["rule"] == "tool_results_flip" and r["matched"] for r in d2["trace"])
    assert "returns to the local side that issued it" in d2["trace"][-1]["reason"]
    # The Ollama fake's call id, as the Anthropic client saw it (toolu_-shaped).
    assert d2["family"]["link"].startswith("answers tool call toolu_g_call_")
    assert g.types().count("TurnOpened") == 1 and "StickyBound" not in g.types()


def test_a_cloud_turn_keeps_its_follow_ons_then_a_new_message_goes_local(
    claude_bin: str, glider: tuple[GliderServer, FakeUpstream], tmp_path: Path
) -> None:
    g, fake = glider
    home = tmp_path / "user-home"  # the agent's HOME; the server's GLIDER_HOME is tmp_path / "home"
    home.mkdir()
    # Claude Code ends its request with a role:system message, so the fake's GLIDER_TOOL marker does
    # not fire on a passthrough: force one tool call, and only for the first request.
    fake.set_reply(tool=ToolReply("Bash", {"command": "echo glider-tool-ok"}))
    with reset_after_first_request(fake):
        out = run_claude(claude_bin, g.url, home, tmp_path, "FLIP-TO-LOCAL run it /cloud")
    assert out["num_turns"] == 2
    assert len(g.wait_for("OriginPassthrough", 2)) == 2 and "FulfilledLocal" not in g.types()
    (d1, t1), (d2, t2) = decided(g)
    assert (d1["target"], d1["rule"]) == ("cloud", "explicit_cloud")
    assert (d2["target"], d2["family"]["kind"], t2) == ("cloud", "tool_result", t1)
    flip = next(r for r in d2["trace"] if r["rule"] == "tool_results_flip")
    assert not flip["matched"] and "local is refused" in flip["reason"] and f"turn {t1}" in flip["reason"]
    bound = [(d, turn) for t, d, turn in g.events if t == "StickyBound"]
    assert bound[0][1] == t1 and "explicit /cloud" in bound[0][0]["reason"]
    assert bound[-1][0].get("ended_at") is not None  # the run ended: the grace time started
    # A second prompt in the same session (claude -p --resume): a new turn that may go local.
    fake.reset()
    again = run_claude(claude_bin, g.url, home, tmp_path, "--resume", out["session_id"], "thanks")
    assert again["session_id"] == out["session_id"]
    g.wait_for("FulfilledLocal", 1)
    d3, t3 = decided(g)[-1]
    assert (d3["target"], d3["rule"], d3["family"]["kind"]) == ("local", "local_default", "new_turn")
    assert t3 != t1 and d3["family"]["session_id"] == out["session_id"]
    assert [q.path for q in fake.requests] == ["/api/chat"]


def test_a_real_subagent_joins_its_parent_family_and_stays_off_local(
    claude_bin: str, glider: tuple[GliderServer, FakeUpstream], tmp_path: Path
) -> None:
    """The model calls Agent; Claude Code (-p) runs the subagent, whose first request carries the prompt."""
    g, fake = glider
    home = tmp_path / "user-home"  # the agent's HOME; the server's GLIDER_HOME is tmp_path / "home"
    home.mkdir()
    prompt = "List the python files in this directory, one per line."
    args = {"description": "find python files", "prompt": prompt, "subagent_type": "general-purpose"}
    fake.set_reply(tool=ToolReply("Agent", args))
    with reset_after_first_request(fake):
        out = run_claude(claude_bin, g.url, home, tmp_path, "audit the files /cloud")
    assert out["num_turns"] == 2
    assert len(g.wait_for("OriginPassthrough", 3)) == 3 and "FulfilledLocal" not in g.types()
    (d1, t1), (d2, t2), (d3, t3) = decided(g)
    assert (d1["rule"], d1["family"]["kind"]) == ("explicit_cloud", "new_turn")
    # The subagent's request: a new-looking small prompt, which local_default would take.
    assert (d2["family"]["kind"], t2, d2["target"], d2["rule"]) == ("subagent", t1, "cloud", "sticky")
    assert d2["family"]["link"].startswith("first user message is the input of Agent call toolu_")
    local = next(r for r in d2["trace"] if r["rule"] == "local_default")
    assert "local is refused" in local["reason"]
    # The Agent result goes back to the parent, in the same family.
    assert (d3["family"]["kind"], t3, d3["target"]) == ("tool_result", t1, "cloud")
    assert d3["family"]["answered"] == [d2["family"]["parent_call"]]
    assert g.types().count("TurnOpened") == 1


def test_a_subagent_and_a_title_request_join_the_parent_family(
    glider: tuple[GliderServer, FakeUpstream],
) -> None:
    """From the captured request shapes: a subagent (with its parent's session id, as the real one
    above), and the title request, which only the interactive TUI sends (CLIENTS.md)."""
    g, fake = glider
    headers, body, path = captured("claude-code-01-first-turn.json")
    parent_session = str(uuid.uuid4())
    with_session(headers, body, parent_session)
    body["messages"][0]["content"][-1]["text"] = "audit the repository /cloud"
    prompt = "List every module under src/ that imports yaml, with one line on each."
    fake.set_reply(tool=ToolReply("Agent", {"description": "find yaml users", "prompt": prompt}))
    r = post(g.url, path, headers, body)
    assert "tool_use" in r.text and r.headers["x-glider-route"].startswith("cloud; rule=explicit_cloud")
    fake.reset()
    # The subagent: the Agent call's prompt as its first (only) user message.
    sub_headers, sub_body, _ = captured("claude-code-01-first-turn.json")
    with_session(sub_headers, sub_body, parent_session)
    sub_body["messages"] = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
    r2 = post(g.url, path, sub_headers, sub_body)
    assert r2.headers["x-glider-route"].startswith("cloud; rule=sticky")
    # The title request: tools [], a json_schema with `title`, the prompt inside <session> tags.
    t_headers, t_body, _ = captured("claude-code-01-first-turn.json")
    with_session(t_headers, t_body, parent_session)
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    t_body.update(
        tools=[], output_config={"effort": "low", "format": {"type": "json_schema", "schema": schema}}
    )
    t_body["messages"] = [{"role": "user", "content": "<session>audit the repository /cloud</session>"}]
    r3 = post(g.url, path, t_headers, t_body)
    assert r3.headers["x-glider-route"].startswith("cloud; rule=sticky")
    g.wait_for("OriginPassthrough", 3)
    (d1, t1), (d2, t2), (d3, t3) = decided(g)
    assert d1["family"]["kind"] == "new_turn"
    assert (d2["family"]["kind"], t2) == ("subagent", t1)
    assert d2["family"]["parent_call"].startswith("toolu_") and d2["family"]["tools"] == ["Agent"]
    assert (d3["family"]["kind"], t3) == ("title", t1)
    assert g.types().count("TurnOpened") == 1


def test_codex_responses_tool_calls_link_by_call_id(glider: tuple[GliderServer, FakeUpstream]) -> None:
    g, fake = glider
    headers, body, path = captured("codex-exec-01-tool-followup.json", 0)
    body["input"][-1]["content"][0]["text"] = "GLIDER_TOOL:exec_command FLIP-TO-CLOUD run echo"
    r = post(g.url, path, headers, body)
    done = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    calls = [e["item"] for e in done if e.get("type") == "response.output_item.done"]
    call_id = next(c["call_id"] for c in calls if c.get("type") == "function_call")
    headers2, body2, _ = captured("codex-exec-01-tool-followup.json", 1)
    body2["input"][3]["content"][0]["text"] = "GLIDER_TOOL:exec_command FLIP-TO-CLOUD run echo"
    body2["input"][-2]["call_id"] = body2["input"][-1]["call_id"] = call_id
    post(g.url, path, headers2, body2)
    g.wait_for("FulfilledLocal", 2)
    (d1, t1), (d2, t2) = decided(g)
    assert (d1["target"], d1["family"]["kind"]) == ("local", "new_turn")
    assert (d2["target"], d2["rule"], d2["family"]["kind"], t2) == ("local", "sticky", "tool_result", t1)
    assert d2["family"]["link"] == f"answers tool call {call_id} issued in this family"
    assert d2["family"]["session_id"] == "01a2291a-c28b-7a51-824c-dc27d6c24adf"
    assert [q.path for q in fake.requests] == ["/api/chat", "/api/chat"]


def test_the_binding_survives_a_restart(tmp_path: Path) -> None:
    """One app serves a tool call and an Agent call; a new app on the same GLIDER_HOME rebuilds the
    index from the log: the tool result goes back by its call id, the subagent joins its parent."""
    script = tmp_path / "tool_results_flip.star"
    script.write_text(SCRIPT)
    env = {"GLIDER_HOME": str(tmp_path / "home")}
    headers, body, path = captured("claude-code-02-tool-use-followup.json", 0)
    session = str(uuid.uuid4())
    with_session(headers, body, session)
    body["messages"][0]["content"][-1]["text"] = "FLIP-TO-LOCAL list the files /heavy"
    a_headers, a_body, a_path = captured("claude-code-01-first-turn.json")
    a_session = str(uuid.uuid4())
    with_session(a_headers, a_body, a_session)
    a_body["messages"][0]["content"][-1]["text"] = "audit the repository /cloud"
    prompt = "List every module under src/ that imports yaml, with one line on each."
    with FakeUpstream(
        models=[claude_code.MODEL, "claude-opus-5-5", "gpt-5"], ollama_models=["qwen-local"]
    ) as fake:
        fake.set_reply(tool=ToolReply("Bash", {"command": "ls"}))
        with GliderServer(config_yaml(fake.url, script), tmp_path, environ=env, record=False) as g1:
            r = post(g1.url, path, headers, body)
            fake.set_reply(tool=ToolReply("Agent", {"description": "find yaml users", "prompt": prompt}))
            ra = post(g1.url, a_path, a_headers, a_body)
        assert '"Agent"' in ra.text
        events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
        tool_id = next(
            e["content_block"]["id"]
            for e in events
            if e.get("type") == "content_block_start" and e["content_block"]["type"] == "tool_use"
        )
        fake.reset()
        # A new process (a new app, the same GLIDER_HOME): the index is rebuilt from the log.
        h2, b2, _ = captured("claude-code-02-tool-use-followup.json", 1)
        with_session(h2, b2, session)
        b2["messages"][0]["content"][-1]["text"] = "FLIP-TO-LOCAL list the files /heavy"
        b2["messages"][-2]["content"][-1]["id"] = tool_id
        b2["messages"][-1]["content"][0]["tool_use_id"] = tool_id
        # The subagent: its parent's session id, the Agent call's prompt as its only user message;
        # the rules alone (local_default) would send it to the local model.
        s_headers, s_body, _ = captured("claude-code-01-first-turn.json")
        with_session(s_headers, s_body, a_session)
        s_body["messages"] = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
        with GliderServer(config_yaml(fake.url, script), tmp_path, environ=env, record=False) as g2:
            r2 = post(g2.url, path, h2, b2)
            rs = post(g2.url, a_path, s_headers, s_body)
        assert [q.path for q in fake.requests] == ["/v1/messages", "/v1/messages"]
    assert r2.headers["x-glider-route"].startswith("cloud;")
    assert rs.headers["x-glider-route"].startswith("cloud; rule=sticky")
    logged = list(iter_events(resolve(env).context))
    routes = [e for e in logged if e["type"] == "RouteDecided"]
    assert len(routes) == 4 and routes[0]["turn_id"] == routes[2]["turn_id"] != routes[1]["turn_id"]
    issued = [e for e in logged if e["type"] == "ToolCallsIssued"]
    assert [e["turn_id"] for e in issued] == [routes[0]["turn_id"], routes[1]["turn_id"]]
    assert issued[0]["data"]["calls"] == [{"id": tool_id, "name": "Bash"}]
    assert issued[1]["data"]["calls"][0]["prompt"] == prompt and issued[1]["data"]["side"] == "cloud"
    second = routes[2]["data"]
    assert second["family"]["kind"] == "tool_result" and second["target"] == "cloud"
    # The call ids a reply issued are in the log: after the restart the call id links it.
    assert second["family"]["link"] == f"answers tool call {tool_id} issued in this family"
    assert second["family"]["answered"] == [tool_id]
    flip = next(r for r in second["trace"] if r["rule"] == "tool_results_flip")
    assert "local is refused" in flip["reason"]
    sub = routes[3]["data"]
    assert (sub["family"]["kind"], routes[3]["turn_id"]) == ("subagent", routes[1]["turn_id"])
    assert sub["family"]["parent_call"] == issued[1]["data"]["calls"][0]["id"]
    local = next(r for r in sub["trace"] if r["rule"] == "local_default")
    assert "local is refused" in local["reason"]
    assert [e["type"] for e in logged].count("TurnOpened") == 2
