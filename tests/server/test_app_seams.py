"""create_app's seams: an httpx transport for the upstream (MockTransport) and an injected EventSink,
driven in process by Starlette's TestClient (which runs the lifespan)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from glider_harness import RecordingSink, backends_yaml
from starlette.testclient import TestClient

from glider_cli.config import load_config
from glider_cli.server.app import create_app


def test_httpx_transport_seam_and_recorded_events(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": "from the mock"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 2},
        }
        return httpx.Response(200, json=body, headers={"request-id": "req_1"})

    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(backends_yaml("http://upstream.test"))
    sink = RecordingSink()
    app = create_app(
        load_config(config=str(cfg_path)),
        sink=sink,
        transport=httpx.MockTransport(upstream),
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
    assert r.status_code == 200
    assert r.json()["content"][0]["text"] == "from the mock"
    assert r.headers["request-id"] == "req_1"
    assert r.headers["x-glider-route"].startswith("cloud; rule=explicit_cloud; backend=origin")
    assert str(seen[0].url) == "http://upstream.test/v1/messages?beta=true"
    assert seen[0].headers["x-api-key"] == "sk-client"
    assert json.loads(seen[0].content)["messages"][0]["content"] == "/cloud hi"
    types = [t for t, _, _ in sink.events]
    assert types[:2] == ["TurnOpened", "RouteDecided"] and "OriginPassthrough" in types
    done = next(d for t, d, _ in sink.events if t == "OriginPassthrough")
    assert (done["input_tokens"], done["output_tokens"], done["complete"]) == (3, 2, True)
