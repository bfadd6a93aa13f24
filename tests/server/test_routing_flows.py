"""Multi-request flows through a live Glider, from real Claude Code captures (tests/fixtures/clients/
claude-code-03..05, the interactive TUI of 2.1.197): a `/local` turn keeps its subagent local, a
title never runs a delegate, count_tokens never matches a command the client wrote, a back-ticked
`/claude` runs nothing, subagents link only within their session, and a title joins the family
whose prompt it quotes whatever arrived in between."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from cli_helpers import invoke_json
from fake_upstream import FakeUpstream, ToolReply
from fixtures.fake_agents.install import install_fake_agents, path_with, runs

pytestmark = pytest.mark.live

# The models the captured Claude Code 2.1.197 session asks for (its main model and its subagents').
CAPTURED_MODELS = ["claude-opus-4-8", "claude-haiku-4-5-20251001"]


def fake_upstream() -> FakeUpstream:
    """A fake that serves the captured session's models, and the local model `backends_yaml` names."""
    return FakeUpstream(models=CAPTURED_MODELS, ollama_models=["qwen-local"])


CLIENTS = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def captured(name: str, workspace: Path | None = None) -> list[tuple[str, dict[str, str], dict[str, Any]]]:
    """(path with query, headers, body) of every request in a capture (naming `workspace`, where a
    delegate would run)."""
    out = []
    for req in json.loads((CLIENTS / name).read_text())["requests"]:
        headers = {k: v for k, v in req["headers"] if k.lower() not in ("host", "content-length")}
        headers["x-api-key"] = "sk-test"
        if workspace is not None:
            headers["x-glider-workspace"] = str(workspace)
        query = "&".join(f"{k}={v}" for k, vs in req["query"].items() for v in vs)
        out.append((req["path"] + (f"?{query}" if query else ""), headers, copy.deepcopy(req["body"])))
    return out


def post(g: GliderServer, req: tuple[str, dict[str, str], dict[str, Any]]) -> httpx.Response:
    path, headers, body = req
    r = httpx.post(g.url + path, headers=headers, content=json.dumps(body), timeout=30)
    assert r.status_code == 200, r.text
    return r


def decided(g: GliderServer) -> list[tuple[dict[str, Any], str | None]]:
    return [(d, turn) for t, d, turn in g.events if t == "RouteDecided"]


def with_session(req: tuple[str, dict[str, str], dict[str, Any]], session: str) -> None:
    _, headers, body = req
    headers["x-claude-code-session-id"] = session
    user_id = json.loads(body["metadata"]["user_id"])
    user_id["session_id"] = session
    body["metadata"]["user_id"] = json.dumps(user_id)


def agent_call(req: tuple[str, dict[str, str], dict[str, Any]]) -> dict[str, Any]:
    """The Agent tool_use the capture's parent reply issued (echoed in its tool-result request)."""
    for m in req[2]["messages"]:
        for block in m["content"] if isinstance(m["content"], list) else ():
            if block.get("type") == "tool_use" and block["name"] == "Agent":
                return dict(block)
    raise AssertionError("no Agent call in the capture")


def set_call_id(req: tuple[str, dict[str, str], dict[str, Any]], old: str, new: str) -> None:
    for m in req[2]["messages"]:
        for block in m["content"] if isinstance(m["content"], list) else ():
            if block.get("id") == old:
                block["id"] = new
            if block.get("tool_use_id") == old:
                block["tool_use_id"] = new


def tool_use_id(reply: httpx.Response) -> str:
    for line in reply.text.splitlines():
        if line.startswith("data: ") and '"tool_use"' in line:
            event = json.loads(line[6:])
            if event.get("type") == "content_block_start":
                return str(event["content_block"]["id"])
    raise AssertionError("the reply issued no tool call")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


@pytest.fixture
def agents(tmp_path: Path) -> dict[str, str]:
    bin_dir = install_fake_agents(tmp_path / "fake-bin")
    return {
        **os.environ,
        "PATH": path_with(bin_dir),
        "FAKE_AGENT_LOG": str(tmp_path / "agent-runs"),
        "GLIDER_HOME": str(tmp_path / "home"),
    }


