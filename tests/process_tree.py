"""Watching a fake agent's process tree from outside (mode `tree`, tests/fixtures/fake_agents): which
processes tick, whether they are gone, whether anything still writes."""

from __future__ import annotations

import os
import time
from pathlib import Path


def tickers(ticks: Path, count: int, timeout: float = 60.0) -> set[int]:
    """The pids writing to `ticks`, once `count` of them have (the agent and its grandchild)."""
    end = time.monotonic() + timeout
    while True:
        lines = ticks.read_text().splitlines() if ticks.exists() else []
        pids = {int(line.split()[0]) for line in lines if line.count(" ") == 1}
        if len(pids) >= count:
            return pids
        assert time.monotonic() < end, f"only {pids} ticked within {timeout} s"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, dead and not yet collected, does not run)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True  # no /proc here: os.kill said it exists
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def all_gone(pids: set[int], timeout: float = 20.0) -> set[int]:
    """The pids of `pids` still running after `timeout` seconds (empty: all gone)."""
    end = time.monotonic() + timeout
    while True:
        left = {p for p in pids if alive(p)}
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def still_written(ticks: Path, quiet: float = 1.0) -> bool:
    """True when `ticks` grows during `quiet` seconds (a process of the tree still runs)."""
    size = ticks.stat().st_size
    time.sleep(quiet)
    return ticks.stat().st_size != size
