"""bench/bench_proxy.py's cold starts: seconds from exec to the first answered request, for the floor
and for `glider serve`, and `--cold-only` (the starts alone, against a GLIDER_HOME filled first).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import time
from pathlib import Path

from proxy_common import BODY, HEADERS, PY, SERVERS, bench_config, events_written, free_port, pin, wait_port
from proxy_load import post_many


def cold_start(argv: list[str], port: int, env: dict[str, str], cpus: set[int] | None) -> float:
    """Seconds from exec to the first answered request (a 200 to POST /v1/messages)."""
    import http.client

    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pin(proc, cpus)
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"{argv[:3]} exited with {proc.returncode} while starting")
            if time.perf_counter() - t0 > 30:
                raise SystemExit(f"{argv[:3]} did not answer within 30 s")
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("POST", "/v1/messages", BODY, HEADERS)
                status = c.getresponse().status
                c.close()
            except OSError:
                time.sleep(0.002)
                continue
            if status == 200:
                return time.perf_counter() - t0
            raise SystemExit(f"{argv[:3]} answered {status} to its first request")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cold_starts(
    tmp: Path, env: dict[str, str], up: str, sut_cpus: set[int] | None, times: int
) -> dict[str, float]:
    """Median seconds from exec to the first answered request, for the floor and for glider serve.

    Both start as installed code does: with compiled bytecode. An editable checkout run with
    PYTHONDONTWRITEBYTECODE (or before its first run) compiles every one of glider's modules from source
    at each start (~0.1 s on the 2-core test machine), while the floor's libraries come from
    site-packages, compiled at install; so the bytecode is kept under a cache prefix of this run and one
    start of each, not timed, writes it."""
    upp = int(up.rsplit(":", 1)[1])
    cfg = bench_config(tmp, upp, upp)
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    out: dict[str, list[float]] = {"floor": [], "glider": []}
    for i in range(times + 1):
        port = free_port()
        out["floor"].append(cold_start([PY, str(SERVERS), "floor", str(port), str(upp)], port, env, sut_cpus))
        port = free_port()
        argv = [PY, "-m", "glider_cli", "serve", "--config", str(cfg), "--port", str(port)]
        out["glider"].append(cold_start(argv, port, env, sut_cpus))
        if i == 0:  # the untimed start that wrote the bytecode
            out = {"floor": [], "glider": []}
    return {k: statistics.median(v) for k, v in out.items()}


def cold_only(
    tmp: Path, env: dict[str, str], sut_cpus: set[int] | None, times: int, fill: int, target: float
) -> None:
    """`--cold-only`: the cold starts against a GLIDER_HOME filled by `fill` requests (see bench_proxy's
    usage); glider's median is checked against `target` seconds."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        up = free_port()
        procs.append(subprocess.Popen([PY, str(SERVERS), "fake", str(up)], env=env))
        wait_port(up, procs[0])
        port = free_port()
        cfg = bench_config(tmp, up, up)
        argv = [PY, "-m", "glider_cli", "serve", "--quiet", "--config", str(cfg), "--port", str(port)]
        glider = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pin(glider, sut_cpus)
        try:
            wait_port(port, glider)
            asyncio.run(post_many(f"http://127.0.0.1:{port}", fill))
        finally:
            glider.terminate()
            glider.wait(timeout=10)
        events = events_written(Path(env["GLIDER_HOME"]))
        load0 = f"{os.getloadavg()[0]:.2f}"
        cold = cold_starts(tmp, env, f"http://127.0.0.1:{up}", sut_cpus, times)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
    g, f = cold["glider"], cold["floor"]
    print(f"load average before/after: {load0} / {os.getloadavg()[0]:.2f}; cpus: {os.cpu_count()}")
    print(f"glider serve's GLIDER_HOME: {events} events logged by {fill} requests; median of {times} starts")
    print(f"{'figure':<30}{'glider':>10}{'floor':>10}{'ratio':>8}   {'target':<16}")
    verdict = "OK" if g <= target else "MISS"
    row = f"{'cold start exec->1st answer':<30}{g:>10.3f}{f:>10.3f}{g / f:>7.2f}x"
    print(f"{row}   <= {target:<8.3f} s     {verdict}")
    print("ALL TARGETS MET" if verdict == "OK" else "SOME TARGETS MISSED")
