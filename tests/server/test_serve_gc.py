"""`server.serve.run` freezes what start-up loaded before it serves (issue 29: the full collections
under load walked every module and config object again each time)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from glider_cli.server.serve import GC_FULL_EVERY, GC_YOUNG, prepare, run


def test_serving_starts_with_the_start_up_heap_frozen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GLIDER_HOME", str(tmp_path / "home"))
    seen: dict[str, int] = {}

    def serve(self: uvicorn.Server, sockets: Any = None) -> None:
        # uvicorn is the seam: what matters is the collector's state when serving would begin.
        seen["frozen"] = gc.get_freeze_count()
        seen["young"], _, seen["full_every"] = gc.get_threshold()

    monkeypatch.setattr(uvicorn.Server, "run", serve)
    thresholds = gc.get_threshold()
    gc.unfreeze()
    prepared = prepare(port=0, environ={"GLIDER_HOME": str(tmp_path / "home")})
    try:
        with pytest.raises(SystemExit):  # the stand-in never started: run() exits 3
            run(prepared)
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    # Everything alive at start (modules, config, app) was moved out of the collector's way, and
    # full collections wait longer; young ones are not started by the requests in flight alone.
    assert seen["frozen"] > 10_000
    assert seen["full_every"] == GC_FULL_EVERY > 10
    assert seen["young"] == GC_YOUNG > 700
