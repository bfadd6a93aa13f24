"""Proxy overhead benchmark: Glider vs a minimal Starlette+httpx pass-through vs direct calls.

Everything runs in one go against the same fake upstream (tests/fake_upstream.py), each server in its
own process on 127.0.0.1 so the load generator does not steal their event loop:

    direct         client -> fake upstream
    floor          client -> raw ASGI app on glider's own server stack (uvicorn with server.http_protocol,
                   uvloop, httptools) and its upstream client (backends.native), no routing, no
                   records -> fake: the cost of one more HTTP hop on this stack and machine, which
                   glider's own work (parsing, routing, records) comes on top of
    minimal        client -> ~20-line Starlette app forwarding with httpx.AsyncClient -> fake
    glider-httpx   client -> `create_app(..., upstream_kind="httpx")` -> fake    } the upstream client
    glider-aiohttp client -> `create_app(..., upstream_kind="aiohttp")` -> fake  } seam, measured
    glider         client -> `glider serve --config <bench config>` (its default: backends.native) -> fake

Requests are Anthropic `POST /v1/messages` routed by the real router to the `origin` backend
(same-protocol passthrough). Printed figures and targets (issue 3):
    non-streaming overhead at c=1, p50 <= 1 ms (median over rounds of glider minus direct in the round)
    and p99 <= 5 ms (pooled p99 minus direct's)
    throughput at c=32 >= 90% of the minimal pass-through
    streaming first-byte overhead <= 1 ms (p50, paired per round like the non-streaming p50)
    `glider serve` RSS <= 100 MB (after the run)

The machine's load average is printed with the figures: on a shared machine they move a lot.

Layout (`--pin`, the default with two CPUs or more): the servers under test run on CPUs of their own
(the upper half of this process's CPUs), the load generator and the fake upstream on the rest, as
load tests are usually run. Without it (`--no-pin`) every process competes for every CPU: on a 2-CPU
machine the scheduler then puts a server on the same CPU as the fake or the client at random, and
whatever the server does after waking its peer runs in series with that peer. Measured with aligned
timestamps in the client and the server, that cost Glider up to ~0.5 ms of first byte in some runs and
not in others, and even the floor's streaming overhead fell from 0.45-0.7 ms to 0.1-0.2 ms once pinned.

Usage: .venv/bin/python bench/bench_proxy.py [--requests N] [--seconds S] [--rounds R] [--no-pin]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
BODY = b'{"model":"claude-bench","max_tokens":16,"messages":[{"role":"user","content":"/cloud say hi"}]}'
STREAM_BODY = (
    b'{"model":"claude-bench","max_tokens":16,"stream":true,'
    b'"messages":[{"role":"user","content":"/cloud say hi"}]}'
)
HEADERS = {"content-type": "application/json", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}

FAKE = textwrap.dedent(
    """
    import sys, uvicorn
    sys.path.insert(0, {tests!r})
    from fake_upstream import FakeUpstream
    uvicorn.run(FakeUpstream().app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
    """
)
MINIMAL = textwrap.dedent(
    """
    import contextlib, httpx, uvicorn
    from starlette.applications import Starlette
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route
    UP = "http://127.0.0.1:{up}"
    state = {{}}
    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with httpx.AsyncClient(trust_env=False, timeout=600) as c:
            state["c"] = c
            yield
    async def messages(request):
        body = await request.body()
        c = state["c"]
        req = c.build_request("POST", UP + "/v1/messages", content=body,
                              headers={{"content-type": "application/json",
                                       "x-api-key": request.headers.get("x-api-key", ""),
                                       "anthropic-version": "2023-06-01"}})
        r = await c.send(req, stream=True)
        if b'"stream":true' in body:
            async def gen():
                try:
                    async for chunk in r.aiter_raw():
                        yield chunk
                finally:
                    await r.aclose()
            return StreamingResponse(gen(), status_code=r.status_code, media_type="text/event-stream")
        data = await r.aread()
        await r.aclose()
        return Response(data, status_code=r.status_code, media_type="application/json")
    app = Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])], lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
    """
)
FLOOR = textwrap.dedent(
    """
    import uvicorn
    from glider_cli.backends.native import NativeUpstream
    from glider_cli.server.run import uvicorn_options
    from glider_cli.config.settings import Timeout
    UP = "http://127.0.0.1:{up}"
    T = Timeout()
    state = {{}}
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                m = await receive()
                if m["type"] == "lifespan.startup":
                    state["up"] = NativeUpstream()
                    await send({{"type": "lifespan.startup.complete"}})
                else:
                    await state["up"].aclose()
                    await send({{"type": "lifespan.shutdown.complete"}})
                    return
        body = b""
        while True:
            m = await receive()
            body += m.get("body", b"")
            if not m.get("more_body"):
                break
        key = next((v for k, v in scope["headers"] if k == b"x-api-key"), b"").decode()
        headers = {{"content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01"}}
        r = await state["up"].send("POST", UP + "/v1/messages", headers, body, T)
        ctype = next((v for k, v in r.headers if k.lower() == "content-type"), "application/json").encode()
        if b'"stream":true' in body:
            hdrs = [(b"content-type", ctype)]
            start = {{"type": "http.response.start", "status": r.status, "headers": hdrs}}
            await send(start)
            async for chunk in r.aiter_bytes():
                await send({{"type": "http.response.body", "body": chunk, "more_body": True}})
            await send({{"type": "http.response.body", "body": b""}})
            await r.aclose()
            return
        data = await r.read()
        await r.aclose()
        headers = [(b"content-type", ctype), (b"content-length", str(len(data)).encode())]
        await send({{"type": "http.response.start", "status": r.status, "headers": headers}})
        await send({{"type": "http.response.body", "body": data}})
    uvicorn.run(app, host="127.0.0.1", port={port}, **uvicorn_options())
    """
)
GLIDER_KIND = textwrap.dedent(
    """
    import uvicorn
    from glider_cli.config.load import load_config
    from glider_cli.server.app import create_app
    from glider_cli.server.run import uvicorn_options
    cfg = load_config(config={config!r})
    app = create_app(cfg, upstream_kind={kind!r})
    uvicorn.run(app, host="127.0.0.1", port={port}, **uvicorn_options())
    """
)


def cpu_split() -> tuple[set[int] | None, set[int] | None]:
    """(CPUs for the load generator and the fake, CPUs for the servers under test), or (None, None)
    with fewer than two CPUs to use."""
    if not hasattr(os, "sched_getaffinity"):  # Linux only
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    half = len(cpus) // 2
    return set(cpus[:half]), set(cpus[half:])


def pin(proc: subprocess.Popen[bytes], cpus: set[int] | None) -> None:
    if cpus is not None:
        os.sched_setaffinity(proc.pid, cpus)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"server on port {port} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"server on port {port} did not start")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


async def latency(session: aiohttp.ClientSession, url: str, n: int, *, stream: bool) -> list[float]:
    """Per-request ms at concurrency 1: whole reply, or time to the first body byte when streaming."""
    out: list[float] = []
    body = STREAM_BODY if stream else BODY
    for _ in range(n):
        t0 = time.perf_counter()
        async with session.post(url + "/v1/messages", data=body, headers=HEADERS) as r:
            if stream:
                await r.content.readany()
                out.append((time.perf_counter() - t0) * 1000)
                await r.read()
            else:
                await r.read()
                out.append((time.perf_counter() - t0) * 1000)
            if r.status != 200:
                raise SystemExit(f"{url} answered {r.status}")
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def throughput(
    session: aiohttp.ClientSession, url: str, conc: int, seconds: float
) -> tuple[float, int]:
    done = 0
    end = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < end:
            async with session.post(url + "/v1/messages", data=BODY, headers=HEADERS) as r:
                await r.read()
            done += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    return done / (time.perf_counter() - t0), done


async def measure(
    targets: dict[str, str], pids: dict[str, int], n: int, seconds: float, rounds: int
) -> dict[str, dict[str, float]]:
    """Latency series are interleaved in `rounds` so that a load change on the machine hits every target
    alike; the p50 overheads are the median over rounds of (target p50 - direct p50) within the round
    (paired, so a round slowed by other work on the machine moves both sides). Throughput runs one
    target at a time."""
    res: dict[str, dict[str, float]] = {}
    lat: dict[str, list[float]] = {name: [] for name in targets}
    ttfb: dict[str, list[float]] = {name: [] for name in targets}
    round_p50: dict[str, list[float]] = {name: [] for name in targets}
    round_ttfb: dict[str, list[float]] = {name: [] for name in targets}
    conn = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(connector=conn) as session:
        for url in targets.values():  # warm-up: connections, imports, caches
            await latency(session, url, 50, stream=False)
            await latency(session, url, 10, stream=True)
        per_round = max(1, n // rounds)
        for _ in range(rounds):
            for name, url in targets.items():
                series = await latency(session, url, per_round, stream=False)
                first = await latency(session, url, max(5, per_round // 2), stream=True)
                lat[name] += series
                ttfb[name] += first
                round_p50[name].append(statistics.median(series))
                round_ttfb[name].append(statistics.median(first))
        for name in targets:
            res[name] = {
                "p50": statistics.median(lat[name]),
                "p99": pct(lat[name], 99),
                "ttfb50": statistics.median(ttfb[name]),
                "over50": statistics.median(
                    [t - d for t, d in zip(round_p50[name], round_p50["direct"], strict=True)]
                ),
                "over_ttfb": statistics.median(
                    [t - d for t, d in zip(round_ttfb[name], round_ttfb["direct"], strict=True)]
                ),
            }
        for name, url in targets.items():
            # CPU per request of the server process itself (the upstream's own work not included).
            c0 = cpu_seconds(pids[name])
            res[name]["rps32"], done = await throughput(session, url, 32, seconds)
            res[name]["cpu_ms"] = (cpu_seconds(pids[name]) - c0) / max(1, done) * 1000
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1000, help="requests per latency series (c=1)")
    ap.add_argument("--seconds", type=float, default=4.0, help="duration of each c=32 throughput run")
    ap.add_argument("--rounds", type=int, default=10, help="interleaved rounds of the latency series")
    ap.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="give the servers under test CPUs of their own, apart from the load generator and the fake",
    )
    args = ap.parse_args()
    load_cpus, sut_cpus = cpu_split() if args.pin else (None, None)
    if load_cpus is not None:
        try:
            os.sched_setaffinity(0, load_cpus)  # the load generator (this process) and, inherited, the fake
        except OSError as exc:  # a container may forbid it: measure unpinned and say so
            print(f"cannot pin ({exc}): running unpinned", file=sys.stderr)
            load_cpus = sut_cpus = None

    load0 = f"{os.getloadavg()[0]:.2f}"
    procs: list[subprocess.Popen[bytes]] = []
    tmp = tempfile.TemporaryDirectory(prefix="glider-bench-")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["GLIDER_HOME"] = str(Path(tmp.name) / "home")
    try:
        up = free_port()
        procs.append(subprocess.Popen([PY, "-c", FAKE.format(tests=str(ROOT / "tests"), port=up)], env=env))
        wait_port(up, procs[-1])
        cfg = Path(tmp.name) / "bench.yaml"
        cfg.write_text(
            "extends: default\n"
            "backends:\n"
            f"  ollama: {{type: ollama, side: local, base_url: 'http://127.0.0.1:{up}'}}\n"
            f"  origin: {{type: origin, side: cloud, base_url: 'http://127.0.0.1:{up}'}}\n"
        )
        names = ("floor", "minimal", "glider-httpx", "glider-aiohttp", "glider")
        ports = {name: free_port() for name in names}
        scripts = {
            "floor": FLOOR.format(up=up, port=ports["floor"]),
            "minimal": MINIMAL.format(up=up, port=ports["minimal"]),
            "glider-httpx": GLIDER_KIND.format(config=str(cfg), kind="httpx", port=ports["glider-httpx"]),
            "glider-aiohttp": GLIDER_KIND.format(
                config=str(cfg), kind="aiohttp", port=ports["glider-aiohttp"]
            ),
        }
        for script in scripts.values():
            procs.append(subprocess.Popen([PY, "-c", script], env=env))
            pin(procs[-1], sut_cpus)
        serve = [PY, "-m", "glider_cli", "serve", "--config", str(cfg), "--port", str(ports["glider"])]
        procs.append(subprocess.Popen(serve, env=env, stderr=subprocess.DEVNULL))
        pin(procs[-1], sut_cpus)
        glider_proc = procs[-1]
        for name, port in ports.items():
            wait_port(port, procs[list(ports).index(name) + 1])
        targets = {"direct": f"http://127.0.0.1:{up}"}
        targets.update({k: f"http://127.0.0.1:{p}" for k, p in ports.items()})
        pids = {"direct": procs[0].pid, **{name: procs[i + 1].pid for i, name in enumerate(ports)}}
        res = asyncio.run(measure(targets, pids, args.requests, args.seconds, args.rounds))
        rss = rss_mb(glider_proc.pid)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        tmp.cleanup()

    d = res["direct"]
    load1 = f"{os.getloadavg()[0]:.2f}"
    layout = (
        f"servers under test on CPU {sorted(sut_cpus)}, load generator and fake on CPU {sorted(load_cpus)}"
        if load_cpus is not None and sut_cpus is not None
        else "not pinned: the scheduler places every process"
    )
    print(f"load average before/after: {load0} / {load1}; cpus: {os.cpu_count()}; rounds: {args.rounds}")
    print(f"layout: {layout}")
    print(f"{'target':<14}{'p50 ms':>9}{'p99 ms':>9}{'ttfb50 ms':>11}{'req/s c=32':>12}{'cpu ms/req':>12}")
    for name, r in res.items():
        row = f"{r['p50']:>9.3f}{r['p99']:>9.3f}{r['ttfb50']:>11.3f}{r['rps32']:>12.0f}{r['cpu_ms']:>12.3f}"
        print(f"{name:<14}{row}")
    print()
    ok = True

    def check(label: str, value: float, target: float, unit: str, higher: bool = False) -> None:
        nonlocal ok
        good = value >= target if higher else value <= target
        ok = ok and good
        sign = ">=" if higher else "<="
        print(
            f"{label:<48}{value:>9.3f} {unit:<4} target {sign} {target} {unit:<4} {'OK' if good else 'MISS'}"
        )

    for name in ("glider", "glider-aiohttp", "glider-httpx", "floor", "minimal"):
        g = res[name]
        print(f"-- {name}")
        check("  non-streaming overhead p50 (c=1, paired rounds)", g["over50"], 1.0, "ms")
        check("  non-streaming overhead p99 (c=1)", g["p99"] - d["p99"], 5.0, "ms")
        check("  streaming first-byte overhead p50 (paired)", g["over_ttfb"], 1.0, "ms")
        if name.startswith("glider"):
            check(
                "  throughput c=32 vs minimal pass-through",
                100 * g["rps32"] / res["minimal"]["rps32"],
                90,
                "%",
                higher=True,
            )
    print("-- glider's own cost above the floor (same stack, no routing or records)")
    print(
        f"  p50 {res['glider']['over50'] - res['floor']['over50']:.3f} ms, first byte "
        f"{res['glider']['over_ttfb'] - res['floor']['over_ttfb']:.3f} ms, CPU at c=32 "
        f"{res['glider']['cpu_ms'] - res['floor']['cpu_ms']:.3f} ms/request"
    )
    print("-- glider serve")
    check("  RSS after the run", rss, 100.0, "MB")
    print("ALL TARGETS MET" if ok else "SOME TARGETS MISSED")


if __name__ == "__main__":
    main()
