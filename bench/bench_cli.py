"""CLI start-up benchmark (issue 2 §6). Prints each figure next to its target.

    `glider route explain "hi"` as a whole process   p50 <= 250 ms
    `glider --help`                                  p50 <= 150 ms

Each command runs `--runs` times (after one warm-up run) through the installed console script next to
this interpreter. Both the wall time and the child's CPU time (user + system, from getrusage) are
printed: on a shared machine the wall clock also counts time spent waiting for a core.
`PYTHONDONTWRITEBYTECODE` is removed from the children's environment, as on a user's machine: the
warm-up run writes the bytecode cache, the measured runs read it.

`--breakdown` also times the floors both commands stand on, the same way: the interpreter starting
and exiting (`python -c pass`) and importing Typer, the CLI framework the design card keeps (then
`gc.freeze()`, as `glider_cli.cli.main` does before running a command, so exit costs the same); what a
command costs above the Typer floor is Glider's own start-up and work.

Usage: .venv/bin/python bench/bench_cli.py [--runs 15] [--breakdown]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GLIDER = Path(sys.executable).with_name("glider")
TYPER_FLOOR = "import typer, gc; gc.freeze()"


def run(cmd: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--breakdown", action="store_true", help="Also time the Python and Typer floors.")
    args = parser.parse_args()
    if not GLIDER.exists():
        sys.exit(f"{GLIDER} not found: install the project first (pip install -e '.[dev]')")
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GLIDER_HOME": home}
        env.pop("GLIDER_CONFIG", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        floor = 0.0
        if args.breakdown:
            for label, code in [("python -c pass", "pass"), ("import typer; gc.freeze()", TYPER_FLOOR)]:
                floor, floor_cpu = run([sys.executable, "-c", code], args.runs, env)
                print(f"{label:<28} wall p50 {floor:6.1f} ms  cpu p50 {floor_cpu:6.1f} ms  (floor)")
        for label, cmd, target in [
            ('glider route explain "hi"', [str(GLIDER), "route", "explain", "hi"], 250.0),
            ("glider --help", [str(GLIDER), "--help"], 150.0),
        ]:
            wall, cpu = run(cmd, args.runs, env)
            verdict = "OK" if wall <= target else "MISSED"
            above = f"  ({wall - floor:+.1f} ms above import typer)" if args.breakdown else ""
            print(
                f"{label:<28} wall p50 {wall:6.1f} ms  cpu p50 {cpu:6.1f} ms  "
                f"target <= {target:.0f} ms: {verdict}{above}"
            )


if __name__ == "__main__":
    main()
