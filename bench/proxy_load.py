"""bench/bench_proxy.py's load: the client's request series (aiohttp, in this process) and what it
measures of each target, latency at c=1, time to first byte and to the first text, throughput at c=32,
and the servers' CPU time per request.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import aiohttp
from proxy_common import BODY, HEADERS, OPENAI_BODY, STREAM_BODY, XLATE_BODY, cpu_seconds

THROUGHPUT_SLICES = 4


async def first_text(session: aiohttp.ClientSession, url: str, path: str, body: bytes, n: int) -> list[float]:
    """Per-request ms at c=1 to the first event carrying answer text of a stream (a non-empty OpenAI
    `content` delta, or an Anthropic `text_delta` with text: not the role chunk's empty content)."""
    import re

    text = re.compile(rb'"content": ?"[^"]|"text_delta", ?"text": ?"[^"]')
    out: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with session.post(url + path, data=body, headers=HEADERS) as r:
            seen = b""
            while not text.search(seen):
                chunk = await r.content.readany()
                if not chunk:
                    raise SystemExit(f"{url}{path}: the stream ended without text ({r.status})")
                seen += chunk
            out.append((time.perf_counter() - t0) * 1000)
            await r.read()
    return out


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


async def throughput(
    session: aiohttp.ClientSession, url: str, conc: int, seconds: float
) -> tuple[float, int]:
    """(seconds taken, requests done) with `conc` workers for about `seconds`."""
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
    return time.perf_counter() - t0, done


async def measure(
    targets: dict[str, str],
    pids: dict[str, int],
    n: int,
    seconds: float,
    rounds: int,
    paced: str | None = None,
) -> dict[str, dict[str, float]]:
    """Latency series are interleaved in `rounds` so that a load change on the machine hits every target
    alike; the p50 overheads are the median over rounds of (target p50 - direct p50) within the round
    (paired, so a round slowed by other work on the machine moves both sides). Throughput runs one
    target at a time, in THROUGHPUT_SLICES slices taken round-robin (`--seconds` in all per target)."""
    res: dict[str, dict[str, float]] = {}
    lat: dict[str, list[float]] = {name: [] for name in targets}
    ttfb: dict[str, list[float]] = {name: [] for name in targets}
    round_p50: dict[str, list[float]] = {name: [] for name in targets}
    round_ttfb: dict[str, list[float]] = {name: [] for name in targets}
    cpu1: dict[str, list[float]] = {name: [0.0, 0.0] for name in targets}  # cpu s, requests at c=1
    xlate: dict[str, list[float]] = {"direct": [], "glider": []}
    conn = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(connector=conn) as session:
        for url in targets.values():  # warm-up: connections, imports, caches
            await latency(session, url, 50, stream=False)
            await latency(session, url, 10, stream=True)
        per_round = max(1, n // rounds)
        for _ in range(rounds):
            for name, url in targets.items():
                c0 = cpu_seconds(pids[name])
                series = await latency(session, url, per_round, stream=False)
                cpu1[name][0] += cpu_seconds(pids[name]) - c0
                cpu1[name][1] += len(series)
                first = await latency(session, url, max(5, per_round // 2), stream=True)
                lat[name] += series
                ttfb[name] += first
                round_p50[name].append(statistics.median(series))
                round_ttfb[name].append(statistics.median(first))
            if paced is not None:  # Anthropic in, OpenAI out, paced: paired with the fake's own TTFT
                k = max(5, per_round // 10)
                d = await first_text(session, paced, "/v1/chat/completions", OPENAI_BODY, k)
                g = await first_text(session, targets["glider"], "/v1/messages", XLATE_BODY, k)
                xlate["direct"].append(statistics.median(d))
                xlate["glider"].append(statistics.median(g))
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
                "cpu1_ms": cpu1[name][0] / max(1.0, cpu1[name][1]) * 1000,
            }
        if xlate["glider"]:
            res["glider"]["xlate"] = statistics.median(
                [g - d for g, d in zip(xlate["glider"], xlate["direct"], strict=True)]
            )
        # Throughput in slices, round-robin over the targets, for the same reason as the rounds above.
        total: dict[str, list[float]] = {name: [0.0, 0.0, 0.0] for name in targets}  # s, done, cpu s
        for _ in range(THROUGHPUT_SLICES):
            for name, url in targets.items():
                # CPU per request of the server process itself (the upstream's own work not included).
                c0 = cpu_seconds(pids[name])
                took, done = await throughput(session, url, 32, seconds / THROUGHPUT_SLICES)
                await asyncio.sleep(0.3)  # the work left behind (records written...) is counted too
                t = total[name]
                t[0], t[1], t[2] = t[0] + took, t[1] + done, t[2] + cpu_seconds(pids[name]) - c0
        for name, (took_s, done_n, cpu_s) in total.items():
            res[name]["rps32"] = done_n / took_s
            res[name]["cpu_ms"] = cpu_s / max(1.0, done_n) * 1000
    return res


async def post_many(url: str, n: int, conc: int = 8) -> None:
    """`n` bench requests to `url`, `conc` at a time."""
    async with aiohttp.ClientSession() as session:

        async def worker(k: int) -> None:
            for _ in range(k):
                async with session.post(url + "/v1/messages", data=BODY, headers=HEADERS) as r:
                    await r.read()
                    if r.status != 200:
                        raise SystemExit(f"{url} answered {r.status}")

        await asyncio.gather(*(worker(n // conc + (i < n % conc)) for i in range(conc)))
