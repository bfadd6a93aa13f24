"""An explicit `/local` never reaches the cloud (issue 39, point 1): when no local backend can answer
it — down, erroring, timed out, its breaker open — the client gets its own protocol's error naming what
failed, and the cloud backend receives nothing, for the turn and for its family (title, subagent,
continuation), unless the person's rule names a cloud `fallback`. A local decision of any other rule
still falls back to the cloud as before.

Glider runs the bundled default profile; the strict fake upstream is the cloud (`origin`) and, where a
test needs a local side that answers first, Ollama too. Its request log is what reached it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer
from test_routing_flows import agent_call, captured, decided, set_call_id, tool_use_id

from fake_upstream import FakeUpstream, ToolReply, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(
        models=["claude-x", "gpt-x", "gemini-x", "claude-opus-4-8", "claude-haiku-4-5-20251001"],
        ollama_models=["qwen-local"],
    ),
]

ANTHROPIC = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
OPENAI = {"authorization": "Bearer sk-client"}
GEMINI = {"x-goog-api-key": "sk-client"}
NEVER = "is never sent to the cloud"


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _config(local_url: str, cloud_url: str, *, rule_fallback: str | None = None, extra: str = "") -> str:
    rules = ""
    if rule_fallback:
        rules = f"routing:\n  rules:\n    - name: explicit_local\n      fallback: {rule_fallback}\n"
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local_url}', model: qwen-local{extra}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n" + rules
    )


def _requests(text: str) -> list[tuple[str, str, dict[str, str], dict[str, Any]]]:
    """(protocol, path, headers, body) of one prompt in each API Glider serves."""
    return [
        (
            "anthropic",
            "/v1/messages",
            ANTHROPIC,
            {
                "model": "claude-x",
                "max_tokens": 64,
                "stream": True,
                "messages": [{"role": "user", "content": text}],
            },
        ),
        (
            "openai_chat",
            "/v1/chat/completions",
            OPENAI,
            {"model": "gpt-x", "messages": [{"role": "user", "content": text}]},
        ),
        ("openai_responses", "/v1/responses", OPENAI, {"model": "gpt-x", "input": text}),
        (
            "gemini",
            "/v1beta/models/gemini-x:generateContent",
            GEMINI,
            {"contents": [{"role": "user", "parts": [{"text": text}]}]},
        ),
    ]


def _message(protocol: str, r: httpx.Response) -> str:
    """The error's message, read from the shape the client's own API uses."""
    body = r.json()
    if protocol == "anthropic":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}, body
        return str(body["error"]["message"])
    if protocol == "gemini":
        assert body["error"]["code"] == r.status_code and body["error"]["status"], body
        return str(body["error"]["message"])
    assert set(body) == {"error"} and body["error"]["type"], body
    return str(body["error"]["message"])


def test_with_the_local_server_down_every_api_gets_its_error_and_the_cloud_nothing(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    down = closed_port_url()
    statuses = {}
    with GliderServer(_config(down, fake.url), tmp_path) as g:
        for protocol, path, headers, body in _requests("please say hi /local"):
            r = httpx.post(g.url + path, json=body, headers=headers, timeout=30)
            statuses[protocol] = r.status_code
            said = _message(protocol, r)
            assert "ollama" in said and "refused the connection" in said and NEVER in said, said
            assert "rule explicit_local" in said and f"nothing listens at {down}" in said
            assert r.headers["x-glider-route"] == "local; rule=explicit_local; backend=ollama"
            assert r.headers["x-should-retry"] == "false"
        g.wait_for("FulfilledLocal", 4)
    # 502 where the client obeys x-should-retry; 400 for the clients that retry every 5xx.
    assert statuses == {"anthropic": 502, "openai_chat": 502, "openai_responses": 400, "gemini": 400}
    assert fake.requests == [] and fake.probes == []
    assert "FallbackUsed" not in g.types() and "OriginPassthrough" not in g.types()
    assert [d["held_local"] for d, _ in decided(g)] == ["explicit_local"] * 4


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        ({"status": 500, "message": "llama runner crashed"}, "llama runner crashed"),
        ({"status": 404, "message": "model 'qwen-local' not found, try pulling it first"}, "not found"),
        ({"delay": 5.0}, "timed out"),
    ],
)
def test_a_local_error_or_timeout_ends_there_for_a_local_turn(
    fake: FakeUpstream, tmp_path: Path, fault: dict[str, Any], cause: str
) -> None:
    fake.set_fault(**fault, paths=("/api/chat",))
    config = _config(fake.url, fake.url, extra=", timeout: {connect: 2, read: 1}")
    with GliderServer(config, tmp_path) as g:
        _, path, headers, body = _requests("/fast say hi")[0]
        r = httpx.post(g.url + path, json=body, headers=headers, timeout=30)
        said = _message("anthropic", r)
    assert r.status_code >= 400 and cause in said.lower() and NEVER in said and "explicit /fast" in said
    assert [q.path for q in fake.requests] == ["/api/chat"]  # the local attempt only


def test_a_rule_that_names_a_cloud_fallback_is_the_persons_own_choice(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with GliderServer(_config(closed_port_url(), fake.url, rule_fallback="origin"), tmp_path) as g:
        _, path, headers, body = _requests("say hi /local")[0]
        r = httpx.post(g.url + path, json=body, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["x-glider-route"].endswith("fallback-from=ollama")
    assert [q.path for q in fake.requests] == ["/v1/messages"]


def test_another_local_rule_still_falls_back_to_the_cloud(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(closed_port_url(), fake.url), tmp_path) as g:
        _, path, headers, body = _requests("say hi")[0]  # small_context_local: no command typed
        r = httpx.post(g.url + path, json=body, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["x-glider-route"].startswith("cloud; rule=small_context_local; backend=origin")
    assert "fallback-from=ollama" in r.headers["x-glider-route"]


def test_the_title_subagent_and_continuation_of_a_local_turn_never_reach_the_cloud(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    """The captured Claude Code session: title(/local) and the /local turn answer locally with an Agent
    call; then the local server fails, and the Explore subagent (17 tools: the classifier would send it
    to the cloud), the Agent result and a continuation of the turn each get an error, not the cloud."""
    title, turn, subagent, result, _, _ = captured("claude-code-04-tui-subagent.json")
    call = agent_call(result)
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        r0 = httpx.post(g.url + title[0], headers=title[1], json=title[2], timeout=30)
        assert r0.headers["x-glider-route"].startswith("local;"), r0.text
        fake.set_reply(tool=ToolReply("Agent", call["input"]))
        r1 = httpx.post(g.url + turn[0], headers=turn[1], json=turn[2], timeout=30)
        assert r1.headers["x-glider-route"].startswith("local; rule=explicit_local"), r1.text
        set_call_id(result, call["id"], tool_use_id(r1))
        fake.reset()
        fake.set_fault(status=503, message="ollama is restarting", paths=("/api/chat",))
        continued = dict(turn[2])
        continued["messages"] = [
            *turn[2]["messages"],
            {"role": "assistant", "content": [{"type": "text", "text": "Looking through the files"}]},
        ]
        for path, headers, body in (subagent, result, (turn[0], turn[1], continued)):
            r = httpx.post(g.url + path, headers=headers, json=body, timeout=30)
            assert r.status_code == 503, r.text
            said = _message("anthropic", r)
            assert "ollama is restarting" in said and NEVER in said, said
        g.wait_for("FulfilledLocal", 5)
    assert {q.path for q in fake.requests} == {"/api/chat"}  # nothing reached /v1/messages
    kinds = [(d["family"]["kind"], d["target"], d.get("held_local")) for d, _ in decided(g)]
    assert kinds == [
        ("title", "local", "explicit_local"),
        ("new_turn", "local", "explicit_local"),
        ("subagent", "local", "explicit_local"),
        ("tool_result", "local", "explicit_local"),
        ("continuation", "local", "explicit_local"),
    ], kinds
