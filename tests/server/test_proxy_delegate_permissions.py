"""The permission relay through a live Glider: a `/claude` turn whose (fake) Claude Code was refused a
command answers with what was refused and a token; the person's next typed `/allow <token>` resumes
the same run with exactly that allowed; the token works once; a quoted `/allow` is no command."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import anthropic
import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from fixtures.fake_agents.install import install_fake_agents, path_with, runs
from glider_cli.delegate import continuity
from glider_cli.paths import resolve

pytestmark = pytest.mark.live

PUSH = {"tool_name": "Bash", "tool_input": {"command": "git push origin main"}}


def test_allow_resumes_the_refused_run_once(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    env = {
        **os.environ,
        "PATH": path_with(install_fake_agents(tmp_path / "fake-bin")),
        "FAKE_AGENT_LOG": str(tmp_path / "fake-log"),
        "FAKE_AGENT_MODE": "refuse",
        "FAKE_AGENT_REFUSE": json.dumps([PUSH]),
        "FAKE_AGENT_REPLY": "I could not push",
        "GLIDER_HOME": str(tmp_path / "home"),
    }
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env) as g:
        client = anthropic.Anthropic(
            base_url=g.url, api_key="k", max_retries=0, default_headers={"x-glider-workspace": str(ws)}
        )

        def say(text: str) -> tuple[str, str]:
            raw = client.messages.with_raw_response.create(
                model="m", max_tokens=32, messages=[{"role": "user", "content": text}]
            )
            block = raw.parse().content[0]
            assert block.type == "text"
            return block.text, raw.headers["x-glider-route"]

        text, _ = say("push the release /claude")
        assert "claude was refused permission for:\n  - Bash: git push origin main" in text
        token = re.search(r"`/allow ([0-9a-f]{12})`", text).group(1)  # type: ignore[union-attr]
        assert token not in json.dumps([d for _, d, _ in g.events])  # the token is never logged
        # Quoted, it is a mention, not a command: routed as any message (the fake backend is down).
        body = {
            "model": "m",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": f"is `/allow {token}` ok?"}],
        }
        headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-glider-workspace": str(ws)}
        r = httpx.post(g.url + "/v1/messages", json=body, headers=headers, timeout=30)
        assert r.status_code == 502 and not r.headers["x-glider-route"].startswith("delegate")
        assert len(runs(tmp_path / "fake-log")) == 1
        text, route = say(f"/allow {token}")
        assert route == "delegate; rule=permission; backend=claude"
        assert text.startswith("resumed with Bash(git push origin main)")
        argv = runs(tmp_path / "fake-log")[-1]["argv"]
        assert argv[:4] == ["--resume", "fake-session-1", "--allowedTools", "Bash(git push origin main)"]
        text, _ = say(f"/allow {token}")
        assert "no refused run waits for this token" in text and len(runs(tmp_path / "fake-log")) == 2
    record = continuity.read(resolve({"GLIDER_HOME": env["GLIDER_HOME"]}), ws)
    delegates = [e.text for e in record.entries if e.kind == "delegate"]
    assert "Refused by its permissions: Bash: git push origin main" in delegates[0]
    assert "Allowed by the person for this run: Bash(git push origin main)" in delegates[1]


def test_deny_through_the_proxy(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    env = {
        **os.environ,
        "PATH": path_with(install_fake_agents(tmp_path / "fake-bin")),
        "FAKE_AGENT_LOG": str(tmp_path / "fake-log"),
        "FAKE_AGENT_MODE": "refuse",
        "FAKE_AGENT_REFUSE": json.dumps([PUSH]),
        "GLIDER_HOME": str(tmp_path / "home"),
    }
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env) as g:
        client = anthropic.Anthropic(
            base_url=g.url, api_key="k", max_retries=0, default_headers={"x-glider-workspace": str(ws)}
        )
        first = client.messages.create(
            model="m", max_tokens=32, messages=[{"role": "user", "content": "push /claude"}]
        )
        assert first.content[0].type == "text"
        token = re.search(r"`/deny ([0-9a-f]{12})`", first.content[0].text).group(1)  # type: ignore[union-attr]
        out = client.messages.create(
            model="m", max_tokens=32, messages=[{"role": "user", "content": f"no. /deny {token}"}]
        )
        assert out.content[0].type == "text"
        assert out.content[0].text == "[glider] denied: claude was not allowed Bash: git push origin main"
        assert len(runs(tmp_path / "fake-log")) == 1
    record = continuity.read(resolve({"GLIDER_HOME": env["GLIDER_HOME"]}), ws)
    assert any("Denied by the person: Bash: git push origin main" in e.text for e in record.entries)
