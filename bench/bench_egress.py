"""The egress audit in the store worker, at the scale of weeks of traffic: peak RSS and wall time.

    .venv/bin/python bench/bench_egress.py [--home DIR] [--events N] [--days D] [--runs R] [--limit L]

A home of `--events` (200,000) events over `--days` (14) days is generated (bench/store_scale_home.py)
unless `--home` names one already made. One throw-away call first (the first full read compacts the
past days' index); then each run starts a fresh store worker (`server.store_worker.StoreWorker`, the
process `GET /api/context/egress` is answered by, its memory budget lifted so that it stays to be
measured) and asks it for `egress` over the whole window. Printed: the wall time of the call, the
worker's peak RSS (`VmHWM`, target ≤ 150 MB), and how many calls were listed, omitted and counted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store_scale_home import generate

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.server.store_worker import StoreWorker

TARGET_MB = 150.0


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmHWM in /proc (Linux only)")


def one(paths: Paths, limit: int) -> tuple[float, float, dict[str, Any]]:
    worker = StoreWorker(paths, ContextSettings(), budget_mb=1e9)
    try:
        worker.call("turns", 1, None)  # starts the worker; a page of one turn reads one day's index
        t = time.perf_counter()
        body, _ = worker.call("egress", None, None, limit)
        wall = time.perf_counter() - t
        return wall, peak_mb(worker._proc.pid), orjson.loads(body)
    finally:
        worker.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home
        if home is None:
            home = Path(tmp)
            made = generate(home, args.events, args.days)
            print(f"home: {made['events']} events, {made['turns']} turns over {made['days']} days")
        paths = Paths(home=home)
        one(paths, args.limit)
        walls, peaks = [], []
        for _ in range(args.runs):
            wall, peak, audit = one(paths, args.limit)
            walls.append(wall * 1000)
            peaks.append(peak)
        counted = sum(t["calls"] for t in audit["totals"])
        print(f"egress: {len(audit['calls'])} calls listed, {audit['omitted']} omitted, {counted} counted")
        verdict = "OK" if max(peaks) <= TARGET_MB else "MISSED"
        print(
            f"egress in the store worker: wall {statistics.median(walls):.0f} ms "
            f"(min {min(walls):.0f}, max {max(walls):.0f}), "
            f"peak RSS {max(peaks):.0f} MB (target ≤ {TARGET_MB:.0f}) {verdict}"
        )


if __name__ == "__main__":
    main()
