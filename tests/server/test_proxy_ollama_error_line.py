"""An Ollama stream that ends with its own `{"error": ...}` line is a failure (UpstreamFailed, the
client's stream ends with its protocol's error event), not a complete reply."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import closed_port_url

pytestmark = pytest.mark.live


class _Ollama(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # the capability probe's /api/tags
        body = json.dumps({"models": [{"name": "qwen-local:latest", "model": "qwen-local:latest"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "application/x-ndjson")
        self.end_headers()
        line = {"model": "qwen-local", "message": {"role": "assistant", "content": "par"}, "done": False}
        self.wfile.write(json.dumps(line).encode() + b"\n")
        self.wfile.write(b'{"error":"an error was encountered while running the model: GGML_ASSERT"}\n')


@pytest.fixture
def ollama() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ollama)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_ollama_error_line_mid_stream_is_a_failure(ollama: str, tmp_path: Path) -> None:
    config = (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{ollama}', model: qwen-local, fallback: none}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{closed_port_url()}'}}\n"
    )
    body = {
        "model": "claude-x",
        "max_tokens": 16,
        "stream": True,
        "messages": [{"role": "user", "content": "/local hi"}],
    }
    headers = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
    with GliderServer(config, tmp_path) as g:
        r = httpx.post(g.url + "/v1/messages", json=body, headers=headers, timeout=30)
        failed = g.wait_for("UpstreamFailed")
        done = g.wait_for("FulfilledLocal")
    assert r.status_code == 200
    assert "event: error" in r.text and "GGML_ASSERT" in r.text
    assert failed and failed[0]["stage"] == "mid_stream" and "GGML_ASSERT" in failed[0]["error"]
    assert done and done[0]["complete"] is False