def test_a_local_turn_keeps_its_subagent_local_and_a_title_runs_no_delegate(
    tmp_path: Path, agents: dict[str, str], workspace: Path
) -> None:
    """The whole captured session: title(/local), turn(/local) -> Agent, the Explore subagent (it carries
    17 tools: the classifier's tools rule would send it to the cloud), the Agent result, title(/agy),
    turn(/agy). Only the turn's own /agy runs the delegate, once."""
    reqs = captured("claude-code-04-tui-subagent.json", workspace)
    title1, turn1, subagent, result, title2, turn2 = reqs
    call = agent_call(result)
    with fake_upstream() as fake, GliderServer(backends_yaml(fake.url), tmp_path, environ=agents) as g:
        assert post(g, title1).headers["x-glider-route"].startswith("local;")
        fake.set_reply(tool=ToolReply("Agent", call["input"]))
        r = post(g, turn1)
        fake.reset()
        assert r.headers["x-glider-route"].startswith("local; rule=explicit_local")
        set_call_id(result, call["id"], tool_use_id(r))
        rs = post(g, subagent)
        assert rs.headers["x-glider-route"].startswith("local; rule=sticky"), rs.headers["x-glider-route"]
        assert post(g, result).headers["x-glider-route"].startswith("local;")
        post(g, title2)
        assert runs(Path(agents["FAKE_AGENT_LOG"])) == []
        r6 = post(g, turn2)
        assert r6.headers["x-glider-route"] == "delegate; rule=delegate; backend=agy"
        g.wait_for("FulfilledLocal", 5)
        # Since the reset after turn 1: the subagent, the Agent result and the second title, all local.
        assert [q.path for q in fake.requests] == ["/api/chat"] * 3
    assert len(runs(Path(agents["FAKE_AGENT_LOG"]))) == 1
    (d1, t1), (d2, t2), (d3, t3), (d4, t4), (d5, t5), (d6, t6) = decided(g)
    assert (d1["family"]["kind"], d2["family"]["kind"], t1) == ("title", "new_turn", t2)
    assert (d3["family"]["kind"], t3, d3["family"]["subagent_type"]) == ("subagent", t2, "Explore")
    assert "held local" in d3["trace"][0]["reason"] and "explicit /local" in d3["trace"][0]["reason"]
    assert (d4["family"]["kind"], t4) == ("tool_result", t2)
    assert (d5["family"]["kind"], d5["delegate"], t5) == ("title", None, t6)
    assert d6["delegate"] == "/agy"
    # The family the /local turn opened was bound local, and nothing in it bound it to the cloud.
    bound = [d["target"] for t, d, turn in g.events if t == "StickyBound" and turn == t2]
    assert bound and set(bound) == {"local"}


def test_count_tokens_never_matches_a_command_the_client_wrote(tmp_path: Path) -> None:
    """/context: Claude Code counts its `# Environment` section as a user message that says "It can be
    toggled with /fast"; explicit_local (/local /fast) must not take it, nor any other count."""
    reqs = captured("claude-code-05-tui-context-count-tokens.json")
    env_count = reqs[6]
    assert "toggled with /fast" in env_count[2]["messages"][0]["content"]
    # The counts alone (the prompt's own turn went to the cloud and would refuse local to them anyway).
    with fake_upstream() as fake, GliderServer(backends_yaml(fake.url), tmp_path) as g:
        routes = [post(g, req).headers["x-glider-route"] for req in reqs[1:]]
    assert len(routes) == 15 and not [r for r in routes if "explicit_local" in r], routes
    assert routes[5].startswith("local; rule=small_context_local")


def test_a_back_ticked_flag_runs_nothing_and_the_title_runs_no_delegate(
    tmp_path: Path, agents: dict[str, str], workspace: Path
) -> None:
    """Turn 2 of the capture asks "what does the `/claude` flag do?": a mention, not a flag."""
    title1, turn1, title2, turn2 = captured("claude-code-03-tui-titles.json", workspace)
    with fake_upstream() as fake, GliderServer(backends_yaml(fake.url), tmp_path, environ=agents) as g:
        for req in (title1, turn1, title2, turn2):
            assert not post(g, req).headers["x-glider-route"].startswith("delegate")
    assert runs(Path(agents["FAKE_AGENT_LOG"])) == []
    (_, t1), (_, t2), (_, t3), (d4, t4) = decided(g)
    assert t1 == t2 != t3 == t4 and d4["delegate"] is None
    # The same text with the flag typed bare does delegate.
    bare = copy.deepcopy(turn2)
    bare[2]["messages"][-1]["content"][-1]["text"] = "what does the flag do? /claude"
    with fake_upstream() as fake, GliderServer(backends_yaml(fake.url), tmp_path, environ=agents) as g:
        assert post(g, bare).headers["x-glider-route"] == "delegate; rule=delegate; backend=claude"
    assert [r["vendor"] for r in runs(Path(agents["FAKE_AGENT_LOG"]))] == ["claude"]


