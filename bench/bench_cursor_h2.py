"""The Cursor proxy's frame latency, HTTP/2 `Run` against HTTP/1.1 `RunSSE`, in the same run.

    .venv/bin/python bench/bench_cursor_h2.py [--runs N] [--ticks T] [--pace SECONDS]

`glider serve --cursor-port` runs as a real process, its Cursor hosts resolved to the tests' strict
fake Cursor origin (tests/cursor/fake_cursor.py, in this process: its send times and the client's
arrival times are on one clock). Each run is a `/cloud` turn the proxy relays to the origin, which
sends `3 + T + 3` frames (heartbeat, text, tokens, T small text frames, text, turn ended, end of
stream) `pace` seconds apart, each its own write. The Cursor-shaped clients of the tests drive it:
- HTTP/2: `AgentService/Run` on one connection kept open across runs (as Cursor keeps it);
- HTTP/1.1: `RunSSE` + `BidiAppend`, each request its own CONNECT tunnel and TLS session (as the
  tests' client does), so its first byte includes a TLS handshake the HTTP/2 one does not.
- baseline: HTTP/2 `Run` through a blind tunnel (`api4.cursor.sh`, not decrypted): the proxy's
  bytes-only cost.
Printed per transport (median and p95 over all runs): first byte (the request sent -> the first frame
in) and per frame (the origin sent it -> it was in the client), and the target: the HTTP/2 relay's
per-frame median no slower than HTTP/1.1's plus 1 ms ("tunnelled" is the baseline: no decryption).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "cursor"))

import cursor_wire as wire  # noqa: E402
from cursor_client import CursorClient  # noqa: E402
from cursor_h2_client import H2CursorClient  # noqa: E402
from fake_cursor import HOSTS, FakeCursor  # noqa: E402

from llama_server import free_port  # noqa: E402
from serve_process import ServeProcess  # noqa: E402

AGENT = "agent.api5.cursor.sh"
TUNNEL = "api4.cursor.sh"
TARGET_MS = 1.0


def config(fake: FakeCursor, tmp: Path, cursor_port: int) -> Path:
    resolve = ", ".join(f'"{h}": "127.0.0.1:{fake.port}"' for h in HOSTS)
    path = tmp / "config.yaml"
    path.write_text(
        "extends: default\n"
        "backends:\n"
        "  ollama: {type: ollama, side: local, base_url: 'http://127.0.0.1:9', model: m}\n"
        "cursor:\n"
        f"  port: {cursor_port}\n"
        f"  resolve: {{{resolve}}}\n"
        f"  upstream_ca_file: '{fake.ca_file(tmp)}'\n"
    )
    return path


def ms(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(len(xs) * 0.95))]
    return f"median {statistics.median(xs) * 1000:7.2f} ms   p95 {p95 * 1000:7.2f} ms"


def message(i: int) -> bytes:
    return wire.run_request(f"conv-bench-{i}", wire.user_action("/cloud go"))


Figures = tuple[list[float], list[float]]  # first byte of each run, latency of each frame (seconds)


async def over_h2(client: H2CursorClient, fake: FakeCursor, runs: int, host: str) -> Figures:
    first: list[float] = []
    per: list[float] = []
    conn = await client.connect(host)
    for i in range(runs):
        before = len(fake.h2_runs)
        t0 = time.monotonic()
        answer = await conn.run(message(i))
        sent = [t for t, _ in fake.h2_runs[before].sent]
        arrived = [t for t, _, _ in answer.frames]
        assert len(sent) == len(arrived), (len(sent), len(arrived))
        first.append(arrived[0] - t0)
        per += [a - s for a, s in zip(arrived, sent, strict=True)]
    await conn.close()
    return first, per


async def over_h1(client: CursorClient, fake: FakeCursor, runs: int) -> Figures:
    first: list[float] = []
    per: list[float] = []
    for i in range(runs):
        before = len(fake.sse_runs)
        t0 = time.monotonic()
        sse, _, _ = await client.turn(AGENT, message(i), rid=str(uuid.uuid4()))
        sent = [t for t, _ in fake.sse_runs[before].sent]
        arrived = [t for t, _, _ in sse.frames]
        assert len(sent) == len(arrived), (len(sent), len(arrived))
        first.append(arrived[0] - t0)
        per += [a - s for a, s in zip(arrived, sent, strict=True)]
    return first, per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--ticks", type=int, default=30)
    ap.add_argument("--pace", type=float, default=0.005)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d, FakeCursor() as fake:
        tmp = Path(d)
        fake.pace, fake.ticks = args.pace, args.ticks
        cursor_port = free_port()
        cfg = config(fake, tmp, cursor_port)
        env = {**os.environ, "GLIDER_HOME": str(tmp / "home")}
        with ServeProcess("--config", str(cfg), "--quiet", env=env):
            ca = str(tmp / "home" / "cursor" / "ca.pem")

            async def go() -> dict[str, Any]:
                h2c = H2CursorClient(cursor_port, ca)
                h1c = CursorClient(cursor_port, ca)
                await over_h2(h2c, fake, 3, AGENT)  # warm-up: the proxy's first connections and imports
                await over_h1(h1c, fake, 3)
                blind = H2CursorClient(cursor_port, fake.ca_file(tmp))  # trusts the origin: not decrypted
                return {
                    "h2": await over_h2(h2c, fake, args.runs, AGENT),
                    "h1": await over_h1(h1c, fake, args.runs),
                    "tunnel": await over_h2(blind, fake, args.runs, TUNNEL),
                }

            out = asyncio.run(go())
    frames = 6 + args.ticks
    print(f"{args.runs} runs x {frames} frames {args.pace * 1000:.0f} ms apart, through the Cursor proxy")
    for name, key in (("HTTP/2 Run", "h2"), ("HTTP/1.1 RunSSE", "h1"), ("HTTP/2 tunnelled", "tunnel")):
        print(f"{name:<17} first byte  {ms(out[key][0])}   per frame  {ms(out[key][1])}")
    h2_med = statistics.median(out["h2"][1]) * 1000
    h1_med = statistics.median(out["h1"][1]) * 1000
    ok = "OK" if h2_med <= h1_med + TARGET_MS else "MISSED"
    print(f"per-frame median HTTP/2 {h2_med:.2f} ms, HTTP/1.1 {h1_med:.2f} ms   target <= +1 ms   {ok}")


if __name__ == "__main__":
    main()
