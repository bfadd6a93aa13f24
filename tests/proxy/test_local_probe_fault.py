"""A fault of the first local probe itself (not a backend that cannot be reached: that is a
Capability) is reported once where uvicorn reports the app's failures, the backends stay "not
probed", and a request waiting for the probe goes on (`proxy.local_path.LocalPath.start_probe`)."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from typing import Any

import pytest

from glider_cli.backends.registry import BackendRegistry
from glider_cli.config.load import load_config
from glider_cli.proxy import local_path
from glider_cli.proxy.local_path import LocalPath


def test_a_probe_that_raises_is_logged_once_and_leaves_the_backends_not_probed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(backends: Any, timeout: float) -> Any:
        await asyncio.sleep(0.01)
        raise RuntimeError("the probe's own bug")

    monkeypatch.setattr(local_path, "probe_all", broken)  # the network seam
    config = load_config(profile="default")
    local = LocalPath(BackendRegistry(config.settings.backends, {}), config.settings)
    assert local.caps, "the default profile has a local backend"

    seen: list[bool] = []

    async def run() -> None:
        local.start_probe(timeout=0.5)
        seen.append(local.probing)
        await asyncio.wait_for(local.ready(), 2)  # a waiting request goes on; nothing raised here
        seen.append(local.probing)

    with caplog.at_level(logging.ERROR):
        # A loop of its own, in a thread: the browser tests' session keeps one running in this one.
        failed: list[BaseException] = []

        def in_thread() -> None:
            try:
                asyncio.run(run())
            except BaseException as exc:  # handed to the test's thread
                failed.append(exc)

        worker = threading.Thread(target=in_thread)
        worker.start()
        worker.join(10)
        assert not worker.is_alive() and not failed, failed
        gc.collect()  # an exception never retrieved would be reported when its task is collected
    assert seen == [True, False]
    assert all(c.source == "not probed" and c.reachable is None for c in local.caps.values())
    faults = [r for r in caplog.records if r.name == "uvicorn.error"]
    assert len(faults) == 1 and "first probe" in faults[0].getMessage()
    assert faults[0].exc_info is not None and "the probe's own bug" in str(faults[0].exc_info[1])
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
