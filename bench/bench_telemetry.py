"""What OpenTelemetry export costs a request (issue 45): `glider serve`'s instructions per request with
telemetry off and on, in the same run, counted by valgrind (`bench/proxy_instructions.py`: each server
under `--tool=cachegrind`, (count(warm + n) - count(warm)) / n, the work a request leaves behind —
its spans built, batched, encoded and exported on the SDK's thread — counted, since the process runs
to its exit).

    glider (off)   the bench config, no OTEL_* variable: OpenTelemetry is not imported at all
    glider (on)    the same, with OTEL_EXPORTER_OTLP_ENDPOINT at a receiver on 127.0.0.1 that takes every
                   OTLP/HTTP export (200, outside valgrind); sampling 1.0: every request is a trace, and
                   the metrics recorded
    glider (lean)  on, with OTEL_TRACES_SAMPLER_ARG=0.1 (one request in ten a trace) and
                   OTEL_METRICS_EXPORTER=none: what a high-volume user's export costs

Requests are the bench's Anthropic `POST /v1/messages` (`/cloud`: the origin passthrough) at c=1.
Target: on <= 1.10x off. Also prints the floor (the bare aiohttp pass-through) for scale.

    python bench/bench_telemetry.py [--warmup 30] [--requests 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proxy_common import PY, SERVERS, bench_config, free_port, wait_port
from proxy_instructions import per_request

TARGET = 1.10


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that takes every export (it reads the body and answers 200, empty)."""

    received = 0

    def do_POST(self) -> None:
        n = int(self.headers.get("content-length") or 0)
        self.rfile.read(n)
        type(self).received += 1
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--requests", type=int, default=200)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    otlp = f"http://127.0.0.1:{receiver.server_address[1]}"
    with tempfile.TemporaryDirectory(prefix="glider-bench-otel-") as tmpdir:
        tmp = Path(tmpdir)
        up = free_port()
        fake = subprocess.Popen([PY, str(SERVERS), "fake", str(up)], env=env)
        try:
            wait_port(up, fake)
            cfg = bench_config(tmp, up, up)

            def glider(port: int) -> list[str]:
                return [PY, "-m", "glider_cli", "serve", "--quiet", "--config", str(cfg), "--port", str(port)]

            def floor(port: int) -> list[str]:
                return [PY, str(SERVERS), "floor", str(port), str(up)]

            on_env = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": otlp, "OTEL_SERVICE_NAME": "glider-bench"}
            f = per_request("floor", floor, env, None, tmp, args.warmup, args.requests)
            off = per_request("off", glider, env, None, tmp, args.warmup, args.requests)
            on = per_request("on", glider, on_env, None, tmp, args.warmup, args.requests)
            lean_env = {**on_env, "OTEL_TRACES_SAMPLER_ARG": "0.1", "OTEL_METRICS_EXPORTER": "none"}
            lean = per_request("lean", glider, lean_env, None, tmp, args.warmup, args.requests)
        finally:
            fake.terminate()
            fake.wait(timeout=10)
            receiver.shutdown()
    ratio = on / off
    print(
        f"-- instructions per request at c=1 under cachegrind ({args.warmup} warm-up,"
        f" {args.requests} counted)"
    )
    print(f"load average: {os.getloadavg()[0]:.2f}; OTLP exports received: {_Receiver.received}")
    print(f"{'server':<28}{'instructions':>14}")
    print(f"{'floor (aiohttp pass-through)':<28}{f:>14,.0f}")
    print(f"{'glider, telemetry off':<28}{off:>14,.0f}")
    print(f"{'glider, telemetry on':<28}{on:>14,.0f}")
    print(f"{'glider, on, 0.1, no metrics':<28}{lean:>14,.0f}")
    print(
        f"export on / off: {ratio:.3f}x ({on - off:+,.0f} per request); target <= {TARGET:.2f}x: "
        + ("OK" if ratio <= TARGET else "MISS")
    )
    lean_ratio = lean / off
    print(
        f"lean (sampling 0.1, OTEL_METRICS_EXPORTER=none) / off: {lean_ratio:.3f}x ({lean - off:+,.0f}); "
        f"target <= {TARGET:.2f}x: " + ("OK" if lean_ratio <= TARGET else "MISS")
    )
    print(f"glider's own (minus the floor): off {off - f:,.0f}, on {on - f:,.0f}, lean {lean - f:,.0f}")
    if _Receiver.received == 0:
        raise SystemExit("the receiver got no export: telemetry was not on")


if __name__ == "__main__":
    main()
