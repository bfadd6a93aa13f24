"""`glider serve` listens before its local backends have answered the first probe (`proxy.local_path`):
`/healthz` answers at once (the backends "not probed"), a request that comes during the probe waits
for it and is decided with what it found (a client that leaves meanwhile does not stop the probe), and
a shutdown during the probe stops it cleanly."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer
from silent_server import SilentServer

from fake_upstream import FakeUpstream
from serve_process import ServeProcess

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["fake-model"])]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
PROBE_TIMEOUT = 1.5  # the lifespan's probe timeout (per connect and per read)
LONG = "/local summarise this: " + "lorem ipsum dolor sit amet " * 400  # ~2,700 tokens


def _config(local_url: str, cloud_url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local_url}', model: fake-model}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
    )


def _ask(url: str, text: str) -> httpx.Response:
    body = {"model": "claude-x", "max_tokens": 200, "messages": [{"role": "user", "content": text}]}
    return httpx.post(url + "/v1/messages", json=body, headers=HEADERS, timeout=30)


def _ollama(health: dict[str, Any]) -> dict[str, Any]:
    """What /healthz says of the local backend `ollama`."""
    found: dict[str, Any] = {c["backend"]: c for c in health["local"]}["ollama"]
    return found


def _local(url: str) -> dict[str, Any]:
    return _ollama(httpx.get(url + "/healthz", timeout=10).json())


@contextlib.contextmanager
def _slow_ollama() -> Iterator[FakeUpstream]:
    """The cloud and Ollama in one fake, whose window (1,024) only the probe learns (`/api/show`) and
    whose first `/api/tags` (the probe's first request) waits 0.8 s."""
    with FakeUpstream(
        models=["claude-x"], ollama_models=["fake-model"], context_window=1024, ollama_show=True
    ) as both:
        both.set_fault(delay=0.8, paths=("/api/tags",), times=1)
        yield both


def _probed(url: str) -> dict[str, Any]:
    """What /healthz shows of the backend once the probe has landed."""
    end = time.monotonic() + 10
    while (found := _local(url))["source"] == "not probed" and time.monotonic() < end:
        time.sleep(0.02)
    return found


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def test_healthz_answers_while_a_silent_backend_is_probed_and_a_request_waits_for_the_probe(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with SilentServer() as silent:
        start = time.monotonic()
        with GliderServer(_config(silent.url, fake.url), tmp_path, probed=False) as g:
            during = _local(g.url)
            up = time.monotonic() - start
            r = _ask(g.url, "/cloud say hi")
            answered = time.monotonic() - start
            after = _local(g.url)
    # Listening (and /healthz answered) well before the probe could end; the probe not yet landed.
    assert up < 1.0, up
    assert during["source"] == "not probed" and during["reachable"] is None, during
    assert any(h.startswith(b"GET /api/tags") for h in silent.heads)  # the probe was asked
    # The request was answered (by the cloud), once the probe had given up.
    assert r.status_code == 200, r.text
    assert r.headers["x-glider-route"].startswith("cloud;")
    assert answered >= PROBE_TIMEOUT * 0.95, (up, answered)
    assert after["reachable"] is False and after["error"] == "timeout" and after["source"] == "probe", after
    assert fake.requests and all(q.path == "/v1/messages" for q in fake.requests)


def test_a_client_that_leaves_while_its_request_waits_does_not_stop_the_probe(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    # The endpoint cancels a request whose client left; the probe it waited for goes on.
    with SilentServer() as silent, GliderServer(_config(silent.url, fake.url), tmp_path, probed=False) as g:
        with pytest.raises(httpx.ReadTimeout):
            body = {
                "model": "claude-x",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "/cloud hi"}],
            }
            httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=httpx.Timeout(5, read=0.3))
        after = _probed(g.url)
        assert after["reachable"] is False and after["error"] == "timeout", after
        assert _ask(g.url, "/cloud say hi").status_code == 200
    assert [q.path for q in fake.requests] == ["/v1/messages"]  # the one that left was never sent


