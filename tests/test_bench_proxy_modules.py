"""bench/bench_proxy.py and the modules it is split into: the other bench scripts still import what they
take from it, its command line still offers every mode, and each module stays under ~400 lines. Fast:
nothing is started or measured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
MODULES = ["bench_proxy", "proxy_common", "proxy_load", "proxy_cold", "proxy_instructions"]


def test_the_bench_scripts_that_import_bench_proxy_still_import() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r})\n"
        "import bench_app, bench_events, bench_store_scale, profile_proxy, bench_proxy\n"
        "assert bench_proxy.BODY.startswith(b'{') and bench_proxy.HEADERS['x-api-key'] == 'sk-bench'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_its_command_line_offers_every_mode() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "bench_proxy.py"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for option in ("--requests", "--rounds", "--cold", "--cold-only", "--fill", "--ccr", "--instructions"):
        assert option in done.stdout
    assert "--warmup" in done.stdout


def test_each_module_stays_under_400_lines() -> None:
    sizes = {m: len((BENCH / f"{m}.py").read_text().splitlines()) for m in MODULES}
    assert max(sizes.values()) <= 400, sizes
