"""Fixtures of the Cursor proxy tests: a strict fake Cursor origin over TLS, Glider's real app
(uvicorn in a thread) with its Cursor proxy on a free port, resolving Cursor's hosts to the fake, and
the strict decoder of Cursor's frames (protobuf-es under node)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "server"))

from cursor_harness import Glider
from fake_cursor import FakeCursor
from glider_harness import GliderServer
from strict_decoder import StrictDecoder, unavailable


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


@pytest.fixture(scope="session")
def strict() -> StrictDecoder:
    """The strict decoder (protobuf-es under node): a test that needs it skips without it, or fails
    under CI (`CI` set), where .ci/run installs it."""
    why = unavailable()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{why} (CI must decode strictly: .ci/run runs npm ci --prefix tests/node)")
        pytest.skip(why)
    decoder = StrictDecoder.shared()
    assert decoder is not None
    return decoder
