"""`glider mcp` on the 200k-event home: how long a `context_query` call takes, and the server's memory.

Makes the home with `store_scale_home.generate` (weeks of Claude Code traffic in three projects, this
repository's `src/` indexed) unless `--home DIR` names one already made, then starts `glider mcp` in one
of its projects (`--workspace /home/dev/project0`, a path the generated turns name) and speaks MCP to it
on stdio, one JSON-RPC line at a time (no client library in the measured path). For each query: the
first call (the store worker started, the store index and the graph read from disk) and the median of
`--runs` later calls, wall time from writing the request to reading its answer (target: <= 300 ms for
the median), and the server's resident memory after every call and its peak (`VmHWM`; target: <= 80
MB), with its store worker's peak beside it (the store is read there: `server.mcp_server.WorkerTools`).

    .venv/bin/python bench/bench_mcp.py [--home DIR] [--events N] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store_scale_home import generate

WORKSPACE = "/home/dev/project0"
WALL_TARGET_MS = 300.0
RSS_TARGET_MB = 80.0


def status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class Session:
    """`glider mcp` as a subprocess, initialized; `call` times one tools/call."""

    def __init__(self, home: Path) -> None:
        env = {**os.environ, "GLIDER_HOME": str(home)}
        argv = [sys.executable, "-m", "glider_cli", "mcp", "--workspace", WORKSPACE]
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ids = 0
        self.rpc(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            msg: dict[str, Any] = json.loads(self.proc.stdout.readline())
            if msg.get("id") == self.ids:
                return msg

    def call(self, tool: str, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        t = time.perf_counter()
        msg = self.rpc("tools/call", {"name": tool, "arguments": args})
        ms = (time.perf_counter() - t) * 1000
        result: dict[str, Any] = msg["result"]
        if result.get("isError"):
            raise SystemExit(f"{tool} {args}: {result['content'][0]['text']}")
        return ms, result

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, help="a home store_scale_home.py made (default: make one)")
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="glider-bench-mcp-") as tmp:
        home = a.home
        if home is None:
            home = Path(tmp) / "home"
            made = generate(home, events=a.events)
            print(f"home: {made}")
        session = Session(home)
        try:
            ok = run(session, a.runs)
        finally:
            session.close()
    print(f"load average {os.getloadavg()[0]:.2f}")
    sys.exit(0 if ok else 1)


def run(s: Session, runs: int) -> bool:
    _, turns = s.call("recent_turns", {"limit": 50})
    listed = turns["structuredContent"]["turns"]
    turn = listed[len(listed) // 2]["turn_id"]
    cases = [
        f"{turn} goal OR plan",
        "* parser OR lexer",
        "* kind=file router",
        f"{turn} key=clone_path",
    ]
    ok = True
    peak_rss = 0.0
    print(f"glider mcp in {WORKSPACE}, {len(listed)} of its turns listed; {runs} warm calls each")
    for query in cases:
        first, answer = s.call("context_query", {"query": query})
        rss = [status_mb(s.proc.pid, "VmRSS")]
        warm = []
        for _ in range(runs):
            ms, answer = s.call("context_query", {"query": query})
            warm.append(ms)
            rss.append(status_mb(s.proc.pid, "VmRSS"))
        med = statistics.median(warm)
        peak_rss = max(peak_rss, *rss)
        good = med <= WALL_TARGET_MS
        ok = ok and good
        n = len(answer["structuredContent"]["results"])
        verdict = f"target <= {WALL_TARGET_MS:.0f} ms {'OK' if good else 'MISSED'}"
        print(
            f"context_query {query!r:<34} median {med:5.0f} ms (min {min(warm):.0f}, max {max(warm):.0f}), "
            f"{n} results, {verdict}; first call {first:.0f} ms"
        )
    hwm = status_mb(s.proc.pid, "VmHWM")
    good = hwm <= RSS_TARGET_MB
    ok = ok and good
    # The worker is started from one of the server's threads: the children of every task.
    tasks = Path(f"/proc/{s.proc.pid}/task").glob("*/children")
    kids = [int(k) for t in tasks for k in t.read_text().split()]
    worker = ", ".join(f"{status_mb(k, 'VmHWM'):.0f} MB" for k in kids) or "none running"
    print(
        f"glider mcp RSS: after calls at most {peak_rss:.0f} MB, peak (VmHWM) {hwm:.0f} MB, "
        f"target <= {RSS_TARGET_MB:.0f} MB {'OK' if good else 'MISSED'}; its store worker's peak: {worker} "
        "(the worker exits after 60 s without a call)"
    )
    return ok


if __name__ == "__main__":
    main()
