"""`glider doctor` shows a backend's real state (issue 39, point 8a): after `origin`'s requests failed
(a name that does not resolve) its status said `ok` and only the breaker column said "2/5 failures".
A cloud backend is never probed, so what the running `glider serve` saw of its last requests is its
state: failing (and unusable: exit 1) while the last one failed, ok again once one was answered."""

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
BODY = {
    "model": "claude-x",
    "max_tokens": 32,
    "messages": [{"role": "user", "content": "please say hi /cloud"}],
}


def _config(ollama: str, origin: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{ollama}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{origin}'}}\n"
    )


def _doctor(cfg: Path) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    result = CliRunner().invoke(app, ["doctor", "-c", str(cfg), "--json"])
    table = CliRunner().invoke(app, ["doctor", "-c", str(cfg)], env={"COLUMNS": "300"}).stdout
    return result.exit_code, json.loads(result.stdout), table


def _origin(report: dict) -> dict:  # type: ignore[type-arg]
    return next(b for b in report["backends"] if b["name"] == "origin")  # type: ignore[no-any-return]


def test_origin_whose_name_does_not_resolve_is_failing_not_ok(fake: FakeUpstream, tmp_path: Path) -> None:
    cfg = _config(fake.url, "http://glider-doctor-test.invalid")  # .invalid never resolves (RFC 6761)
    with GliderServer(cfg, tmp_path) as g:
        doctor_cfg = tmp_path / "doctor.yaml"
        doctor_cfg.write_text(cfg + f"server: {{port: {g.port}}}\n")
        code, before, _ = _doctor(doctor_cfg)
        assert (code, _origin(before)["status"], _origin(before)["usable"]) == (0, "ok", True)
        for _ in range(2):
            r = httpx.post(g.url + "/v1/messages", json=BODY, headers=HEADERS, timeout=30)
            assert r.status_code >= 500
        code, after, table = _doctor(doctor_cfg)
        origin = _origin(after)
        assert origin["breaker"]["state"] == "closed" and origin["breaker"]["failures"] == 2
        assert origin["status"].startswith("failing per glider serve: ")
        assert "2 failed in the last 60 s" in origin["status"]
        assert origin["usable"] is False and code == 1
        row = next(line for line in table.splitlines() if "origin" in line and "cloud" in line)
        assert "failing per glider serve" in row and " ok " not in row


def test_a_backend_answered_after_failures_is_ok_again(fake: FakeUpstream, tmp_path: Path) -> None:
    fake.reset()
    fake.set_fault(status=502, message="bad gateway", paths=("/v1/messages",), times=1)
    cfg = _config(fake.url, fake.url)
    with GliderServer(cfg, tmp_path) as g:
        doctor_cfg = tmp_path / "doctor.yaml"
        doctor_cfg.write_text(cfg + f"server: {{port: {g.port}}}\n")
        first = httpx.post(g.url + "/v1/messages", json=BODY, headers=HEADERS, timeout=30)
        assert first.status_code == 502
        code, failed, _ = _doctor(doctor_cfg)
        assert code == 1 and _origin(failed)["status"].startswith("failing per glider serve: answered 502")
        second = httpx.post(g.url + "/v1/messages", json=BODY, headers=HEADERS, timeout=30)
        assert second.status_code == 200, second.text
        code, after, _ = _doctor(doctor_cfg)
        origin = _origin(after)
        assert origin["breaker"]["last_attempt"] == "ok" and origin["breaker"]["failures"] == 1
        assert (code, origin["usable"]) == (0, True)
        assert origin["status"] == "ok (answered since 1 failed in the last 60 s)"
