"""The plumbing of bench/bench_proxy.py, shared with the other proxy benches: the bench's requests, its
config (the bundled default rules with the fakes as backends), ports, CPU pinning, and the
server processes' CPU time and RSS.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

PY = sys.executable
BODY = b'{"model":"claude-bench","max_tokens":16,"messages":[{"role":"user","content":"/cloud say hi"}]}'
STREAM_BODY = (
    b'{"model":"claude-bench","max_tokens":16,"stream":true,'
    b'"messages":[{"role":"user","content":"/cloud say hi"}]}'
)
HEADERS = {"content-type": "application/json", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
# Anthropic in, routed by a rule of the bench config to an OpenAI-compatible backend (the paced fake).
XLATE_BODY = (
    b'{"model":"claude-bench","max_tokens":16,"stream":true,'
    b'"messages":[{"role":"user","content":"/oai say hi"}]}'
)
OPENAI_BODY = (
    b'{"model":"gpt-bench","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"say hi"}]}'
)
PACE_S = 0.005  # seconds between the paced fake's stream events, a model's pace

SERVERS = Path(__file__).resolve().parent / "proxy_servers.py"


def bench_config(tmp: Path, up: int, paced: int) -> Path:
    """`extends: default` with the fakes as backends, and `/oai` routed to an OpenAI-compatible one."""
    cfg = tmp / "bench.yaml"
    cfg.write_text(
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: 'http://127.0.0.1:{up}'}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: 'http://127.0.0.1:{up}'}}\n"
        f"  oai: {{type: openai, side: cloud, base_url: 'http://127.0.0.1:{paced}/v1', model: gpt-bench}}\n"
        "routing:\n"
        "  rules:\n"
        "    - name: bench_openai\n"
        "      priority: 101\n"
        "      trigger: {type: explicit, commands: ['/oai']}\n"
        "      action: {target: cloud, backend: oai, model: gpt-bench}\n"
    )
    return cfg


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


def tree_pids(pid: int) -> list[int]:
    """`pid` and every process below it."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for kids in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo += [int(k) for k in kids.read_text().split()]
            except OSError:
                pass
    return out


def tree_rss_mb(pid: int) -> float:
    total = 0.0
    for p in tree_pids(pid):
        try:
            total += rss_mb(p)
        except OSError:
            pass
    return total


class PeakRss:
    """Samples the RSS of a process tree every 20 ms on a thread; `.peak` in MB."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid, self.peak, self.most_procs = pid, 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.sample()

    def sample(self) -> None:
        try:
            self.peak = max(self.peak, tree_rss_mb(self.pid))
            self.most_procs = max(self.most_procs, len(tree_pids(self.pid)))
        except OSError:
            pass

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self.sample()
        return self.peak


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def events_written(home: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in (home / "context").glob("events-*.jsonl"))
