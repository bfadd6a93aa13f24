"""A proxy.py plugin for tests (loaded by the proxy process, see forward_proxy.py): names under
`.glider.test` resolve to 127.0.0.1 inside the proxy only, and every request the proxy forwards is
appended to the file named by GLIDER_TEST_PROXY_LOG as one JSON line (one os.write: atomic)."""

from __future__ import annotations

import json
import os

from proxy.http.parser import HttpParser
from proxy.http.proxy import HttpProxyBasePlugin

TEST_DOMAIN = ".glider.test"


class RecordingPlugin(HttpProxyBasePlugin):  # type: ignore[misc]
    def resolve_dns(self, host: str, port: int) -> tuple[str | None, None]:
        return ("127.0.0.1" if host.endswith(TEST_DOMAIN) else None), None

    def before_upstream_connection(self, request: HttpParser) -> HttpParser:
        line = {
            "method": (request.method or b"").decode(),
            "host": (request.host or b"").decode(),
            "port": request.port,
            "path": (request.path or b"").decode(),
        }
        fd = os.open(os.environ["GLIDER_TEST_PROXY_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, json.dumps(line).encode() + b"\n")
        finally:
            os.close(fd)
        return request
