"""create_app's seams: an injected EventSink, an injected Upstream (only where a test must control
what the upstream does from inside), and the app driven in process by Starlette's TestClient (which
runs the lifespan, and with it the production upstream client against a real fake upstream)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from glider_harness import RecordingSink, backends_yaml
from starlette.testclient import TestClient

from fake_upstream import FakeUpstream
from glider_cli.config.load import load_config
from glider_cli.server.app import create_app

pytestmark = pytest.mark.fake_serves(models=["claude-x", "m"], ollama_models=["qwen-local"])


def test_the_production_client_in_process_and_recorded_events(tmp_path: Path, fake: FakeUpstream) -> None:
    """TestClient runs the lifespan, so the app's own aiohttp client talks to a real fake upstream."""
    fake.reset()
    fake.set_reply(text="from the mock", usage=(3, 2), headers={"request-id": "req_1"})
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(backends_yaml(fake.url))
    sink = RecordingSink()
    app = create_app(
        load_config(config=str(cfg_path)),
        sink=sink,
        environ={"GLIDER_HOME": str(tmp_path / "home")},
    )
    with TestClient(app, base_url="http://127.0.0.1") as client:
        r = client.post(
            "/v1/messages?beta=true",
            json={
                "model": "claude-x",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "/cloud hi"}],
            },
            headers={"x-api-key": "sk-client"},
        )
    seen = fake.requests
    assert r.status_code == 200
    assert r.json()["content"][0]["text"] == "from the mock"
    assert r.headers["request-id"] == "req_1"
    assert r.headers["x-glider-route"].startswith("cloud; rule=explicit_cloud; backend=origin")
    assert (seen[0].path, seen[0].query) == ("/v1/messages", {"beta": "true"})
    assert seen[0].headers["x-api-key"] == "sk-client"
    assert json.loads(seen[0].raw)["messages"][0]["content"] == "/cloud hi"
    types = [t for t, _, _ in sink.events]
    assert types[:2] == ["TurnOpened", "RouteDecided"] and "OriginPassthrough" in types
    done = next(d for t, d, _ in sink.events if t == "OriginPassthrough")
    assert (done["input_tokens"], done["output_tokens"], done["complete"]) == (3, 2, True)


def test_a_relayed_stream_that_never_started_still_closes_its_upstream(tmp_path: Path) -> None:
    """The reply's stream is never iterated (the client left while its headers were being sent):
    `Reply.close` closes the upstream response and the outcome is recorded as a disconnect."""
    import asyncio

    class Upstream:
        status = 200

        def __init__(self) -> None:
            self.closed = 0
            self.headers = [("content-type", "text/event-stream")]
            self.raw_headers = [(b"content-type", b"text/event-stream")]

        async def aiter_bytes(self):  # type: ignore[no-untyped-def]
            yield b"event: message_start\ndata: {}\n\n"

        async def aclose(self) -> None:
            self.closed += 1

    class Client:
        def __init__(self, resp: Upstream) -> None:
            self.resp = resp

        async def send(self, *args: object) -> Upstream:
            return self.resp

        async def aclose(self) -> None:
            return None

    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(backends_yaml("http://upstream.test"))
    sink = RecordingSink()
    resp = Upstream()
    app = create_app(load_config(config=str(cfg_path)), sink=sink, upstream=Client(resp))
    proxy = app.state.proxy
    message = {"role": "user", "content": "/cloud hi"}
    body = {"model": "claude-x", "max_tokens": 8, "stream": True, "messages": [message]}
    scope = {"type": "http", "headers": [(b"host", b"127.0.0.1")], "query_string": b""}

    async def go() -> None:
        reply = await proxy.handle("anthropic", scope, json.dumps(body).encode())
        assert reply.stream is not None and reply.close is not None
        await reply.stream.aclose()  # never started: its own `finally` does not run
        await reply.close()
        await reply.close()  # once only
        for _ in range(3):
            await asyncio.sleep(0)
        proxy.ledger.sink.drain()  # the LoopSink the engine records to

    asyncio.run(go())
    assert resp.closed == 1
    done = [d for t, d, _ in sink.events if t == "OriginPassthrough"]
    assert len(done) == 1 and done[0]["complete"] is False and done[0]["client_disconnected"] is True


def test_an_unexpected_failure_is_answered_in_the_clients_protocol_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in Glider (here: the router raising) must not reach the client as Starlette's plain-text
    500: the model endpoints answer it in the client's own error shape, log the traceback, and the
    next request on the app is served as usual."""

    class Broken:
        calls = 0

        def decide(self, request: object, *, sticky: object = None) -> object:
            Broken.calls += 1
            raise RuntimeError("router bug")

    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(backends_yaml("http://upstream.test"))
    app = create_app(load_config(config=str(cfg_path)), sink=RecordingSink(), router=Broken())
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    with caplog.at_level("ERROR", logger="uvicorn.error"), TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/v1/messages", json=body)
        chat = c.post("/v1/chat/completions", json=body)
        health = c.get("/healthz")
    assert r.status_code == 500 and r.headers["content-type"] == "application/json"
    assert r.json()["type"] == "error" and r.json()["error"]["type"] == "api_error"
    assert chat.status_code == 500 and "message" in chat.json()["error"]
    assert health.status_code == 200 and Broken.calls == 2
    assert "router bug" in caplog.text and "Glider failed on POST /v1/messages" in caplog.text
