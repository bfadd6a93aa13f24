"""What a connection may hold, through the real app served as `glider serve` serves it, with raw
sockets: a head that never completes is cut at `server.header_timeout` (also on the second request
of a keep-alive connection), a body that never completes gets a 408 in the client's protocol at
`server.body_timeout` and nothing goes upstream, a client over `server.max_connections_per_client`
(applied to a loopback peer with `server.cap_loopback_clients: true`) whose connections are all busy
gets 503 while its other connections and other clients keep working, and real clients never notice.

Timing assertions are loose on purpose (2 shared cores): "closed within the timeout plus several
seconds", never an exact time."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-x", "gpt-x"], ollama_models=["qwen-local"]),
]

SLACK = 6.0  # seconds past a deadline a loaded machine may take to act on it
ANTHROPIC = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}


def _config(fake: FakeUpstream, **server: object) -> str:
    lines = "".join(f"  {k}: {v}\n" for k, v in server.items())
    return backends_yaml(fake.url) + "server:\n" + lines


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


@pytest.fixture
def quick(fake: FakeUpstream, tmp_path: Path) -> Iterator[GliderServer]:
    with GliderServer(_config(fake, header_timeout=0.5, body_timeout=0.5), tmp_path) as g:
        yield g


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _head(port: int, method: str, path: str, extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}".encode()


def _post_head(port: int, path: str, length: int) -> bytes:
    extra = (
        "content-type: application/json\r\nx-api-key: sk-client\r\nanthropic-version: 2023-06-01\r\n"
        f"content-length: {length}\r\n\r\n"
    )
    return _head(port, "POST", path, extra)


def _closed_within(s: socket.socket, seconds: float) -> bool:
    """True when the server closes `s` (EOF or reset) within `seconds`; anything it sends is skipped."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.settimeout(max(0.05, end - time.monotonic()))
        try:
            if s.recv(65536) == b"":
                return True
        except TimeoutError:
            return False
        except ConnectionError:
            return True
    return False


def _read_response(s: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length (what Glider's own answers carry)."""
    s.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, f"connection closed before a response head: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = s.recv(65536)
        assert chunk, "connection closed inside a response body"
        rest += chunk
    return status, headers, rest[:length]


def _anthropic_body(text: str = "hi") -> bytes:
    body = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": f"/cloud {text}"}]}
    return json.dumps(body).encode()


def _health(g: GliderServer) -> dict[str, Any]:
    counts: dict[str, Any] = httpx.get(g.url + "/healthz", timeout=10).json()["connections"]
    return counts


def test_half_a_head_is_cut_while_another_client_is_answered(quick: GliderServer) -> None:
    stalled = _connect(quick.port)
    stalled.sendall(_head(quick.port, "POST", "/v1/messages", "content-type: application/json\r\n"))
    silent = _connect(quick.port)  # connects and never sends a byte
    try:
        r = httpx.post(quick.url + "/v1/messages", content=_anthropic_body(), headers=ANTHROPIC, timeout=10)
        assert r.status_code == 200 and r.json()["type"] == "message"
        assert _closed_within(stalled, 0.5 + SLACK)
        assert _closed_within(silent, 0.5 + SLACK)
    finally:
        stalled.close()
        silent.close()
    assert _health(quick)["header_timeouts"] >= 2


def test_a_trickled_head_on_the_second_keep_alive_request_is_cut(quick: GliderServer) -> None:
    with _connect(quick.port) as s:
        s.sendall(_head(quick.port, "GET", "/healthz", "\r\n"))
        status, headers, _ = _read_response(s)
        assert status == 200 and headers.get("connection") != "close"
        # The next head, one byte at a time: each byte would restart uvicorn's keep-alive timer.
        trickle = _head(quick.port, "GET", "/healthz", "x-padding: " + "a" * 400)
        end = time.monotonic() + 0.5 + SLACK
        cut = False
        for byte in trickle:
            if time.monotonic() > end:
                break
            try:
                s.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
            if _closed_within(s, 0.05):
                cut = True
                break
        assert cut, "the trickled head kept the connection open"


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        ("/v1/messages", "anthropic"),
        ("/v1/chat/completions", "openai"),
        ("/v1/responses", "openai"),
        ("/v1beta/models/qwen-local:generateContent", "gemini"),
    ],
)
def test_a_stalled_body_gets_a_408_in_the_protocol_and_nothing_goes_upstream(
    quick: GliderServer, fake: FakeUpstream, path: str, shape: str
) -> None:
    with _connect(quick.port) as s:
        s.sendall(_post_head(quick.port, path, 5000) + b'{"model": "claude-x", "messages": [')
        status, headers, body = _read_response(s)
        assert status == 408 and headers["connection"] == "close"
        assert headers["content-type"] == "application/json"
        error = json.loads(body)
        if shape == "anthropic":
            assert error["type"] == "error" and error["error"]["type"] == "timeout_error"
            message = error["error"]["message"]
        elif shape == "openai":
            assert set(error["error"]) == {"message", "type", "param", "code"}
            message = error["error"]["message"]
        else:
            assert error["error"]["code"] == 408 and error["error"]["status"] == "DEADLINE_EXCEEDED"
            message = error["error"]["message"]
        assert "server.body_timeout" in message
        assert _closed_within(s, SLACK)
    assert fake.requests == []
    assert _health(quick)["body_timeouts"] >= 1


