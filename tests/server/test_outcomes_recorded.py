"""Every request's real outcome is recorded: a gate refusal (RouteDecided with `refused`, its outcome, the
header), a request every backend failed (status and time, not "pending"), a stream the server cut short
(`cut`, not 200); and Glider's own errors that a retry cannot fix say so (`x-should-retry: false`, a 400
for Gemini clients) and name the rule and the backend, and that Glider is speaking."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-x", "gpt-x"], ollama_models=["fake-model"]),
]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}


def _config(local_url: str, cloud_url: str, local: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local_url}', model: fake-model{local}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
    )


def _ask(g: GliderServer, text: str, **extra: object) -> httpx.Response:
    body = {"model": "claude-x", "max_tokens": 200, "messages": [{"role": "user", "content": text}], **extra}
    return httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)


def _requests(g: GliderServer) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for _ in range(50):
        found = httpx.get(g.url + "/api/events/requests").json()["requests"]
        if found and all(r["status"] is not None for r in found):
            break
        time.sleep(0.1)
    return found


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def test_a_gate_refusal_is_recorded_like_any_other_outcome(fake: FakeUpstream, tmp_path: Path) -> None:
    cfg = _config(fake.url, fake.url, ", context_window: 1024, max_tokens: 128")
    with GliderServer(cfg, tmp_path, record=False) as g:
        r = _ask(g, "/local summarise this: " + "lorem ipsum dolor sit amet " * 400)
        assert r.status_code == 400, r.text
        assert r.headers["x-glider-route"] == "refused; rule=explicit_local; backend=ollama"
        assert r.headers["x-should-retry"] == "false"
        message = r.json()["error"]["message"]
        assert message.startswith("Glider (the router, not the model provider) refused this request")
        assert "explicit_local" in message and "window 1,024" in message
        (req,) = _requests(g)
    assert fake.requests == []
    assert (req["rule"], req["backend"], req["status"], req["outcome"]) == (
        "explicit_local",
        "ollama",
        400,
        "refused",
    )
    assert req["kind"] == "new_turn" and "window 1,024" in str(req["reason"])
    assert str(req["ask"]).startswith("/local summarise this")


def test_a_gate_refusal_reaches_the_recording_sink_with_its_turn(fake: FakeUpstream, tmp_path: Path) -> None:
    from glider_cli.commands.serve import refused_line

    cfg = _config(fake.url, fake.url, ", context_window: 1024, max_tokens: 128")
    lines: list[str] = []
    with GliderServer(
        cfg, tmp_path, refused_observer=lambda inb, exc: lines.append(refused_line(inb, exc))
    ) as g:
        assert _ask(g, "/local summarise this: " + "lorem ipsum " * 800).status_code == 400
        decided = g.wait_for("RouteDecided")
        outcome = g.wait_for("FulfilledLocal")
        turns = {tid for t, _, tid in g.events}
    assert len(decided) == 1 and "window 1,024" in decided[0]["refused"]
    assert outcome[0]["outcome"] == "refused" and outcome[0]["status"] == 400
    assert "TurnOpened" in g.types() and len(turns) == 1 and None not in turns
    (line,) = lines
    assert "anthropic" in line and "new_turn" in line and "explicit_local -> ollama - 400 refused" in line
    assert "window 1,024" in line


def test_a_request_every_backend_failed_is_recorded_failed_with_its_time(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with GliderServer(_config(closed_port_url(), closed_port_url()), tmp_path, record=False) as g:
        r = _ask(g, "say hi")
        assert r.status_code == 502, r.text
        (req,) = _requests(g)
    assert (req["status"], req["outcome"]) == (502, "failed")
    assert isinstance(req["ms"], float) and req["ms"] >= 0
    assert req["failures"] == 2


@pytest.mark.parametrize(
    ("path", "body", "status", "field"),
    [
        ("/v1/messages", {"model": "claude-x", "max_tokens": 8}, 502, "message"),
        ("/v1/chat/completions", {"model": "gpt-x"}, 502, "message"),
        ("/v1beta/models/gemini-x:generateContent", {}, 400, "message"),
        ("/v1/responses", {"model": "gpt-x"}, 400, "message"),
    ],
)
def test_a_loopback_server_that_is_not_there_is_not_worth_retrying(
    fake: FakeUpstream, tmp_path: Path, path: str, body: dict[str, object], status: int, field: str
) -> None:
    down = closed_port_url()
    with GliderServer(_config(down, fake.url, ", fallback: none"), tmp_path) as g:
        if path.startswith("/v1beta"):
            payload = {"contents": [{"role": "user", "parts": [{"text": "/local hi"}]}]}
            headers = {"x-goog-api-key": "k"}
        elif path == "/v1/responses":
            payload, headers = {**body, "input": "/local hi"}, HEADERS
        else:
            payload = {**body, "messages": [{"role": "user", "content": "/local hi"}]}
            headers = HEADERS
        r = httpx.post(g.url + path, json=payload, headers=headers, timeout=30)
    assert r.status_code == status, r.text
    assert r.headers["x-should-retry"] == "false"
    message = r.json()["error"][field]
    assert message.startswith("Glider (the router, not the model provider)")
    assert (
        "rule explicit_local" in message
        and "backend ollama" in message
        and "refused the connection" in message
    )
    assert f"nothing listens at {down}" in message
    assert fake.requests == []


def test_a_relayed_upstream_error_keeps_its_own_retry_signal(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        fake.set_fault(status=529)
        r = _ask(g, "/cloud say hi")
    assert r.status_code == 529 and "x-should-retry" not in r.headers
    assert "Glider" not in r.json()["error"]["message"]
