"""What `glider serve` knows of its local backends: the probe at start (in /healthz), Ollama told the
window (`options.num_ctx`), and the capability gate refusing what does not fit."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["fake-model"])]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}


def _config(url: str, local: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{url}', model: fake-model{local}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
    )


def _ask(g: GliderServer, text: str) -> httpx.Response:
    body = {"model": "claude-x", "max_tokens": 200, "messages": [{"role": "user", "content": text}]}
    return httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def test_healthz_carries_what_the_probe_found(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, ", context_window: 4096"), tmp_path) as g:
        health = httpx.get(g.url + "/healthz").json()
    local = {c["backend"]: c for c in health["local"]}
    assert local["ollama"]["reachable"] is True
    assert local["ollama"]["models"] == ["fake-model:latest"]
    assert local["ollama"]["context_window"] == 4096


def test_ollama_is_told_the_window_and_a_capped_output(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, ", context_window: 4096, max_tokens: 128"), tmp_path) as g:
        r = _ask(g, "/local say hi")
    assert r.status_code == 200, r.text
    sent = fake.requests[-1]
    assert sent.path == "/api/chat"
    assert sent.body["options"]["num_ctx"] == 4096 and sent.body["options"]["num_predict"] == 128


def test_an_explicit_local_turn_that_does_not_fit_gets_an_error_naming_the_gate(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with GliderServer(_config(fake.url, ", context_window: 1024, max_tokens: 128"), tmp_path) as g:
        r = _ask(g, "/local summarise this: " + "lorem ipsum dolor sit amet " * 400)
        assert r.status_code == 400
        err = r.json()["error"]
        assert err["type"] == "invalid_request_error"
        assert "explicit_local" in err["message"] and "> window 1,024" in err["message"]
        assert "/cloud" in err["message"]
        assert fake.requests == []  # nothing was sent anywhere


def test_a_local_rule_that_does_not_fit_lets_the_next_rule_decide(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, ", context_window: 1024, max_tokens: 128"), tmp_path) as g:
        r = _ask(g, "please refactor this module: " + "x = 1\n" * 700)
        assert r.status_code == 200, r.text
        assert r.headers["x-glider-route"].startswith("cloud;")
        decided = g.wait_for("RouteDecided")[-1]
        gated = [t for t in decided["trace"] if "cannot take it" in t["reason"]]
        assert gated and "window 1,024" in gated[0]["reason"]


def test_serve_keeps_its_start_probe_for_lint(fake: FakeUpstream, tmp_path: Path) -> None:
    from glider_cli.backends import probe_cache

    with GliderServer(_config(fake.url), tmp_path) as g:
        assert httpx.get(g.url + "/healthz").status_code == 200
    known = probe_cache.load(tmp_path / "home" / "run" / probe_cache.FILENAME)
    assert known["ollama"].models == ("fake-model:latest",) and known["ollama"].applies(fake.url)


PROBE_ONLY = """
import asyncio, sys
from glider_cli.config.load import load_config
from glider_cli.server.app import create_app

env = {"GLIDER_HOME": sys.argv[2]}
app = create_app(load_config(config=sys.argv[1], environ=env), environ=env)
cap = asyncio.run(app.state.proxy.local.probe(timeout=2))["ollama"]
print(cap.reachable, cap.error, ",".join(cap.models or ()), cap.context_window, "httpx" in sys.modules)
"""


@pytest.mark.parametrize("where", ["fake", "closed"])
def test_the_start_up_probe_answers_without_loading_httpx(
    fake: FakeUpstream, tmp_path: Path, where: str
) -> None:
    # `glider serve` probes its local backends at start (beside the server): on the HTTP client it has loaded
    # already (aiohttp), not on httpx, whose import cost ~50 ms of every start (issue 29).
    import subprocess
    import sys

    from fake_upstream import closed_port_url

    url = fake.url if where == "fake" else closed_port_url()
    (tmp_path / "c.yaml").write_text(_config(url, ", context_window: 4096"))
    args = [sys.executable, "-c", PROBE_ONLY, str(tmp_path / "c.yaml"), str(tmp_path / "home")]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    if where == "fake":
        assert out.stdout.split() == ["True", "None", "fake-model:latest", "4096", "False"]
    else:
        assert out.stdout.startswith("False connection refused ") and out.stdout.split()[-1] == "False"