def test_a_request_during_a_slow_probe_is_gated_as_one_after_it(tmp_path: Path) -> None:
    # The window comes from the probe only (the config says none): a request decided before the probe
    # landed would see an unknown window, go to Ollama and meet its 400, then the cloud fallback.
    with _slow_ollama() as both, GliderServer(_config(both.url, both.url), tmp_path, probed=False) as g:
        during = _local(g.url)
        early = _ask(g.url, LONG)
        after = _probed(g.url)
        late = _ask(g.url, LONG)
    assert during["source"] == "not probed" and during["context_window"] is None, during
    assert early.status_code == late.status_code == 400, (early.text, late.text)
    assert early.headers["x-glider-route"] == late.headers["x-glider-route"]
    said = [r.json()["error"]["message"] for r in (early, late)]
    assert said[0] == said[1] and "explicit_local" in said[0] and "> window 1,024" in said[0], said
    assert both.requests == []  # nothing was sent to Ollama or to the cloud
    assert after["source"] == "probe" and after["context_window"] == 1024, after
    assert [p.path for p in both.probes] == ["/api/tags", "/api/show"]


def test_serve_stopped_during_the_probe_exits_cleanly(fake: FakeUpstream, tmp_path: Path) -> None:
    with SilentServer() as silent:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(_config(silent.url, fake.url), encoding="utf-8")
        env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home")}
        with ServeProcess("-c", str(cfg), env=env) as served:
            during = _ollama(served.health)
            stopping = time.monotonic()
        stopped = time.monotonic() - stopping
    err = served.err
    assert during["source"] == "not probed", during  # stopped while the probe was in flight
    assert served.returncode == 0, err
    for bad in ("Traceback", "Task was destroyed", "Exception", "Error", "CancelledError", "never retrieved"):
        assert bad not in err, err
    assert "probe ollama" not in err  # a probe that was stopped prints nothing
    assert stopped < PROBE_TIMEOUT, stopped  # it did not wait for the probe to time out
    assert not (tmp_path / "home" / "run" / "probes.json").exists()  # nothing half-written


def _health_until_probed(url: str) -> tuple[list[bool], dict[str, Any]]:
    """Every `probing` /healthz said until it said false, and that last answer."""
    seen: list[bool] = []
    end = time.monotonic() + 10
    while True:
        health = httpx.get(url + "/healthz", timeout=10).json()
        seen.append(health["probing"])
        if health["probing"] is False or time.monotonic() > end:
            return seen, health


def test_healthz_says_probing_until_a_probe_that_times_out_is_over(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with SilentServer() as silent:
        start = time.monotonic()
        with GliderServer(_config(silent.url, fake.url), tmp_path, probed=False) as g:
            seen, health = _health_until_probed(g.url)
            over = time.monotonic() - start
            again = httpx.get(g.url + "/healthz", timeout=10).json()
    assert seen[0] is True and seen[-1] is False, seen  # in flight when the server first answered
    assert over >= PROBE_TIMEOUT * 0.95, over  # false only once the probe had given up
    # The answer that says the probe is over carries what it found; and it stays false.
    found = _ollama(health)
    assert found["reachable"] is False and found["error"] == "timeout" and found["source"] == "probe", found
    assert again["probing"] is False
    for key in ("status", "version", "config", "profile", "backends", "local"):  # the rest as it was
        assert key in health, health


def test_healthz_says_probing_until_a_slow_probe_answers(tmp_path: Path) -> None:
    with _slow_ollama() as both, GliderServer(_config(both.url, both.url), tmp_path, probed=False) as g:
        during = httpx.get(g.url + "/healthz", timeout=10).json()
        seen, health = _health_until_probed(g.url)
    assert during["probing"] is True, during
    assert _ollama(during)["source"] == "not probed", during
    assert seen[-1] is False, seen
    found = _ollama(health)
    assert found["reachable"] is True and found["source"] == "probe", found
    assert found["context_window"] == 1024 and found["models"] == ["fake-model:latest"], found


def test_healthz_says_not_probing_once_serve_has_probed(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:  # entered once the probe is over
        health = httpx.get(g.url + "/healthz", timeout=10).json()
    assert health["probing"] is False, health
    assert _ollama(health)["source"] == "probe", health
