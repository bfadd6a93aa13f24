"""Upstream failures through a live Glider: refused, timeout before the first byte, 503/429, a stream cut
mid-way and client disconnects — with and without fallback, and every one recorded as events."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-x", "m"], ollama_models=["qwen-local"]),
]

ANTHROPIC_HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}


def _body(text: str, *, stream: bool = False) -> dict[str, object]:
    return {
        "model": "claude-x",
        "max_tokens": 32,
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
    }


def _config(local_url: str, origin_url: str, *, local: str = "", origin: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local_url}', model: qwen-local{local}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{origin_url}'{origin}}}\n"
    )


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _post(g: GliderServer, body: dict[str, object], **kw: object) -> httpx.Response:
    return httpx.post(g.url + "/v1/messages", json=body, headers=ANTHROPIC_HEADERS, timeout=30, **kw)  # type: ignore[arg-type]


def test_refused_local_falls_back_to_cloud(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(closed_port_url(), fake.url), tmp_path) as g:
        r = _post(g, _body("say hi"))
        assert r.status_code == 200
        assert r.json()["content"][0]["text"].startswith("hello from fake anthropic")
        assert r.headers["x-glider-route"].startswith("cloud; rule=small_context_local; backend=origin")
        assert "fallback-from=ollama" in r.headers["x-glider-route"]
        failed = g.wait_for("UpstreamFailed")
        assert failed[0]["backend"] == "ollama" and failed[0]["stage"] == "before_first_byte"
        used = g.wait_for("FallbackUsed")
        assert used[0] == {"from": "ollama", "to": "origin", "reason": "unreachable"}
        done = g.wait_for("OriginPassthrough")
        assert done[0]["fallback_from"] == "ollama" and done[0]["complete"] is True


def test_refused_without_fallback_is_a_502_in_the_client_shape(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(closed_port_url(), fake.url, local=", fallback: none"), tmp_path) as g:
        r = _post(g, _body("say hi"))
        assert r.status_code == 502
        assert r.json()["type"] == "error"
        assert r.json()["error"]["type"] == "api_error"
        assert "refused" in r.json()["error"]["message"]
        assert g.wait_for("UpstreamFailed")
        assert "FallbackUsed" not in g.types()
        r = httpx.post(
            g.url + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        assert r.status_code == 502
        assert r.json()["error"]["type"] == "server_error"


def test_503_from_local_falls_back_and_without_fallback_keeps_the_status(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        fake.set_fault(status=503, paths=("/api/chat",))
        r = _post(g, _body("hi", stream=True))
        assert r.status_code == 200
        assert "event: message_stop" in r.text
        assert g.wait_for("FallbackUsed")[0]["reason"] == "status 503"
    with GliderServer(_config(fake.url, fake.url, local=", fallback: none"), tmp_path) as g:
        fake.set_fault(status=503, paths=("/api/chat",))
        r = _post(g, _body("hi"))
        assert r.status_code == 503
        assert r.json()["type"] == "error"
        assert r.json()["error"]["message"] == "injected fault"


def test_429_from_the_cloud_passes_through_with_its_body(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        fake.set_fault(status=429, message="slow down", paths=("/v1/messages",))
        r = _post(g, _body("/cloud hi"))
        assert r.status_code == 429
        assert r.json() == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
        assert g.wait_for("UpstreamFailed")[0]["status"] == 429


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param({"delay": 3.0}, id="timeout-before-the-headers"),
        # The local server sent its headers, then nothing (a crash in prefill): the reply was held
        # until the first body byte, so the cloud still answers it.
        pytest.param({"stall": 3.0}, id="stall-after-the-headers"),
    ],
)
def test_a_local_server_that_goes_quiet_falls_back_to_the_cloud(
    fault: dict[str, float], fake: FakeUpstream, tmp_path: Path
) -> None:
    cfg = _config(fake.url, fake.url, local=", timeout: {read: 0.3}")
    with GliderServer(cfg, tmp_path) as g:
        fake.set_fault(paths=("/api/chat",), **fault)
        r = _post(g, _body("hi", stream=True))
        assert r.status_code == 200
        assert "event: message_stop" in r.text
        assert "fallback-from=ollama" in r.headers["x-glider-route"]
        assert g.wait_for("FallbackUsed")[0]["reason"] == "timeout"


def test_timeout_before_first_byte_without_fallback_is_a_504(fake: FakeUpstream, tmp_path: Path) -> None:
    cfg = _config(fake.url, fake.url, local=", timeout: {read: 0.3}, fallback: none")
    with GliderServer(cfg, tmp_path) as g:
        fake.set_fault(delay=3.0, paths=("/api/chat",))
        r = _post(g, _body("hi", stream=True))
        assert r.status_code == 504
        assert r.json()["error"]["type"] == "timeout_error"


def test_with_no_fallback_a_stream_starts_with_the_upstreams_headers(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    """Nothing could take over, so the reply starts when the upstream's does (as any streaming proxy's):
    a stall before the first event then ends the stream well-formed instead of turning into a 504."""
    with GliderServer(_config(fake.url, fake.url, origin=", timeout: {read: 0.3}"), tmp_path) as g:
        fake.set_fault(stall=3.0, paths=("/v1/messages",))
        r = _post(g, _body("/cloud hi", stream=True))
        assert r.status_code == 200
        assert r.headers["x-glider-route"].startswith("cloud; rule=explicit_cloud; backend=origin")
        events = _events(r.text)
        assert [e for e, _ in events] == ["error"]
        failed = g.wait_for("UpstreamFailed")
        assert failed[0]["stage"] == "mid_stream" and "timeout" in failed[0]["error"]
        assert g.wait_for("OriginPassthrough")[0]["complete"] is False


@pytest.mark.parametrize("fallback", ["", ", fallback: none"])
def test_a_translated_stream_is_whole_whether_its_reply_starts_early_or_not(
    fake: FakeUpstream, tmp_path: Path, fallback: str
) -> None:
    """Anthropic in, Ollama out: held for a possible fallback, or started with the upstream's headers
    (no fallback), the client gets the same well-formed stream."""
    with GliderServer(_config(fake.url, fake.url, local=fallback), tmp_path) as g:
        fake.set_reply(text="one two three")
        r = _post(g, _body("hi", stream=True))
        assert r.status_code == 200
        names = [e for e, _ in _events(r.text)]
        assert names[0] == "message_start" and names[-1] == "message_stop"
        text = "".join(
            str(d.get("delta", {}).get("text", ""))  # type: ignore[union-attr]
            for e, d in _events(r.text)
            if e == "content_block_delta"
        )
        assert text == "one two three"
        assert g.wait_for("FulfilledLocal")[0]["complete"] is True


def _events(text: str) -> list[tuple[str, dict[str, object]]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        name = next((ln[7:] for ln in lines if ln.startswith("event: ")), "")
        data = next((ln[6:] for ln in lines if ln.startswith("data: ")), "{}")
        out.append((name, json.loads(data)))
    return out


@pytest.mark.parametrize("word", ["/cloud", "/local"])
def test_stream_cut_midway_ends_well_formed(fake: FakeUpstream, tmp_path: Path, word: str) -> None:
    """After the first byte there is no fallback: the client gets an Anthropic `error` event."""
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        fake.set_fault(cut_after=3)
        r = _post(g, _body(f"{word} hi", stream=True))
        assert r.status_code == 200
        events = _events(r.text)
        assert events[0][0] == "message_start"
        assert events[-1][0] == "error"
        assert events[-1][1]["type"] == "error"
        assert "message_stop" not in [e for e, _ in events]
        failed = g.wait_for("UpstreamFailed")
        assert failed[0]["stage"] == "mid_stream"
        kind = "OriginPassthrough" if word == "/cloud" else "FulfilledLocal"
        assert g.wait_for(kind)[0]["complete"] is False


def test_stream_cut_midway_reaches_an_openai_client_as_an_error_chunk(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        fake.set_fault(cut_after=2)
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "/cloud hi"}]}
        r = httpx.post(
            g.url + "/v1/chat/completions", json=body, headers={"authorization": "Bearer k"}, timeout=30
        )
        assert r.status_code == 200
        last = [ln for ln in r.text.splitlines() if ln.startswith("data: ")][-1]
        assert "error" in json.loads(last[6:])


def test_client_disconnect_mid_stream_cancels_and_is_recorded(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        fake.set_reply(text="word " * 40, event_delay=0.2)
        with httpx.stream(
            "POST",
            g.url + "/v1/messages",
            json=_body("/cloud hi", stream=True),
            headers=ANTHROPIC_HEADERS,
            timeout=30,
        ) as r:
            it = r.iter_bytes()
            assert b"message_start" in next(it)
        done = g.wait_for("OriginPassthrough")
        assert done and done[0]["complete"] is False
        assert done[0]["client_disconnected"] is True


def test_client_disconnect_while_waiting_for_the_upstream_is_recorded(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        fake.set_fault(delay=5.0)
        payload = json.dumps(_body("/cloud hi")).encode()
        with socket.create_connection(("127.0.0.1", g.port)) as s:
            s.sendall(
                b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            deadline = time.monotonic() + 5
            while not fake.requests and time.monotonic() < deadline:
                time.sleep(0.02)
        done = g.wait_for("OriginPassthrough")
        assert done and done[0]["client_disconnected"] is True and done[0]["complete"] is False


def test_a_rule_fallback_wins_over_the_default(fake: FakeUpstream, tmp_path: Path) -> None:
    """`fallback: none` on the rule disables local -> cloud for requests that rule routes."""
    cfg = _config(closed_port_url(), fake.url) + (
        "routing:\n  rules:\n    - name: explicit_local\n      fallback: none\n"
    )
    with GliderServer(cfg, tmp_path) as g:
        r = _post(g, _body("/local hi"))
        assert r.status_code == 502
        assert "FallbackUsed" not in g.types()
        assert g.wait_for("UpstreamFailed")[0]["backend"] == "ollama"
