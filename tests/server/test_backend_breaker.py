"""A backend that keeps failing is skipped for a cool-down (`backends.breaker`), through the real app:
a hung local server (accepts, reads, never answers) costs the first requests their read timeout, then
the breaker opens and the next ones go straight to the fallback; with no fallback the client gets
its protocol's 503 with `retry-after`; after the cool-down one request tries the backend again and its
success closes the breaker."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer
from silent_server import SilentServer

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
BODY = {"model": "claude-x", "max_tokens": 32, "messages": [{"role": "user", "content": "say hi"}]}
READ_TIMEOUT = 2.0


def _config(local_url: str, cloud_url: str, *, breaker: str, fallback: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local_url}', model: qwen-local,\n"
        f"           timeout: {{connect: 2, read: {READ_TIMEOUT}}}, breaker: {breaker}{fallback}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
    )


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _post(g: GliderServer) -> tuple[httpx.Response, float]:
    t = time.monotonic()
    r = httpx.post(g.url + "/v1/messages", json=BODY, headers=HEADERS, timeout=30)
    return r, time.monotonic() - t


def test_a_hung_local_backend_costs_its_timeout_only_until_the_breaker_opens(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    breaker = "{failures: 2, window: 60, cooldown: 120}"
    with SilentServer() as hung, GliderServer(_config(hung.url, fake.url, breaker=breaker), tmp_path) as g:
        took = []
        for _ in range(5):
            r, seconds = _post(g)
            assert r.status_code == 200, r.text
            assert r.json()["content"][0]["text"].startswith("hello from fake anthropic")
            assert "backend=origin" in r.headers["x-glider-route"]
            assert "fallback-from=ollama" in r.headers["x-glider-route"]
            took.append(seconds)
        # The first two waited for the read timeout; the breaker opened; the rest never tried ollama.
        assert min(took[:2]) >= READ_TIMEOUT * 0.9, took
        assert max(took[2:]) < READ_TIMEOUT / 2, took
        assert hung.chats == 2
        opened = g.wait_for("BackendOpened")
        assert len(opened) == 1
        assert opened[0]["backend"] == "ollama" and opened[0]["failures"] == 2
        assert opened[0]["error"] == "timeout" and opened[0]["trial"] is False
        failed = g.wait_for("UpstreamFailed", 5)
        assert [f["stage"] for f in failed] == ["before_first_byte"] * 2 + ["breaker_open"] * 3
        assert "circuit breaker is open" in failed[-1]["error"]
        reasons = [f["reason"] for f in g.wait_for("FallbackUsed", 5)]
        assert reasons == ["timeout", "timeout", "breaker open", "breaker open", "breaker open"]
        health = httpx.get(g.url + "/healthz", timeout=10).json()
        state = {b["name"]: b["breaker"] for b in health["backends"]}
        assert state["ollama"]["state"] == "open"
        assert state["ollama"]["last_error"] == "timeout"
        assert 100 < state["ollama"]["retry_in"] <= 120
        assert state["origin"]["state"] == "closed"


def test_an_open_backend_without_a_fallback_answers_503_with_retry_after(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    breaker = "{failures: 1, cooldown: 90}"
    cfg = _config(fake.url, fake.url, breaker=breaker, fallback=", fallback: none")
    with SilentServer() as hung, GliderServer(cfg.replace(fake.url, hung.url, 1), tmp_path) as g:
        r, first = _post(g)
        assert r.status_code == 504, r.text
        r, second = _post(g)
        assert second < READ_TIMEOUT / 2 <= first
        assert r.status_code == 503
        assert r.json()["type"] == "error"
        assert "circuit breaker is open" in r.json()["error"]["message"]
        assert 80 <= int(r.headers["retry-after"]) <= 90
        assert "backend=ollama" in r.headers["x-glider-route"]
        assert hung.chats == 1


def test_after_the_cool_down_one_request_tries_again_and_its_success_closes_it(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.set_fault(status=500, message="overloaded", paths=("/api/chat",), times=2)
    breaker = "{failures: 2, window: 30, cooldown: 1}"
    with GliderServer(_config(fake.url, fake.url, breaker=breaker), tmp_path) as g:
        for _ in range(2):
            r, _ = _post(g)
            assert "fallback-from=ollama" in r.headers["x-glider-route"]
        assert g.wait_for("BackendOpened")[0]["error"] == "answered 500"
        r, _ = _post(g)  # within the cool-down: skipped
        assert "fallback-from=ollama" in r.headers["x-glider-route"]
        chats = len([q for q in fake.requests if q.path == "/api/chat"])
        assert chats == 2
        time.sleep(1.2)
        r, _ = _post(g)  # the trial: ollama answers again
        assert r.status_code == 200
        assert "backend=ollama" in r.headers["x-glider-route"]
        assert "fallback-from" not in r.headers["x-glider-route"]
        closed = g.wait_for("BackendClosed")
        assert closed[0]["backend"] == "ollama" and closed[0]["by"] == "request"
        assert closed[0]["open_s"] >= 1
        health = httpx.get(g.url + "/healthz", timeout=10).json()
        assert {b["name"]: b["breaker"]["state"] for b in health["backends"]}["ollama"] == "closed"


def test_breaker_false_never_skips_the_backend(fake: FakeUpstream, tmp_path: Path) -> None:
    fake.set_fault(status=500, message="overloaded", paths=("/api/chat",), times=6)
    with GliderServer(_config(fake.url, fake.url, breaker="false"), tmp_path) as g:
        for _ in range(6):
            r, _ = _post(g)
            assert "fallback-from=ollama" in r.headers["x-glider-route"]
        assert len([q for q in fake.requests if q.path == "/api/chat"]) == 6
        assert "BackendOpened" not in g.types()
        health = httpx.get(g.url + "/healthz", timeout=10).json()
        assert {b["name"]: b["breaker"] for b in health["backends"]}["ollama"] is None