def test_a_subagent_links_only_within_its_session(tmp_path: Path) -> None:
    """Another session whose first message is the Agent prompt word for word, or contains it, is its own
    turn; the real subagent (the parent's session id) links."""
    _title1, turn1, subagent, result, _, _ = captured("claude-code-04-tui-subagent.json")
    call = agent_call(result)
    stranger = copy.deepcopy(subagent)
    with_session(stranger, str(uuid.uuid4()))
    around = copy.deepcopy(subagent)
    with_session(around, str(uuid.uuid4()))
    around[2]["messages"][0]["content"][-1]["text"] = "Before you start: " + call["input"]["prompt"]
    with fake_upstream() as fake, GliderServer(backends_yaml(fake.url), tmp_path) as g:
        fake.set_reply(tool=ToolReply("Agent", call["input"]))
        post(g, turn1)
        fake.reset()
        post(g, stranger)
        post(g, around)
        post(g, subagent)
    (_d1, t1), (d2, t2), (d3, t3), (d4, t4) = decided(g)
    assert (d2["family"]["kind"], d3["family"]["kind"]) == ("new_turn", "new_turn")
    assert len({t1, t2, t3}) == 3
    assert (d4["family"]["kind"], t4) == ("subagent", t1)


def test_a_title_joins_the_family_it_quotes_after_the_binding_expired(tmp_path: Path) -> None:
    """A /cloud turn (bound for 1 s), then, once that ran out, the next turn, and only then the first
    turn's title: it joins the first family, not the session's latest."""
    title1, turn1, _, turn2 = captured("claude-code-03-tui-titles.json")
    turn1[2]["messages"][0]["content"][-1]["text"] = "say hi /cloud"
    title1[2]["messages"][0]["content"][0]["text"] = title1[2]["messages"][0]["content"][0]["text"].replace(
        "say hi /local", "say hi /cloud"
    )
    extra = "routing:\n  sticky: {ttl_seconds: 1, grace_seconds: 0}\n"
    with fake_upstream() as fake, GliderServer(backends_yaml(fake.url) + extra, tmp_path) as g:
        assert post(g, turn1).headers["x-glider-route"].startswith("cloud; rule=explicit_cloud")
        time.sleep(1.2)
        post(g, turn2)
        post(g, title1)
    (_d1, t1), (d2, t2), (d3, t3) = decided(g)
    assert (d2["family"]["kind"], d3["family"]["kind"]) == ("new_turn", "title")
    assert t3 == t1 != t2
    assert d3["family"]["link"] == f"quotes the opening message of turn {t1}"


def test_only_the_capability_gate_moves_a_held_child_and_it_says_why(tmp_path: Path) -> None:
    """The local backend's window is 4096 tokens: the /local turn fits, its subagent's huge prompt does
    not. The child is refused in the client's protocol, naming the gate, as the command itself
    would be; with a `fallback` on the explicit rule, the fallback answers it and the trace says so."""
    prompt = "Summarise each of these files in one line. " + "src/module.py " * 6000
    extra = (
        "transform: {local_context: false}\n"
        "routing:\n  rules:\n    - {name: explicit_local, fallback: origin}\n"
    )
    for fallback in (False, True):
        home = tmp_path / ("fallback" if fallback else "refused")
        home.mkdir()
        with fake_upstream() as fake:
            config = backends_yaml(fake.url).replace(
                "model: qwen-local", "model: qwen-local, context_window: 4096"
            )
            config += extra if fallback else ""
            with GliderServer(config, home) as g:
                fake.set_reply(tool=ToolReply("Agent", {"description": "summarise", "prompt": prompt}))
                headers = {"x-api-key": "sk-test", "x-claude-code-session-id": "s-1"}
                turn = {"model": "claude-opus-4-8", "max_tokens": 16, "stream": False}
                turn["tools"] = [{"name": "Agent", "input_schema": {"type": "object"}}]
                first = dict(turn, messages=[{"role": "user", "content": "audit the files /local"}])
                r = httpx.post(g.url + "/v1/messages", json=first, headers=headers, timeout=30)
                assert r.status_code == 200 and r.headers["x-glider-route"].startswith("local;"), r.text
                fake.reset()
                child = dict(turn, messages=[{"role": "user", "content": prompt}])
                rc = httpx.post(g.url + "/v1/messages", json=child, headers=headers, timeout=30)
                if not fallback:
                    assert rc.status_code == 400 and rc.json()["type"] == "error"
                    message = rc.json()["error"]["message"]
                    assert "held local in turn" in message and "> window 4,096" in message
                    assert "fallback" in message
                    assert fake.requests == []
                    continue
                assert rc.status_code == 200 and rc.headers["x-glider-route"].startswith("cloud; rule=sticky")
                (d,) = [d for t, d, _ in g.events if t == "RouteDecided"][1:]
                assert (
                    d["family"]["kind"] == "subagent"
                    and "its fallback origin answers" in d["trace"][0]["reason"]
                )


