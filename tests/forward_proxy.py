"""A real forward proxy on 127.0.0.1 for tests: proxy.py (PyPI) in a subprocess, with the plugin in
forward_proxy_plugin.py. Host names under `.glider.test` resolve only inside the proxy (to 127.0.0.1),
so a backend at `upstream.glider.test` is reachable through the proxy and nowhere else; `.requests()`
lists what the proxy forwarded (method, host, port, path), read from the proxy's own log.

Usage:
    with ForwardProxy(tmp_path) as proxy:
        ... HTTPS_PROXY=proxy.url ...
        assert proxy.requests()[-1]["host"] == "upstream.glider.test"
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_TESTS = Path(__file__).resolve().parent


class ForwardProxy:
    def __init__(self, workdir: Path, *, basic_auth: str | None = None) -> None:
        self._dir = workdir
        self._log = workdir / "proxy-requests.jsonl"
        self._basic_auth = basic_auth
        self._proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[dict[str, Any]]:
        if not self._log.exists():
            return []
        return [json.loads(line) for line in self._log.read_text().splitlines() if line]

    def __enter__(self) -> ForwardProxy:
        port_file = self._dir / "proxy.port"
        args = [
            sys.executable, "-m", "proxy",
            "--hostname", "127.0.0.1", "--port", "0", "--port-file", str(port_file),
            "--num-acceptors", "1", "--num-workers", "1", "--log-level", "WARNING",
            "--plugins", "forward_proxy_plugin.RecordingPlugin",
        ]  # fmt: skip
        if self._basic_auth:
            args += ["--basic-auth", self._basic_auth]
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_TESTS), env.get("PYTHONPATH")]))
        env["GLIDER_TEST_PROXY_LOG"] = str(self._log)
        self._proc = subprocess.Popen(args, env=env, cwd=self._dir, start_new_session=True)
        end = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > end:
                self._stop()
                raise RuntimeError("proxy.py did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        return self

    def _stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            # proxy.py runs its acceptors in child processes of its own session: end that group.
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._proc = None

    def __exit__(self, *exc: object) -> None:
        self._stop()
