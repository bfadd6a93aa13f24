"""Fixtures of the Cursor proxy tests: a strict fake Cursor origin over TLS, and Glider's real app
(uvicorn in a thread) with its Cursor proxy on a free port, resolving Cursor's hosts to the fake."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "server"))

from cursor_harness import Glider
from fake_cursor import FakeCursor
from glider_harness import GliderServer


@pytest.fixture
def fake_cursor() -> Iterator[FakeCursor]:
    with FakeCursor() as f:
        yield f


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
