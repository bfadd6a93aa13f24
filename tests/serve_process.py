"""`ServeProcess`: `glider serve` as a real process, for the tests that need the command itself (its
signals, its exit, what it prints) rather than the app (`tests/server/glider_harness.py`).

    with ServeProcess("--config", str(cfg), env=env) as served:
        served.health      # the first /healthz answer's JSON (the server is up)
        served.proc        # the process (send it SIGHUP, poll it)
    served.returncode, served.err   # after SIGINT on leaving the block
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from llama_server import free_port


class ServeProcess:
    """`python -m glider_cli [*before] serve --port P *args`, started on entering and waited for until
    /healthz answers; on leaving, SIGINT and the wait for its exit (stdout and stderr kept)."""

    def __init__(self, *args: str, before: Sequence[str] = (), env: Mapping[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.argv = [sys.executable, "-m", "glider_cli", *before, "serve", "--port", str(self.port), *args]
        self.env = None if env is None else dict(env)
        self.health: dict[str, Any] = {}
        self.out = self.err = ""
        self._collected = False

    def __enter__(self) -> ServeProcess:
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            self.health = self._first_health()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _first_health(self) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(self.url + "/healthz", timeout=1)
            except httpx.TransportError:
                if self.proc.poll() is not None:
                    self._collect()
                    raise AssertionError(f"glider serve exited {self.proc.returncode}: {self.err}") from None
                assert time.monotonic() < deadline, "glider serve did not come up"
                time.sleep(0.02)
                continue
            assert r.status_code == 200, r.text
            found = r.json()
            assert isinstance(found, dict)
            return found

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def _collect(self) -> None:
        if not self._collected:
            self._collected = True
            self.out, self.err = self.proc.communicate(timeout=30)

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        self._collect()
