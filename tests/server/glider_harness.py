"""Test harness: Glider's real app served by uvicorn on 127.0.0.1 (random port), in a thread.

`GliderServer(config_yaml, ...)` writes the YAML to a file, loads it with the real config loader and
router, and serves `create_app` with a recording EventSink (the seam), or the real EventWriter when
`sink=None`, and the production upstream client (aiohttp) talking to real servers on 127.0.0.1.
Use as a context manager; `.url`, `.events` (type, data, turn_id) and `.types()`; `observer` and
`refused_observer` are the app's (`glider serve`'s line per request, per gate refusal). Entering returns
once uvicorn listens and (unless `probed=False`) the app's first probe of its local backends is over,
which runs beside the server (`proxy.local_path`): a test reads what the probe found.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import uvicorn

from glider_cli.config.load import load_config
from glider_cli.proxy import Observer, RefusedObserver
from glider_cli.server.app import create_app
from glider_cli.server.serve import uvicorn_options


class RecordingSink:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any], str | None]] = []
        self._lock = threading.Lock()

    def emit(self, type: str, data: Mapping[str, Any], *, turn_id: str | None = None) -> None:
        with self._lock:
            self.events.append((type, dict(data), turn_id))


def backends_yaml(fake_url: str, *, local_fallback: str | None = None, extra: str = "") -> str:
    fb = f", fallback: {local_fallback}" if local_fallback else ""
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{fake_url}', model: qwen-local{fb}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake_url}'}}\n" + extra
    )


class GliderServer:
    def __init__(
        self,
        config_yaml: str,
        tmp: Path,
        *,
        environ: Mapping[str, str] | None = None,
        record: bool = True,
        bound_host: str | None = None,
        reload_interval: float | None = 1.0,
        probed: bool = True,
        observer: Observer | None = None,
        refused_observer: RefusedObserver | None = None,
    ) -> None:
        self.probed = probed
        path = tmp / "glider-test-config.yaml"
        self.path = path
        path.write_text(config_yaml)
        self.config = load_config(config=str(path), environ=dict(environ or {}))
        self.sink = RecordingSink() if record else None
        self.app = create_app(
            self.config,
            sink=self.sink,
            environ=dict(environ or {"GLIDER_HOME": str(tmp / "home")}),
            bound_host=bound_host,
            reload_interval=reload_interval,
            observer=observer,
            refused_observer=refused_observer,
        )
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def events(self) -> list[tuple[str, dict[str, Any], str | None]]:
        assert self.sink is not None
        return list(self.sink.events)

    def types(self) -> list[str]:
        return [t for t, _, _ in self.events]

    def wait_for(self, event_type: str, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Events are written in the relay's `finally`, which can run just after the client saw the end."""
        end = time.monotonic() + timeout
        while True:
            found = [d for t, d, _ in self.events if t == event_type]
            if len(found) >= count or time.monotonic() > end:
                return found
            time.sleep(0.01)

    def __enter__(self) -> GliderServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        options = {**uvicorn_options(self.app), "server_header": True}
        config = uvicorn.Config(self.app, **options)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        end = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > end:
                raise RuntimeError("glider test server did not start")
            time.sleep(0.01)
        local = getattr(self.app.state.proxy, "local", None)
        while self.probed and getattr(local, "probing", False):
            if time.monotonic() > end:
                raise RuntimeError("glider test server's probe did not end")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=15)
