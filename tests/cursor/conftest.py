"""Fixtures of the Cursor proxy tests: a strict fake Cursor origin over TLS, and Glider's real app
(uvicorn in a thread) with its Cursor proxy on a free port, resolving Cursor's hosts to the fake."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "server"))

from fake_cursor import HOSTS, FakeCursor
from glider_harness import GliderServer


@pytest.fixture
def fake_cursor() -> Iterator[FakeCursor]:
    with FakeCursor() as f:
        yield f


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
        self.cursor = server.app.state.cursor
        self.port: int = self.cursor.port
        self.ca = str(tmp / "home" / "cursor" / "ca.pem")


@pytest.fixture
def glider_for(tmp_path: Path) -> Iterator[object]:
    started: list[GliderServer] = []

    def start(yaml: str) -> Glider:
        server = GliderServer(yaml, tmp_path)
        server.__enter__()
        started.append(server)
        return Glider(server, tmp_path)

    yield start
    for s in started:
        s.__exit__(None, None, None)
