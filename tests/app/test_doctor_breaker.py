"""`glider doctor` shows each backend's circuit breaker as the running `glider serve` reports it on
the config's address (its `/healthz`), and says when no serve answers there."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from fake_upstream import FakeUpstream
from glider_cli.cli import app
from server.glider_harness import GliderServer

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
BODY = {"model": "claude-x", "max_tokens": 32, "messages": [{"role": "user", "content": "/local say hi"}]}


def _config(url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{url}', model: qwen-local,\n"
        "           breaker: {failures: 1, cooldown: 300}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
    )


def test_glider_doctor_shows_the_breakers_of_the_running_serve(fake: FakeUpstream, tmp_path: Path) -> None:
    def doctor_json(*args: str) -> dict:  # type: ignore[type-arg]
        result = CliRunner().invoke(app, [*args, "--json"])
        assert result.stdout.startswith("{"), (result.output, result.exception)
        return json.loads(result.stdout)  # type: ignore[no-any-return]

    fake.reset()
    fake.set_fault(status=502, message="bad gateway", paths=("/api/chat",), times=1)
    cfg = _config(fake.url)
    with GliderServer(cfg, tmp_path) as g:
        doctor_cfg = tmp_path / "doctor.yaml"
        doctor_cfg.write_text(cfg + f"server: {{port: {g.port}}}\n")
        args = ["doctor", "-c", str(doctor_cfg)]
        before = doctor_json(*args)
        assert before["serve"] == g.url
        assert {b["name"]: b["breaker"]["state"] for b in before["backends"]} == {
            "ollama": "closed",
            "origin": "closed",
        }
        httpx.post(g.url + "/v1/messages", json=BODY, headers=HEADERS, timeout=30)
        g.wait_for("BackendOpened")
        after = doctor_json(*args)
        ollama = next(b for b in after["backends"] if b["name"] == "ollama")
        assert ollama["breaker"]["state"] == "open" and ollama["breaker"]["last_error"] == "answered 502"
        assert ollama["usable"] is True  # the probe reaches it; the breaker says requests skip it
        text = CliRunner().invoke(app, args, env={"COLUMNS": "250"}).stdout
        assert "open, tried again in" in text and "answered 502" in text
    alone = doctor_json(*args)
    assert alone["serve"] is None
    assert all(b["breaker"] is None for b in alone["backends"])
