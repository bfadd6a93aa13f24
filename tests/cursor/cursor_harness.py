"""Helpers of the Cursor proxy tests, importable by name (a test module importing `conftest` would get
whichever `conftest` module Python loaded first): the config of Glider's app with its Cursor proxy
resolving Cursor's hosts to the fake origin, and the running app with where its proxy listens."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "server"))

from fake_cursor import HOSTS, FakeCursor
from glider_harness import GliderServer


def cursor_yaml(
    fake: FakeCursor, tmp: Path, local_url: str, *, extra: str = "", model: str = "fake-model"
) -> str:
    resolve = ", ".join(f'"{h}": "127.0.0.1:{fake.port}"' for h in HOSTS)
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local_url}', model: {model}}}\n"
        "cursor:\n"
        "  port: 0\n"
        f"  resolve: {{{resolve}}}\n"
        f"  upstream_ca_file: '{fake.ca_file(tmp)}'\n" + extra
    )


class Glider:
    """The running app and where its Cursor proxy listens."""

    def __init__(self, server: GliderServer, tmp: Path) -> None:
        self.server = server
        self.cursor = server.app.state.cursor.service
        self.port: int = self.cursor.port
        self.ca = str(tmp / "home" / "cursor" / "ca.pem")
