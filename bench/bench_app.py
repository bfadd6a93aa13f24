"""Glider's own work per request, without the network (issue 29): the CPU and the instructions one
request costs inside the app, apart from uvicorn's and aiohttp's share.

The real app (`server.app.create_app` with bench_proxy.py's config: the bundled default profile's rules,
events written to a temporary GLIDER_HOME, the garbage collector set as `glider serve` sets it) is driven
as ASGI in this process, with the bench's request (`/cloud say hi`, routed by `explicit_cloud` to the
passthrough backend) and a canned upstream at the `backends.client.Upstream` seam that answers at
once. What it measures is everything `glider serve` does for a request beyond the floor's stack:
the middleware, parsing, the turn lifecycle, the decision, the dispatch and the reply's bookkeeping,
and writing the request's events (staged, then written on the next loop passes; a round ends once they
are written, so they are counted).

    .venv/bin/python bench/bench_app.py [--n 3000] [--rounds 5]      µs of CPU per request (median)
    .venv/bin/python bench/bench_app.py --instructions                 instructions per request
    .venv/bin/python bench/bench_app.py --trees OLD/src NEW/src [--instructions]
    .venv/bin/python bench/bench_app.py --no-events [...]              the same with the events dropped

`--instructions` runs the request loop under valgrind (`--tool=cachegrind`, Debian's `valgrind`) twice,
with `--n` and with `--n` + 1,000 requests after the same warm-up, and prints the difference over 1,000:
a count of the work that a shared, noisy machine does not move (wall-clock and CPU figures here drift by
2x between runs). `--trees` runs each tree in its own subprocess (PYTHONPATH), alternating, and prints
each one's figure and its ratio to the first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_proxy import BODY, bench_config
from bench_proxy import HEADERS as CLIENT_HEADERS

REPLY = (
    b'{"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench","content":'
    b'[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,'
    b'"usage":{"input_tokens":9,"output_tokens":1}}'
)
# bench_proxy.py's request headers as uvicorn hands them to the app.
HEADERS = [
    (b"host", b"127.0.0.1:8787"),
    *((k.encode(), v.encode()) for k, v in CLIENT_HEADERS.items()),
    (b"content-length", str(len(BODY)).encode()),
]
WARM = 5000  # past the turn index's 4,096 families: each request then opens one and evicts one


class _Answer:
    status = 200
    raw_headers: ClassVar[list[tuple[bytes, bytes]]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(REPLY)).encode()),
    ]
    headers: ClassVar[list[tuple[str, str]]] = [
        ("content-type", "application/json"),
        ("content-length", str(len(REPLY))),
    ]

    async def read(self) -> bytes:
        return REPLY

    async def aiter_bytes(self) -> Any:
        yield REPLY

    async def aclose(self) -> None:
        pass


class _Upstream:
    """The `backends.client.Upstream` seam, answering every request at once with the same reply."""

    async def send(self, method: str, url: str, headers: Any, body: bytes, timeout: Any) -> _Answer:
        if not url.endswith("/v1/messages") or headers.get("x-api-key") != "sk-bench":
            raise AssertionError(f"unexpected upstream call {method} {url}")
        return _Answer()

    async def aclose(self) -> None:
        pass


class _Dropped:
    """An event sink that keeps nothing (`--no-events`: what the events' recording costs, by difference)."""

    def emit(self, type: str, data: Any, *, turn_id: str | None = None) -> None:
        pass


async def _serve(n: int, rounds: int, warm: int, events: bool = True) -> list[float]:
    from glider_cli.config.load import load_config
    from glider_cli.server.app import create_app
    from glider_cli.server.serve import collect_for_serving

    tmp = Path(tempfile.mkdtemp(prefix="glider-bench-app-"))
    cfg = bench_config(tmp, 9, 9)  # bench_proxy.py's config; the upstream is canned
    env = {"GLIDER_HOME": str(tmp / "home")}
    app = create_app(
        load_config(config=str(cfg), environ=env),
        upstream=_Upstream(),
        sink=None if events else _Dropped(),
        environ=env,
        reload_interval=None,
    )
    inbox: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    life = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, outbox.put))
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started

    async def one() -> None:
        sent: list[MutableMapping[str, Any]] = []
        given = False
        answered = asyncio.Event()

        async def receive() -> MutableMapping[str, Any]:
            # As uvicorn: the body, then (the disconnect watcher's call) nothing until the response
            # is complete, then `http.disconnect`.
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": BODY, "more_body": False}
            await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered.set()

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/v1/messages",
            "raw_path": b"/v1/messages",
            "query_string": b"",
            "root_path": "",
            "headers": HEADERS,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8787),
        }
        await app(scope, receive, send)
        if sent[0].get("status") != 200:
            raise AssertionError(f"the bench request was not answered 200: {sent}")
        # One loop pass between requests, as a server's socket reads give: the app's own callbacks
        # and due timers (the staged events' writes) run then. Without it nothing here ever waits,
        # the loop never runs them, and every round's events piled up until `settle`, the collector
        # walking the pile (a young collection every ~120 requests, which serve does not see).
        await asyncio.sleep(0)

    async def settle() -> None:
        await asyncio.sleep(0.05)  # the staged events are written a linger later

    for _ in range(warm):
        await one()
    await settle()
    collect_for_serving()
    took: list[float] = []
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(n):
            await one()
        await settle()
        took.append((time.process_time() - t) / n * 1e6)
    await inbox.put({"type": "lifespan.shutdown"})
    await outbox.get()
    await life
    return took


