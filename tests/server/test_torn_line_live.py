"""A crash mid-write leaves a torn last line in the day file; the next `glider serve` appends after it
without losing an event, and the commands that read the log say what they skipped (issue 14 §3)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream
from glider_cli.paths import Paths
from glider_cli.store.eventlog import log

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-sonnet-4"], ollama_models=["qwen-local", "qwen2.5-coder:14b"]),
]


def test_serve_after_a_torn_write_loses_no_event(fake: FakeUpstream, tmp_path: Path) -> None:
    fake.reset()
    home = tmp_path / "home"
    context = Paths(home=home).context
    context.mkdir(parents=True)
    today = dt.datetime.now(dt.UTC).date()
    day_file = log.day_path(context, today)
    # What a `glider serve` killed in the middle of a RouteDecided line leaves behind.
    day_file.write_bytes(b'{"v":1,"id":"01a2","type":"RouteDecided","ts":"' + today.isoformat().encode())
    body = {
        "model": "claude-sonnet-4",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "/local hi"}],
    }
    with GliderServer(backends_yaml(fake.url), tmp_path, record=False) as g:
        for _ in range(2):
            assert httpx.post(g.url + "/v1/messages", json=body, timeout=30).status_code == 200
    stats = log.ReadStats()
    events = list(log.iter_events(context, stats=stats))
    decided = [e for e in events if e["type"] == "RouteDecided"]
    assert len(decided) == 2 and all(e["data"]["rule"] == "explicit_local" for e in decided)
    assert (stats.torn, stats.corrupt) == (1, 0)
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "context", "turns", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "GLIDER_HOME": str(home)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "skipped 1 torn and 0 unreadable lines" in proc.stderr
    export = subprocess.run(
        [sys.executable, "-m", "glider_cli", "context", "export"],
        capture_output=True,
        timeout=60,
        env={**os.environ, "GLIDER_HOME": str(home)},
    )
    assert export.returncode == 0
    assert b"skipped 1 torn and 0 unreadable lines" in export.stderr
    assert export.stdout.count(b'"type":"RouteDecided"') == 2
