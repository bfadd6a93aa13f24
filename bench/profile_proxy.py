"""Profile `glider serve` on the request path under load with py-spy (issue 29). See profile_proxy.sh.

Starts bench_proxy.py's fake upstream, then `py-spy record --format raw` running `glider serve` with
bench_proxy.py's config (bundled default rules, events on, a temporary GLIDER_HOME), drives it at c=32
for SECONDS, and prints the functions with the largest inclusive and self share of the samples. The
collapsed stacks are kept in OUT (feed them to any flame graph tool, or speedscope).

Usage: .venv/bin/python bench/profile_proxy.py [OUT] [SECONDS]
"""

from __future__ import annotations

import asyncio
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_proxy import PY, SERVERS, bench_config, free_port, throughput, wait_port


def summary(raw: Path, top: int = 30) -> None:
    total = 0
    incl: collections.Counter[str] = collections.Counter()
    self_: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        for f in set(frames):
            incl[f] += n
        self_[frames[-1]] += n
    print(f"{total} samples")
    for title, counter in (("inclusive", incl), ("self", self_)):
        print(f"-- top {top} by {title} share")
        for f, n in counter.most_common(top):
            print(f"{n / total * 100:6.1f}%  {f}")


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "glider-serve.txt")
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    with tempfile.TemporaryDirectory(prefix="glider-profile-") as tmp:
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env["GLIDER_HOME"] = str(Path(tmp) / "home")
        up = free_port()
        fake = subprocess.Popen([PY, str(SERVERS), "fake", str(up)], env=env)
        wait_port(up, fake)
        cfg = bench_config(Path(tmp), up, up)
        port = free_port()
        argv = [spy, "record", "--format", "raw", "-o", str(out), "--rate", "250", "-d", str(int(secs) + 3)]
        serve = [PY, "-m", "glider_cli", "serve", "--config", str(cfg), "--port", str(port)]
        # serve's line per reply goes where bench_proxy.py sends it (nowhere): to a terminal or a
        # file its write would be a system call per reply the bench does not pay (py-spy's notes too).
        rec = subprocess.Popen(
            [*argv, "--", *serve], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_port(port, rec)

            async def load() -> None:
                async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
                    took, done = await throughput(s, f"http://127.0.0.1:{port}", 32, secs)
                    print(f"{done / took:.0f} req/s at c=32 under the profiler")

            time.sleep(0.5)
            asyncio.run(load())
            rec.wait(timeout=secs + 30)
        finally:
            for p in (rec, fake):
                if p.poll() is None:
                    p.terminate()
                    p.wait(timeout=10)
    summary(out)


if __name__ == "__main__":
    main()
