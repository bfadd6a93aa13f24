"""`glider serve` as a real process: loopback bind, answers, stops on SIGINT, bad config -> Error."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.live


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def test_serve_runs_the_bundled_default_profile_on_loopback(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "glider_cli", "serve", "--profile", "default", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "glider serve did not come up"
                time.sleep(0.1)
        assert r.status_code == 200 and r.json()["config"] == "<bundled:default>"
        assert httpx.head(f"http://127.0.0.1:{port}/").status_code == 200
        # loopback only by default: the port is not open on another local address of this host
        with socket.socket() as s:
            s.settimeout(1)
            assert s.connect_ex(("127.0.0.2", port)) != 0
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert f"listening on http://127.0.0.1:{port}" in err
    assert "ANTHROPIC_BASE_URL=" in err


def test_serve_reports_a_bad_config_before_listening(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("backends:\n  x: {type: gemini}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "serve", "--config", str(bad), "--port", str(_free_port())],
        env={**os.environ, "GLIDER_HOME": str(tmp_path / "home")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ")
    assert "bad.yaml" in proc.stderr


def _start(args: list[str], tmp_path: Path, port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "glider_cli", "serve", "--port", str(port), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_up(proc: subprocess.Popen[str], port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return
        except httpx.TransportError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "glider serve did not come up"
            time.sleep(0.1)


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
        for quiet in (False, True):
            port = _free_port()
            proc = _start(["-c", str(cfg), *(["--quiet"] if quiet else [])], tmp_path, port)
            try:
                _wait_up(proc, port)
                r = httpx.post(f"http://127.0.0.1:{port}/v1/messages", json=body, timeout=30)
                assert r.status_code == 200, r.text
                time.sleep(0.3)
            finally:
                proc.send_signal(signal.SIGINT)
                _out, err = proc.communicate(timeout=30)
            outputs.append(err)
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
        port = _free_port()
        env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home"), "PYTHONPROFILEIMPORTTIME": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "glider_cli", "serve", "--port", str(port), "-c", str(cfg)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_up(proc, port)
            body = {
                "model": "claude-x",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "/cloud hi"}],
            }
            r = httpx.post(f"http://127.0.0.1:{port}/v1/messages", json=body, timeout=30)
            assert r.status_code == 200, r.text
            kids = [p.read_text().split() for p in Path(f"/proc/{proc.pid}/task").glob("*/children")]
            assert not any(kids)
        finally:
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=30)
    imported = {
        line.rsplit("|", 1)[1].strip() for line in err.splitlines() if line.startswith("import time:")
    }
    assert "glider_cli.server.app" in imported  # the import log is there
    assert not {"rich", "httpx"} & imported


# What a plain `glider serve` start must not import (issue 29's cold start): each is loaded on first use.
DEFERRED = (
    "glider_cli.proxy.strategies.runner",  # a strategy's plan is served
    "glider_cli.delegate.service",  # a workspace's turn is recorded, a delegate flag runs
    "glider_cli.delegate.relay",
    "glider_cli.delegate.compaction",
    "glider_cli.delegate.permissions",  # `/allow`, `/deny`
    "glider_cli.cursor.service",  # only with cursor.port
    "glider_cli.server.context_api",  # the dashboard's and the context API's first request
    "glider_cli.server.store_worker",
    "glider_cli.server.session_api",
    "glider_cli.server.dashboard_api",
    "glider_cli.server.ui.routes",  # the dashboard's pages
    "glider_cli.store.service",  # retention's first run, the context views
    "glider_cli.protocol.translate",  # the first call in another protocol than the client's
    "glider_cli.protocol.translate_stream",  # the first stream that is read
)


def test_serve_answers_a_plain_request_without_loading_what_it_does_not_need(tmp_path: Path) -> None:
    from fake_upstream import FakeUpstream

    with FakeUpstream(models=("claude-x",)) as fake:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"extends: default\nbackends:\n  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n",
            encoding="utf-8",
        )
        port = _free_port()
        env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home"), "PYTHONPROFILEIMPORTTIME": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "glider_cli", "serve", "--port", str(port), "-c", str(cfg)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_up(proc, port)
            body = {
                "model": "claude-x",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "/cloud hi"}],
            }
            r = httpx.post(f"http://127.0.0.1:{port}/v1/messages", json=body, timeout=30)
            assert r.status_code == 200, r.text
            # The deferred routes still answer (and load their modules then).
            r = httpx.get(f"http://127.0.0.1:{port}/api/continuity", timeout=30)
            assert r.status_code != 404, r.text
        finally:
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=30)
    lines = [line.rsplit("|", 1)[1].strip() for line in err.splitlines() if line.startswith("import time:")]
    assert "glider_cli.server.app" in lines  # the import log is there
    before = set(lines[: lines.index("glider_cli.server.dashboard_api")])
    assert sorted(set(DEFERRED) & before) == []
