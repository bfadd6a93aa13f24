"""With telemetry off (the default), `glider serve` imports nothing of OpenTelemetry, neither at start
nor while it serves a request; `/healthz` says it is off. With it on but the SDK missing, the start
fails with what to install (issue 45)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from fake_upstream import FakeUpstream
from llama_server import free_port

pytestmark = [pytest.mark.live, pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"])]


def test_serve_with_telemetry_off_imports_no_opentelemetry(fake: FakeUpstream, tmp_path: Path) -> None:
    cfg = tmp_path / "glider.yaml"
    cfg.write_text(
        "extends: default\nbackends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake.url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n",
        encoding="utf-8",
    )
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    # -X importtime: every module the process imports, named on stderr.
    argv = [sys.executable, "-X", "importtime", "-m", "glider_cli", "serve", "--config", str(cfg)]
    proc = subprocess.Popen(
        [*argv, "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(url + "/healthz", timeout=2).json()
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "glider serve did not come up"
                time.sleep(0.1)
        assert health["telemetry"] == {"enabled": False}
        for text in ("say hi /local", "say hi /cloud"):
            body = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": text}]}
            r = httpx.post(url + "/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=30)
            assert r.status_code == 200, r.text
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    imported = [line for line in err.decode(errors="replace").splitlines() if "import time:" in line]
    assert any("glider_cli.proxy" in line for line in imported)  # the log does name what was imported
    assert not [line for line in imported if "opentelemetry" in line]


def test_on_without_the_sdk_says_what_to_install(tmp_path: Path) -> None:
    # A Python whose import system refuses `opentelemetry`: the extra is not installed.
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import sys\n"
        "class _No:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'opentelemetry' or name.startswith('opentelemetry.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, _No())\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = os.pathsep.join([str(shim), *filter(None, [env.get("PYTHONPATH")])])
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"
    argv = [sys.executable, "-m", "glider_cli", "serve", "--port", str(free_port())]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "telemetry is on but OpenTelemetry cannot be imported" in done.stderr
    assert "glider-cli[telemetry]" in done.stderr
