"""The cost of recording a request's events (issue 29): µs of CPU per request-worth of events.

Each bench request of `bench/bench_proxy.py` (Anthropic `POST /v1/messages` "/cloud say hi", routed by
`explicit_cloud` to the passthrough backend) records five events: TurnOpened, RouteDecided,
StickyBound when `Turns.open` opens it, OriginPassthrough and StickyBound (ended) when `Turns.close`
closes it. This bench makes them as `glider serve` does (the real router with the bench config, the
real `turns.lifecycle.Turns`), outside the timed part, then times what the server does with them:
`LoopSink.emit` of the opening events, the drain on the next event-loop pass (the Deferred records
made, `EventWriter.write_now`: settle, redaction check, index digest, the day-file and index writes,
and the previous request's closing events with them), then `LoopSink.later.emit` of the closing ones.

    .venv/bin/python bench/bench_events.py [--n 5000]                  this tree
    .venv/bin/python bench/bench_events.py --trees OLD/src NEW/src      both, interleaved, with ratios
    .venv/bin/python bench/bench_events.py --write DIR                  a fixed-clock run into DIR

`--trees` runs one subprocess per tree and round (`--rounds`, default 5), alternating, each with
PYTHONPATH set to that tree, and prints each tree's median and the ratio against the first. `--write`
runs the same events with a fixed clock and seeded ids into DIR/context, so two trees' day files
and index delta files can be compared byte for byte (`--trees` does that too, and says whether they
are identical).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_proxy import bench_config

HERE = Path(__file__).resolve().parent
BODY = {"model": "claude-bench", "max_tokens": 16, "messages": [{"role": "user", "content": "/cloud say hi"}]}

Item = tuple[str, Any, "str | None"]
CHUNK = 100


class Tick:
    """A clock that moves 0.7 ms per read (a fixed one for `--write`)."""

    def __init__(self, start: float = 1_796_147_098.3) -> None:
        self.t = start

    def __call__(self) -> float:
        self.t += 0.0007
        return self.t


class Requests:
    """Bench requests' (opening events, closing events), as `Turns.open` / `Turns.close` give them."""

    def __init__(self, tmp: Path, clock: Callable[[], float]) -> None:
        from glider_cli.config.load import load_config
        from glider_cli.router import Router
        from glider_cli.store.eventlog.events import IdGenerator
        from glider_cli.turns.lifecycle import Turns

        cfg = bench_config(tmp, 9, 9)  # bench_proxy.py's config; no request leaves the process
        config = load_config(config=str(cfg), environ={"GLIDER_HOME": str(tmp / "home")})
        settings = config.settings
        self.turns = Turns(
            Router(config), settings.sticky, settings.tool_followup, clock=clock, new_id=IdGenerator(clock)
        )

    def take(self, n: int) -> list[tuple[list[Item], list[Item]]]:
        from glider_cli.protocol.parse import parse_request
        from glider_cli.turns.lifecycle import Served

        out = []
        for _ in range(n):
            chat = parse_request("anthropic", BODY)
            opened = self.turns.open(chat, BODY)
            served = Served("origin", "cloud", "claude-bench", 200, 21, 9, 2.9)
            out.append((list(opened.events), list(self.turns.close(opened, served))))
        return out


def run(n: int, home: Path, clock: Callable[[], float]) -> float:
    """Seconds of CPU (this process's) to record `n` requests' events through LoopSink -> EventWriter.

    The requests are made `CHUNK` at a time, outside the timed part, so that (as in a server) only a
    few requests' objects are alive while events are recorded: the collector's cost stays realistic."""
    from glider_cli.paths import Paths
    from glider_cli.server.sink import LoopSink
    from glider_cli.store.eventlog.writer import EventWriter

    made = Requests(home, clock)
    writer = EventWriter(Paths(home / "home"), clock=clock)
    sink = LoopSink(writer, writer.write_now)

    async def go() -> float:
        spent = 0.0
        gc.collect()
        gc.freeze()  # what is loaded by now lives as long as the process (as `glider` does at start)
        for done in range(0, n, CHUNK):
            reqs = made.take(min(CHUNK, n - done))
            t0 = time.process_time()
            for opening, closing in reqs:
                for kind, data, turn in opening:
                    sink.emit(kind, data, turn_id=turn)
                await asyncio.sleep(0)  # the drain runs on this pass, as it does while the request waits
                for kind, data, turn in closing:
                    sink.later.emit(kind, data, turn_id=turn)
            spent += time.process_time() - t0
        t0 = time.process_time()
        sink.drain()
        return spent + time.process_time() - t0

    spent = asyncio.run(go())
    writer.close()
    if writer.stats.written != 5 * n or writer.stats.failed:
        raise SystemExit(f"expected {5 * n} events written: {writer.stats.to_dict()}")
    return spent


def worker(n: int, write: Path | None) -> None:
    if write is not None:
        try:
            from glider_cli.config import profiles
        except ImportError:  # a tree from before config/profiles.py: `load` held profiles_dir
            from glider_cli.config import load as profiles  # type: ignore[no-redef]

        # The bundled profile copied to DIR, so its rules' `where` reads the same for every tree.
        shutil.copytree(profiles.profiles_dir(), write / "profiles")
        profiles.profiles_dir = lambda: write / "profiles"  # type: ignore[assignment]
        random.seed(29)
        run(n, write, Tick())
        return
    with tempfile.TemporaryDirectory(prefix="glider-bench-events-") as tmp:
        spent = run(n, Path(tmp), time.time)
    print(json.dumps({"us_per_request": spent / n * 1e6}))


def compare(trees: list[str], n: int, rounds: int) -> None:
    env = dict(os.environ)
    got: dict[str, list[float]] = {t: [] for t in trees}
    for r in range(rounds):
        for tree in trees if r % 2 == 0 else reversed(trees):
            out = subprocess.run(
                [sys.executable, __file__, "--n", str(n)],
                env={**env, "PYTHONPATH": tree},
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            got[tree].append(json.loads(out.splitlines()[-1])["us_per_request"])
    base = statistics.median(got[trees[0]])
    print(f"recording a bench request's 5 events (LoopSink -> EventWriter.write_now), n={n}, {rounds} rounds")
    for tree in trees:
        med = statistics.median(got[tree])
        runs = " ".join(f"{x:.1f}" for x in got[tree])
        print(f"  {tree:<40} {med:7.1f} µs/request  ({med / base:.2f}x)  runs: {runs}")
    with tempfile.TemporaryDirectory(prefix="glider-bench-events-") as tmp:
        files = []
        d = Path(tmp) / "run"
        for tree in trees:
            shutil.rmtree(d, ignore_errors=True)
            subprocess.run(
                [sys.executable, __file__, "--n", "200", "--write", str(d)],
                env={**env, "PYTHONPATH": tree},
                check=True,
            )
            ctx = d / "home" / "context"
            day = sorted(ctx.glob("events-*.jsonl"))
            delta = sorted((ctx / "index").glob("*.delta"))
            # The delta lines name the day file by its inode: the rest must be the same.
            files.append(
                (
                    b"".join(p.read_bytes() for p in day),
                    [{**json.loads(x), "file": None} for p in delta for x in p.read_bytes().splitlines()],
                )
            )
        same = all(f == files[0] for f in files[1:])
        print(f"  event lines and index lines identical across trees (200 requests): {same}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trees", nargs="+")
    ap.add_argument("--write", type=Path)
    a = ap.parse_args()
    if a.trees:
        compare(a.trees, a.n, a.rounds)
    else:
        worker(a.n, a.write)


if __name__ == "__main__":
    main()
