"""A real OTLP receiver for the telemetry tests: Arize Phoenix (`arize-phoenix` from PyPI) with its
embedded SQLite store, bound to 127.0.0.1.

Where it comes from: `.ci/run` installs it into a venv of its own (`<repo>/.ci/phoenix-venv`: its
fastapi/starlette/protobuf pins must not reach the project's .venv). The tests read
`GLIDER_TEST_PHOENIX` (the `phoenix` executable) when set, else look in `.ci/phoenix-venv`; `find()`
says why it cannot be used when it cannot (the tests skip with that reason, and only then).

    with PhoenixServer(executable, workdir) as px:   # `phoenix serve` on free ports; ready on /healthz
        px.url               # http://127.0.0.1:PORT: OTLP/HTTP at /v1/traces, its REST API at /v1/...
        px.grpc_port         # its OTLP/gRPC receiver
        px.spans("default")  # the project's spans, read back through Phoenix's own REST API
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from llama_server import free_port

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".ci" / "phoenix-venv"


def find(environ: dict[str, str] | None = None) -> tuple[str | None, str]:
    env = dict(os.environ if environ is None else environ)
    exe = env.get("GLIDER_TEST_PHOENIX") or str(
        VENV / ("Scripts/phoenix.exe" if sys.platform == "win32" else "bin/phoenix")
    )
    if not Path(exe).exists():
        return (
            None,
            f"Arize Phoenix not installed: {exe} does not exist (.ci/run installs it into {VENV.name})",
        )
    if not os.access(exe, os.X_OK):
        return None, f"{exe} is not executable"
    return exe, ""


class PhoenixServer:
    """`phoenix serve` as a child process on 127.0.0.1 (HTTP and gRPC on free ports). A context manager."""

    def __init__(self, executable: str, workdir: Path, *, ready_timeout: float = 300.0) -> None:
        self.executable = executable
        self.workdir = workdir
        self.ready_timeout = ready_timeout
        self.port = 0
        self.grpc_port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = workdir / "phoenix.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self, tail: int = 4000) -> str:
        try:
            return self._log.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def __enter__(self) -> PhoenixServer:
        self.port = free_port()
        self.grpc_port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_", "GLIDER_"))}
        env.update(
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(self.port),
            PHOENIX_GRPC_PORT=str(self.grpc_port),
            PHOENIX_WORKING_DIR=str(self.workdir),
            PHOENIX_TELEMETRY_ENABLED="false",
        )
        with self._log.open("wb") as out:
            self._proc = subprocess.Popen(
                [self.executable, "serve"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"phoenix exited {self._proc.returncode}:\n{self.log()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=2, trust_env=False).status_code == 200:
                    return self
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"phoenix did not answer within {self.ready_timeout} s:\n{self.log()}")
            time.sleep(0.5)

    def __exit__(self, *exc: object) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def spans(self, project: str = "default", limit: int = 1000) -> list[dict[str, Any]]:
        """Every span Phoenix stored for `project` (its REST API, `GET /v1/projects/{p}/spans`)."""
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": min(limit, 1000)}
            if cursor:
                params["cursor"] = cursor
            r = httpx.get(
                f"{self.url}/v1/projects/{project}/spans", params=params, timeout=10, trust_env=False
            )
            if r.status_code == 404:
                return out  # no span yet: the project is made by the first one
            r.raise_for_status()
            body = r.json()
            out.extend(body.get("data", []))
            cursor = body.get("next_cursor")
            if not cursor or len(out) >= limit:
                return out

    def wait_for_spans(
        self, want: int, *, project: str = "default", timeout: float = 60.0
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            got = self.spans(project)
            if len(got) >= want or time.monotonic() > deadline:
                return got
            time.sleep(0.5)
