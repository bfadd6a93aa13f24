"""`glider serve` as a real process: loopback bind, answers, stops on SIGINT, bad config -> Error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from llama_server import free_port
from serve_process import ServeProcess

pytestmark = pytest.mark.live


def test_serve_runs_the_bundled_default_profile_on_loopback(tmp_path: Path) -> None:
    env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home")}
    with ServeProcess("--profile", "default", env=env) as served:
        assert served.health["config"] == "<bundled:default>"
        assert httpx.head(served.url + "/").status_code == 200
        # loopback only by default: the port is not open on another local address of this host
        with socket.socket() as s:
            s.settimeout(1)
            assert s.connect_ex(("127.0.0.2", served.port)) != 0
    assert served.returncode == 0
    assert f"listening on {served.url}" in served.err
    assert "ANTHROPIC_BASE_URL=" in served.err


def test_serve_reports_a_bad_config_before_listening(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("backends:\n  x: {type: gemini}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "serve", "--config", str(bad), "--port", str(free_port())],
        env={**os.environ, "GLIDER_HOME": str(tmp_path / "home")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ")
    assert "bad.yaml" in proc.stderr


def test_serve_prints_the_probe_and_a_line_per_reply_and_quiet_prints_neither(tmp_path: Path) -> None:
    from fake_upstream import FakeUpstream, closed_port_url

    with FakeUpstream(models=("claude-x",), ollama_models=("qwen-local",)) as fake:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            "extends: default\nbackends:\n"
            f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
            f"  spare: {{type: ollama, side: local, base_url: '{closed_port_url()}', model: m}}\n"
            f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n",
            encoding="utf-8",
        )
        body = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "/local hi"}]}
        outputs = []
        env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
        for quiet in (False, True):
            with ServeProcess("-c", str(cfg), *(["--quiet"] if quiet else []), env=env) as served:
                r = httpx.post(served.url + "/v1/messages", json=body, timeout=30)
                assert r.status_code == 200, r.text
                time.sleep(0.3)
            outputs.append(served.err)
    loud, quiet_err = outputs
    assert "listening on http://127.0.0.1:" in loud
    assert "probe ollama: models qwen-local:latest" in loud
    assert "probe spare: unreachable (connection refused)" in loud
    line = next(x for x in loud.splitlines() if "explicit_local -> ollama" in x)
    assert (
        "anthropic" in line and "new_turn" in line and "local" in line and " 200 " in line and " ms" in line
    )
    assert "listening on" not in quiet_err and "explicit_local" not in quiet_err


def test_serve_loads_neither_rich_nor_httpx_and_starts_no_worker(tmp_path: Path) -> None:
    # Issue 29: what `glider serve` does not need costs every start. Its output is plain text (no
    # Rich), the probe speaks aiohttp (no httpx), the bundled scripts run in-process (no worker).
    from fake_upstream import FakeUpstream

    with FakeUpstream(models=("claude-x",), ollama_models=("qwen-local",)) as fake:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            "extends: default\nbackends:\n"
            f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
            f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n",
            encoding="utf-8",
        )
        env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home"), "PYTHONPROFILEIMPORTTIME": "1"}
        with ServeProcess("-c", str(cfg), env=env) as served:
            body = {
                "model": "claude-x",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "/cloud hi"}],
            }
            r = httpx.post(served.url + "/v1/messages", json=body, timeout=30)
            assert r.status_code == 200, r.text
            kids = [p.read_text().split() for p in Path(f"/proc/{served.proc.pid}/task").glob("*/children")]
            assert not any(kids)
    err = served.err
    imported = {
        line.rsplit("|", 1)[1].strip() for line in err.splitlines() if line.startswith("import time:")
    }
    assert "glider_cli.server.app" in imported  # the import log is there
    assert not {"rich", "httpx"} & imported


# What a plain `glider serve` start must not import (issue 29's cold start): each is loaded on first use.
DEFERRED = (
    "glider_cli.proxy.strategies.orchestrator",  # a strategy's plan is served
    "glider_cli.delegate.operations",  # a workspace's turn is recorded, a delegate flag runs
    "glider_cli.delegate.allow_deny",
    "glider_cli.delegate.compaction",
    "glider_cli.delegate.permissions",  # `/allow`, `/deny`
    "glider_cli.cursor.listener",  # only with cursor.port
    "glider_cli.server.context_api",  # the dashboard's and the context API's first request
    "glider_cli.server.store_worker",
    "glider_cli.server.session_api",
    "glider_cli.server.dashboard_api",
    "glider_cli.server.ui.routes",  # the dashboard's pages
    "glider_cli.store.context_store",  # retention's first run, the context views
    "glider_cli.protocol.translate",  # the first call in another protocol than the client's
    "glider_cli.protocol.translate_stream",  # the first stream that is read
    "mcp",  # `/mcp`'s first request (server.mcp_http)
    "glider_cli.server.mcp_server",
    "glider_cli.app.mcp_tools",
)


def test_serve_answers_a_plain_request_without_loading_what_it_does_not_need(tmp_path: Path) -> None:
    from fake_upstream import FakeUpstream

    with FakeUpstream(models=("claude-x",)) as fake:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"extends: default\nbackends:\n  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n",
            encoding="utf-8",
        )
        env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home"), "PYTHONPROFILEIMPORTTIME": "1"}
        with ServeProcess("-c", str(cfg), env=env) as served:
            body = {
                "model": "claude-x",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "/cloud hi"}],
            }
            r = httpx.post(served.url + "/v1/messages", json=body, timeout=30)
            assert r.status_code == 200, r.text
            # The deferred routes still answer (and load their modules then).
            r = httpx.get(served.url + "/api/continuity", timeout=30)
            assert r.status_code != 404, r.text
    err = served.err
    lines = [line.rsplit("|", 1)[1].strip() for line in err.splitlines() if line.startswith("import time:")]
    assert "glider_cli.server.app" in lines  # the import log is there
    before = set(lines[: lines.index("glider_cli.server.dashboard_api")])
    assert sorted(set(DEFERRED) & before) == []


def test_serve_prints_a_line_for_each_config_a_hot_reload_swaps_in(tmp_path: Path) -> None:
    """Issue 39, point 8e: a successful hot reload printed nothing (a rejected one printed a warning)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("extends: default\n", encoding="utf-8")
    env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home")}
    with ServeProcess("-c", str(cfg), env=env) as served:
        time.sleep(1.5)  # the watcher's first look at the file is taken after start
        cfg.write_text(
            "extends: default\nrouting:\n  rules:\n"
            "    - {name: mine, priority: 90, trigger: {type: regex, pattern: mine},\n"
            "       action: {target: local}}\n",
            encoding="utf-8",
        )
        deadline = time.monotonic() + 30
        while True:
            rules = httpx.get(served.url + "/api/router/rules", timeout=10).json()["rules"]
            if any(r["name"] == "mine" for r in rules):
                break
            assert time.monotonic() < deadline, "the change was not reloaded"
            time.sleep(0.2)
        time.sleep(0.3)  # the line is written on the loop's next pass
    line = next((x for x in served.err.splitlines() if " reloaded " in x), None)
    assert line is not None, served.err
    assert line.endswith(f"reloaded {cfg} (watch): 12 rules in force")