def _unquoted_prompt(req: tuple[str, dict[str, str], dict[str, Any]], prompt: str) -> None:
    """The captured prompt (`say hi /local`) replaced by one that carries no command."""
    body = json.loads(json.dumps(req[2]).replace("say hi /local", prompt))
    req[2].clear()
    req[2].update(body)


def test_a_title_sent_before_its_prompt_goes_where_the_prompt_turn_goes(tmp_path: Path) -> None:
    """Claude Code sends the title and the prompt at once; the title first, the prompt 50 ms later. The
    prompt offers tools (cloud by the default profile's tools rule); the title alone would be small
    enough for the local model. The title waits for the prompt's turn, joins it and goes to the cloud
    with it; `glider route replay` of the same two requests says the same."""
    title, turn, _, _ = captured("claude-code-03-tui-titles.json")
    for req in (title, turn):
        _unquoted_prompt(req, "say hi there")
    got: dict[str, httpx.Response] = {}

    def send(name: str, req: tuple[str, dict[str, str], dict[str, Any]], delay: float) -> None:
        time.sleep(delay)
        got[name] = post(g, req)

    with fake_upstream() as fake, GliderServer(backends_yaml(fake.url), tmp_path) as g:
        threads = [
            threading.Thread(target=send, args=("title", title, 0.0)),
            threading.Thread(target=send, args=("turn", turn, 0.05)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        decisions = {d["family"]["kind"]: (d, turn_id) for d, turn_id in decided(g)}
        config = g.path
    assert got["turn"].headers["x-glider-route"].startswith("cloud;")
    assert got["title"].headers["x-glider-route"].split(";")[0] == "cloud"
    (d_turn, t_turn), (d_title, t_title) = decisions["new_turn"], decisions["title"]
    assert t_title == t_turn and d_title["family"]["link"] == f"quotes the opening message of turn {t_turn}"
    assert d_title["target"] == d_turn["target"] == "cloud"

    lines = [
        {"path": path, "headers": headers, "body": body, "t": t}
        for (path, headers, body), t in ((title, 0.0), (turn, 0.05))
    ]
    seq = tmp_path / "title-first.jsonl"
    seq.write_text("".join(json.dumps(line) + "\n" for line in lines))
    steps = invoke_json("route", "replay", str(seq), "--config", str(config), "--json")["steps"]
    assert [(s["kind"], s["target"]) for s in steps] == [("title", "cloud"), ("new_turn", "cloud")]
    assert steps[0]["family"] == steps[1]["family"]


def test_a_title_whose_prompt_never_comes_is_routed_on_its_own_after_the_wait(tmp_path: Path) -> None:
    """No prompt request follows: after `routing.sticky.title_wait_seconds` the title is routed as it
    always was (ahead of its turn, by the rules: small, so local), and the wait is bounded."""
    title, _, _, _ = captured("claude-code-03-tui-titles.json")
    _unquoted_prompt(title, "say hi there")
    extra = "routing:\n  sticky: {title_wait_seconds: 0.4}\n"
    with fake_upstream() as fake, GliderServer(backends_yaml(fake.url) + extra, tmp_path) as g:
        start = time.monotonic()
        r = post(g, title)
        took = time.monotonic() - start
        ((d, _turn),) = decided(g)
    assert r.headers["x-glider-route"].startswith("local;")
    assert d["family"]["kind"] == "title" and "ahead of its turn" in d["family"]["link"]
    assert 0.4 <= took < 0.4 + 5.0