def _instructions(python: list[str], env: dict[str, str], n: int, warm: int, events: bool) -> int:
    counts = []
    for requests in (n, n + 1000):
        argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        argv += [*python, __file__, "--child", "--n", str(requests), "--rounds", "1", "--warm", str(warm)]
        argv += [] if events else ["--no-events"]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stderr
        found = re.search(r"I\s+refs:\s+([\d,]+)", out)
        if found is None:
            raise SystemExit(f"no instruction count in valgrind's output:\n{out[-2000:]}")
        counts.append(int(found.group(1).replace(",", "")))
    return (counts[1] - counts[0]) // 1000


def _figure(tree: str | None, args: argparse.Namespace) -> float:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = tree
    if args.instructions:
        return _instructions([sys.executable], env, args.n, args.warm, args.events)
    argv = [sys.executable, __file__, "--child", "--n", str(args.n), "--rounds", str(args.rounds)]
    argv += [] if args.events else ["--no-events"]
    out = subprocess.run(
        [*argv, "--warm", str(args.warm)], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--n", type=int, default=3000, help="requests per timed round (per count with --instructions)"
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warm", type=int, default=WARM, help="requests before the timed part")
    ap.add_argument("--instructions", action="store_true", help="instructions per request, under valgrind")
    ap.add_argument("--trees", nargs="+", metavar="SRC", help="source trees to compare, alternating")
    ap.add_argument(
        "--events",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="record the requests' events (--no-events: dropped, to see their share by difference)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(statistics.median(asyncio.run(_serve(args.n, args.rounds, args.warm, args.events))))
        return
    unit = "instructions/request" if args.instructions else "µs CPU/request (median of rounds)"
    trees: list[str | None] = list(args.trees) if args.trees else [None]
    figures: dict[str | None, list[float]] = {t: [] for t in trees}
    for _ in range(1 if args.instructions else 3 if args.trees else 1):
        for tree in trees:
            figures[tree].append(_figure(tree, args))
    first = statistics.median(figures[trees[0]])
    what = "events on" if args.events else "events dropped"
    print(f"glider's own work per request (the app in-process, canned upstream, {what}): {unit}")
    for tree in trees:
        value = statistics.median(figures[tree])
        print(f"  {tree or 'this tree':<40} {value:>12,.1f}   x{value / first:.3f}")


if __name__ == "__main__":
    main()
