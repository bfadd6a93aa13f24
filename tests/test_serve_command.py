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
