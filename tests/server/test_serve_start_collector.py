"""`glider serve` starts with the cyclic collector off and turns it back on once uvicorn has started,
before the first request is read (issue 29's cold start: `server.serve.collector_paused`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from typer.testing import CliRunner

from glider_cli.cli import app
from glider_cli.server import serve as run_mod
from glider_cli.server.serve import collector_paused


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector's state as it was, whatever the test did to it."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        (gc.enable if enabled else gc.disable)()


@pytest.mark.usefixtures("collector")
def test_the_collector_is_off_while_paused_and_on_again_after_start_or_on_leaving() -> None:
    gc.enable()
    with collector_paused() as started:
        assert not gc.isenabled()
        frozen = gc.get_freeze_count()
        keep = [[] for _ in range(100)]  # made during the start: frozen by `started`, not walked
        started()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(keep)
        started()  # once only
    assert gc.isenabled()

    gc.unfreeze()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a start that failed")
    assert gc.isenabled() and gc.get_freeze_count() == 0  # back on, nothing frozen

    gc.disable()  # a caller that had it off keeps it off
    with collector_paused() as started:
        started()
        assert not gc.isenabled()
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_serve_prepares_and_starts_without_collecting_and_collects_once_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    prepare = run_mod.prepare

    def preparing(**kwargs: Any) -> Any:
        seen["preparing"] = gc.isenabled()
        return prepare(**kwargs)

    async def main_loop(self: uvicorn.Server) -> None:
        # Where uvicorn reads requests: the lifespan has run and the socket listens.
        seen["serving"] = gc.isenabled()
        seen["frozen"] = gc.get_freeze_count()
        seen["young"] = gc.get_threshold()[0]

    monkeypatch.setattr(run_mod, "prepare", preparing)
    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    gc.enable()
    gc.unfreeze()
    result = CliRunner().invoke(
        app, ["serve", "--port", "0", "--quiet", "--home", str(tmp_path / "home")], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert seen["preparing"] is False  # the config, its lint and the app: no collection
    assert seen["serving"] is True  # on again before the first request
    assert seen["frozen"] > 10_000  # the start-up heap, lifespan included, out of the collector's way
    assert seen["young"] == run_mod.GC_YOUNG
    assert gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_serve_starts_without_a_full_collection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A full collection at start walked every object alive (13-37 ms of each start) to free a few
    # hundred: what start-up loaded is frozen as it is (`server.serve.collect_for_serving`).
    collections: list[int] = []
    serving: dict[str, bool] = {}

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and not serving:
            collections.append(info["generation"])

    async def main_loop(self: uvicorn.Server) -> None:
        serving["now"] = True

    monkeypatch.setattr(uvicorn.Server, "main_loop", main_loop)
    gc.enable()
    gc.unfreeze()
    gc.callbacks.append(seen)
    try:
        result = CliRunner().invoke(
            app, ["serve", "--port", "0", "--quiet", "--home", str(tmp_path / "home")], catch_exceptions=False
        )
    finally:
        gc.callbacks.remove(seen)
    assert result.exit_code == 0, result.output
    assert serving == {"now": True}
    assert 2 not in collections
