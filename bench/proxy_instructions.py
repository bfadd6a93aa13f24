"""bench/bench_proxy.py `--instructions`: instructions per request of the real servers, the floor and
`glider serve`, counted by valgrind (`--tool=cachegrind`, Debian's `valgrind`).

Each server runs under `valgrind --tool=cachegrind --cache-sim=no --trace-children=yes` (every process
it starts is counted too, one log per process, summed: work moved into another process is not a cut)
with a fresh GLIDER_HOME (the one
a full run starts with) and answers the bench's request over HTTP at c=1 (the bench's own aiohttp
series) from the fake upstream: `warm` requests, then `n` more; SIGINT then stops it (valgrind prints
its totals as the process exits, so the work a request leaves behind, its events written, is
counted). A second start answers the `warm` requests only; (count(warm + n) - count(warm)) / n is what
one request costs, the start-up, the warm-up and the shutdown cancelling out. A shared, noisy machine
moves CPU-time figures by 2x from run to run; it does not move a count of instructions.

Targets (issue 41): glider's own instructions per request (glider - floor) <= 600k (~950k before it),
and glider <= 1.6x the floor's count (the CPU target's ratio, `RATIO_CPU` of bench_proxy).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import aiohttp
from proxy_common import PY, SERVERS, bench_config, free_port, pin, wait_port
from proxy_load import latency

# Issue 41: glider's own instructions per request (glider - floor), every process counted.
OWN_TARGET = 600_000
START_S = 180.0  # a server starting under valgrind takes ~20-30 s on an idle 2-core machine
STOP_S = 180.0


async def _series(url: str, n: int) -> None:
    async with aiohttp.ClientSession() as session:
        await latency(session, url, n, stream=False)  # checks every answer is a 200


def count(argv: list[str], port: int, env: dict[str, str], cpus: set[int] | None, log: Path, n: int) -> int:
    """Instructions the server `argv` (listening on `port`) executes from exec to its exit, having
    answered `n` bench requests at c=1."""
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    # Every process the server starts is counted too (`%p`: one log per process, summed below).
    cmd += ["--trace-children=yes", f"--log-file={log}.%p", *argv]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pin(proc, cpus)
    try:
        wait_port(port, proc, timeout=START_S)
        asyncio.run(_series(f"http://127.0.0.1:{port}", n))
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=STOP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    total = 0
    logs = sorted(log.parent.glob(log.name + ".*"))
    for one in logs:
        text = one.read_text()
        refs = re.findall(r"I\s+refs:\s+([\d,]+)", text)
        if not refs:
            tail = "\n".join(text.splitlines()[-20:])
            raise SystemExit(
                f"valgrind printed no instruction count in {one.name} ({argv[:4]}); it ends:\n{tail}"
            )
        total += int(refs[-1].replace(",", ""))
    if not logs:
        raise SystemExit(f"valgrind wrote no log for {argv[:4]}")
    return total


def per_request(
    name: str,
    argv: Callable[[int], list[str]],
    env: dict[str, str],
    cpus: set[int] | None,
    tmp: Path,
    warm: int,
    n: int,
) -> float:
    """(count(warm + n) - count(warm)) / n for the server `name` (`argv(port)` starts it), each start
    with a fresh GLIDER_HOME."""
    counts = []
    for k in (warm, warm + n):
        home = tmp / f"ins-{name}-{k}"
        home.mkdir()
        print(f"{name}: {k} requests under valgrind...", file=sys.stderr, flush=True)
        port = free_port()
        penv = {**env, "GLIDER_HOME": str(home / "home")}
        counts.append(count(argv(port), port, penv, cpus, home / "valgrind.log", k))
    return (counts[1] - counts[0]) / n


def instructions(
    tmp: Path, env: dict[str, str], sut_cpus: set[int] | None, warm: int, n: int, ratio: float
) -> None:
    """`--instructions`: the floor's and glider serve's instructions per request, and glider's against
    `ratio` times the floor's."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    load0 = f"{os.getloadavg()[0]:.2f}"
    up = free_port()
    fake = subprocess.Popen([PY, str(SERVERS), "fake", str(up)], env=env)
    try:
        wait_port(up, fake)
        cfg = bench_config(tmp, up, up)

        def floor(port: int) -> list[str]:
            return [PY, str(SERVERS), "floor", str(port), str(up)]

        def glider(port: int) -> list[str]:
            return [PY, "-m", "glider_cli", "serve", "--quiet", "--config", str(cfg), "--port", str(port)]

        f = per_request("floor", floor, env, sut_cpus, tmp, warm, n)
        g = per_request("glider", glider, env, sut_cpus, tmp, warm, n)
    finally:
        fake.terminate()
        fake.wait(timeout=10)
    own = g - f
    good_ratio = g <= ratio * f
    good_own = own <= OWN_TARGET
    good = good_ratio and good_own
    print(f"load average before/after: {load0} / {os.getloadavg()[0]:.2f}; cpus: {os.cpu_count()}; {version}")
    print(
        f"-- instructions per request at c=1, the real servers under cachegrind ({warm} requests of warm-up,"
    )
    print(
        f"   {n} counted, every process counted); glider serve: routing on (bundled default rules), events on"
    )
    print(f"{'figure':<30}{'glider':>12}{'floor':>12}{'ratio':>8}   {'target':<16}")
    row = f"{'instructions per request':<30}{g:>12,.0f}{f:>12,.0f}{g / f:>7.2f}x"
    print(f"{row}   <= {ratio:.2f}x floor    {'OK' if good_ratio else 'MISS'}")
    label = "glider's own (glider - floor)"
    print(f"{label:<30}{own:>12,.0f}{'':>20}   <= {OWN_TARGET:,}      {'OK' if good_own else 'MISS'}")
    print("(issue 29's CPU target is measured in CPU time, the full run's table; this counts the same work")
    print(" in instructions, which a shared machine's load does not move)")
    print("ALL TARGETS MET" if good else "SOME TARGETS MISSED")