def test_a_stalled_chunked_body_on_a_starlette_route_gets_a_408_not_a_500(quick: GliderServer) -> None:
    with _connect(quick.port) as s:
        extra = "content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        s.sendall(_head(quick.port, "POST", "/api/router/explain", extra) + b'5\r\n{"mes\r\n')
        status, headers, body = _read_response(s)
        assert status == 408 and headers["connection"] == "close"
        assert "server.body_timeout" in json.loads(body)["error"]["message"]
        assert _closed_within(s, SLACK)


def test_a_client_over_the_cap_gets_503_while_its_other_connections_and_other_clients_work(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    # The per-client cap applies to loopback peers only when asked to (every local client is one peer).
    cfg = _config(
        fake, header_timeout=30, body_timeout=30, max_connections_per_client=3, cap_loopback_clients="true"
    )
    body = _anthropic_body()
    half = len(body) // 2
    with GliderServer(cfg, tmp_path) as g:
        # Three connections from 127.0.0.2, each in the middle of sending a request body.
        held = [_connect(g.port, "127.0.0.2") for _ in range(3)]
        try:
            for s in held:
                s.sendall(_post_head(g.port, "/v1/messages", len(body)) + body[:half])
            with _connect(g.port, "127.0.0.2") as over:
                over.sendall(_head(g.port, "GET", "/healthz", "\r\n"))
                status, headers, err = _read_response(over)
                assert status == 503 and headers["retry-after"] == "1" and headers["connection"] == "close"
                assert "server.max_connections_per_client" in json.loads(err)["error"]["message"]
                assert _closed_within(over, SLACK)
            # Another client (peer 127.0.0.1) is not limited by 127.0.0.2's connections.
            r = httpx.post(g.url + "/v1/messages", content=body, headers=ANTHROPIC, timeout=10)
            assert r.status_code == 200
            # The held connections finish their requests and are answered.
            for s in held:
                s.sendall(body[half:])
            for s in held:
                status, _, reply = _read_response(s)
                assert status == 200 and json.loads(reply)["type"] == "message"
            assert _health(g)["over_cap"] == 1
            # One closes: a new connection from 127.0.0.2 is accepted (once the server saw the close).
            held.pop().close()
            end = time.monotonic() + SLACK
            while True:
                with _connect(g.port, "127.0.0.2") as again:
                    again.sendall(_head(g.port, "GET", "/healthz", "\r\n"))
                    status, _, _ = _read_response(again)
                if status == 200 or time.monotonic() > end:
                    break
                time.sleep(0.1)
            assert status == 200
        finally:
            for s in held:
                s.close()


def test_past_max_connections_in_all_any_client_gets_503(fake: FakeUpstream, tmp_path: Path) -> None:
    cfg = _config(fake, header_timeout=30, body_timeout=30, max_connections=2)
    body = _anthropic_body()
    with GliderServer(cfg, tmp_path) as g:
        held = [_connect(g.port, source) for source in ("127.0.0.1", "127.0.0.3")]
        try:
            for s in held:
                s.sendall(_post_head(g.port, "/v1/messages", len(body)) + body[:10])
            with _connect(g.port, "127.0.0.2") as over:
                over.sendall(_post_head(g.port, "/v1/messages", len(body)) + body)
                status, headers, err = _read_response(over)
                assert status == 503 and headers["retry-after"] == "1"
                error = json.loads(err)["error"]
                assert error["type"] == "overloaded_error" and "server.max_connections)" in error["message"]
            for s in held:
                s.sendall(body[10:])
                assert _read_response(s)[0] == 200
        finally:
            for s in held:
                s.close()
        assert fake.requests and len(fake.requests) == 2


def test_real_clients_are_unaffected(fake: FakeUpstream, tmp_path: Path) -> None:
    """A body sent in pieces within the deadline, several requests on one keep-alive connection, and
    an answer that takes longer than the head deadline (the timer runs only between requests)."""
    cfg = _config(fake, header_timeout=0.5, body_timeout=3, max_connections_per_client=2)
    body = _anthropic_body()
    with GliderServer(cfg, tmp_path) as g:

        def pieces() -> Iterator[bytes]:
            for i in range(0, len(body), 40):
                time.sleep(0.05)
                yield body[i : i + 40]

        r = httpx.post(g.url + "/v1/messages", content=pieces(), headers=ANTHROPIC, timeout=10)
        assert r.status_code == 200 and r.json()["type"] == "message"
        with httpx.Client(timeout=10) as client:
            for _ in range(3):
                r = client.post(g.url + "/v1/messages", content=body, headers=ANTHROPIC)
                assert r.status_code == 200
                time.sleep(0.1)
        fake.set_fault(delay=1.5, times=1)
        stream = {**json.loads(body), "stream": True}
        with httpx.stream("POST", g.url + "/v1/messages", json=stream, headers=ANTHROPIC, timeout=10) as r:
            assert r.status_code == 200
            text = "".join(r.iter_text())
        assert "message_stop" in text
        # Two clients at once (the cap) are both answered.
        results: list[int] = []

        def call() -> None:
            results.append(httpx.post(g.url + "/v1/messages", content=body, headers=ANTHROPIC).status_code)

        threads = [threading.Thread(target=call) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        assert results == [200, 200]
        counts = _health(g)
        assert counts["over_cap"] == 0 and counts["body_timeouts"] == 0


def test_glider_serve_runs_with_the_limits(fake: FakeUpstream, tmp_path: Path) -> None:
    """`glider serve` itself (`server.serve`), not only the harness: a client over the cap gets 503, the
    stalled bodies under it get their 408 in Anthropic's shape, a half head is cut, /healthz counts."""
    cfg = tmp_path / "serve.yaml"
    limits = {"max_connections_per_client": 2, "cap_loopback_clients": "true"}
    cfg.write_text(_config(fake, header_timeout=0.5, body_timeout=3, **limits))
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-m", "glider_cli", "serve", "-c", str(cfg), "--port", str(port), "--quiet"]
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < end, "glider serve did not come up"
                time.sleep(0.1)
        # Two connections from 127.0.0.2 in the middle of a body (the body deadline runs, not the head's).
        held = [_connect(port, "127.0.0.2") for _ in range(2)]
        try:
            for s in held:
                s.sendall(_post_head(port, "/v1/messages", 900) + b"{")
            with _connect(port, "127.0.0.2") as over:
                over.sendall(_head(port, "GET", "/healthz", "\r\n"))
                assert _read_response(over)[0] == 503
            for s in held:
                status, _, body = _read_response(s)
                assert status == 408 and json.loads(body)["error"]["type"] == "timeout_error"
        finally:
            for s in held:
                s.close()
        with _connect(port) as s:
            s.sendall(_head(port, "GET", "/healthz", "x-a: b\r\n"))
            assert _closed_within(s, 0.5 + SLACK)
        counts = httpx.get(url + "/healthz", timeout=10).json()["connections"]
        assert counts["header_timeouts"] >= 1 and counts["body_timeouts"] == 2 and counts["over_cap"] == 1
        assert fake.requests == []
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_the_per_client_cap_leaves_loopback_peers_alone_by_default(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    """Every local client is the peer 127.0.0.1: a cap one of them fills would refuse all the others."""
    cfg = _config(fake, header_timeout=30, body_timeout=30, max_connections_per_client=2)
    with GliderServer(cfg, tmp_path) as g:
        held = [_connect(g.port) for _ in range(4)]
        try:
            for s in held:
                s.sendall(_post_head(g.port, "/v1/messages", 900) + b"{")
            r = httpx.post(g.url + "/v1/messages", content=_anthropic_body(), headers=ANTHROPIC, timeout=10)
            assert r.status_code == 200
        finally:
            for s in held:
                s.close()
        assert _health(g)["over_cap"] == 0
