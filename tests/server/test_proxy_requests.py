"""What the proxy does with the requests real clients send: passthrough fidelity, bad input, the small
endpoints, and the events it records (through the real EventWriter, to JSONL on disk)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream
from glider_cli.config.load import load_config
from glider_cli.paths import resolve
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router
from glider_cli.store.eventlog.log import iter_events

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["m", "claude-opus-5-5", "gpt-5"], ollama_models=["qwen-local"]),
]

CLIENTS = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def captured(name: str, index: int = 0) -> tuple[dict[str, str], bytes, str]:
    req = json.loads((CLIENTS / name).read_text())["requests"][index]
    headers = {k: v for k, v in req["headers"] if k.lower() not in ("host", "content-length")}
    query = "&".join(f"{k}={v[0]}" for k, v in req["query"].items())
    return headers, json.dumps(req["body"]).encode(), req["path"] + (f"?{query}" if query else "")


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


@pytest.fixture
def glider(fake: FakeUpstream, tmp_path: Path) -> Iterator[GliderServer]:
    cfg = backends_yaml(fake.url) + "server:\n  max_body_bytes: 200000\n"
    with GliderServer(cfg, tmp_path) as g:
        yield g


def test_claude_code_first_turn_passes_through_byte_for_byte(
    glider: GliderServer, fake: FakeUpstream
) -> None:
    headers, body, path = captured("claude-code-01-first-turn.json")
    r = httpx.post(glider.url + path, headers=headers, content=body, timeout=30)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert "content-length" not in r.headers
    assert r.headers["x-glider-route"].startswith("cloud; rule=")
    # The upstream's own cache-control (the fake sends no-cache, as Anthropic does) appears once.
    assert r.headers.get_list("cache-control") == ["no-cache"]
    rec = fake.requests[-1]
    assert rec.raw == body  # unknown fields, thinking, context_management, cache_control, metadata
    assert rec.query == {"beta": "true"}
    for name in (
        "anthropic-beta",
        "anthropic-version",
        "x-claude-code-session-id",
        "x-app",
        "user-agent",
        "x-stainless-package-version",
        "anthropic-dangerous-direct-browser-access",
    ):
        assert rec.headers[name] == headers[next(k for k in headers if k.lower() == name)]
    assert rec.headers["accept-encoding"] == "identity"
    assert rec.headers["x-api-key"] == headers["x-api-key"]


def test_codex_responses_request_passes_through(glider: GliderServer, fake: FakeUpstream) -> None:
    headers, body, path = captured("codex-exec-01-tool-followup.json")
    # Codex routes to the cloud (origin) with /cloud anywhere in its input; here its own text decides.
    r = httpx.post(glider.url + path, headers=headers, content=body, timeout=30)
    assert r.status_code == 200
    assert "response.completed" in r.text
    rec = fake.requests[-1]
    assert rec.path in ("/v1/responses", "/api/chat")
    if rec.path == "/v1/responses":
        assert rec.raw == body and rec.headers["originator"] == headers["originator"]


def test_malformed_bodies_get_the_client_shape_and_a_faithful_status(glider: GliderServer) -> None:
    r = httpx.post(glider.url + "/v1/messages", content=b"{nope", headers={"x-api-key": "k"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.post(glider.url + "/v1/messages", content=b"[1, 2]", headers={"x-api-key": "k"})
    assert r.status_code == 400 and r.json()["type"] == "error"
    r = httpx.post(glider.url + "/v1/messages", json={"model": "m", "messages": "hi"})
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    r = httpx.post(glider.url + "/v1/chat/completions", content=b"{nope")
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.post(glider.url + "/v1/responses", content=b"{nope")
    assert r.status_code == 400 and "error" in r.json()


def test_unknown_fields_are_never_a_400(glider: GliderServer, fake: FakeUpstream) -> None:
    body = {
        "model": "m",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "/cloud hi", "brand_new": 1}]}],
        "a_field_from_2027": {"x": [1, 2]},
        "thinking": {"type": "adaptive", "display": "omitted"},
    }
    r = httpx.post(glider.url + "/v1/messages", json=body, headers={"x-api-key": "k"})
    assert r.status_code == 200
    assert json.loads(fake.requests[-1].raw)["a_field_from_2027"] == {"x": [1, 2]}


def test_oversized_bodies_get_413(glider: GliderServer) -> None:
    big = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x" * 300_000}]}
    r = httpx.post(glider.url + "/v1/messages", json=big)
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
        yield b'{"model": "m", "messages": [{"role": "user", "content": "'
        for _ in range(30):
            yield b"y" * 10_000
        yield b'"}]}'

    r = httpx.post(glider.url + "/v1/chat/completions", content=chunks())
    assert r.status_code == 413 and "error" in r.json()


def test_small_endpoints(glider: GliderServer) -> None:
    assert httpx.head(glider.url + "/").status_code == 200
    assert httpx.head(glider.url + "/api/hello").status_code == 200
    health = httpx.get(glider.url + "/healthz").json()
    assert health["status"] == "ok" and {b["name"] for b in health["backends"]} == {"ollama", "origin"}
    a = httpx.get(glider.url + "/v1/models", headers={"anthropic-version": "2023-06-01"}).json()
    assert a["data"][0]["type"] == "model" and "has_more" in a
    o = httpx.get(glider.url + "/v1/models").json()
    assert o["object"] == "list" and o["data"][0]["object"] == "model"
    ws = httpx.get(
        glider.url + "/v1/responses",
        headers={
            "upgrade": "websocket",
            "connection": "Upgrade",
            "openai-beta": "responses_websockets=2026-02-06",
        },
    )
    assert ws.status_code in (403, 404) and ws.status_code != 101
    assert httpx.get(glider.url + "/v1/messages").status_code == 405


def test_events_reach_the_jsonl_log_and_match_route_explain(fake: FakeUpstream, tmp_path: Path) -> None:
    env = {"GLIDER_HOME": str(tmp_path / "home")}
    cfg_text = backends_yaml(fake.url)
    with GliderServer(cfg_text, tmp_path, environ=env, record=False) as g:
        body: dict[str, Any] = {
            "model": "m",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "/cloud hi"}],
        }
        r = httpx.post(g.url + "/v1/messages", json=body, headers={"x-api-key": "sk-secret-client-key-123"})
        assert r.status_code == 200
    events = list(iter_events(resolve(env).context))
    types = [e["type"] for e in events]
    assert types[:2] == ["TurnOpened", "RouteDecided"] and "OriginPassthrough" in types
    decided = next(e for e in events if e["type"] == "RouteDecided")
    assert all(e["turn_id"] == decided["turn_id"] for e in events if e["type"] != "StickyBound")
    config = load_config(config=str(tmp_path / "glider-test-config.yaml"))
    decision = Router(config).decide(parse_request("anthropic", body, {}))
    # The event is the decision's record: explain's trace without the rules after the winner, counted.
    expected = decision.to_record()
    for key in ("target", "rule", "priority", "backend", "model", "request", "trace", "not_reached"):
        assert decided["data"][key] == expected[key]
    full = decision.to_dict()["trace"]
    assert decided["data"]["trace"] == full[: len(full) - expected["not_reached"]]
    for f in resolve(env).context.rglob("*"):
        assert not f.is_file() or "sk-secret-client-key-123" not in f.read_text()


def test_tool_follow_up_keeps_the_turn(glider: GliderServer, fake: FakeUpstream) -> None:
    tool = {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "GLIDER_TOOL:Bash /local"}]
    r = httpx.post(
        glider.url + "/v1/messages", json={"model": "m", "max_tokens": 8, "messages": msgs, "tools": [tool]}
    )
    reply = r.json()
    call = next(b for b in reply["content"] if b["type"] == "tool_use")
    msgs += [
        {"role": "assistant", "content": reply["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "ok"}]},
    ]
    r = httpx.post(
        glider.url + "/v1/messages", json={"model": "m", "max_tokens": 8, "messages": msgs, "tools": [tool]}
    )
    assert r.status_code == 200
    assert glider.types().count("TurnOpened") == 1
    turns = {t for kind, _, t in glider.events if kind == "RouteDecided"}
    assert len(turns) == 1
