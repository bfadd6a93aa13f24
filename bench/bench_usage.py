"""`glider context usage` on weeks of traffic: prints each figure next to its target (issue 28 §4).

    .venv/bin/python bench/bench_usage.py [--events N] [--days D] [--runs R] [--home DIR]

A home of `--events` (200,000) events over `--days` (14) UTC days is generated in a temporary
directory (bench/store_scale_home.py; `--home` reuses one made before), then `glider context usage
--json` (and `--by session`, `--by rule`) runs as a whole process, `--runs` times after the first
run, which reads every day file and keeps each day's digest (`store.usage_read`); that first run is
timed and printed too (no target). Wall time and peak RSS come from `resource.getrusage
(RUSAGE_CHILDREN)` in a wrapper process per run (bench_store_scale.py's). Targets: ≤ 300 ms (the
median), ≤ 150 MB (the peak). The load average says how busy the machine was.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store_scale import GLIDER, one_run, report
from store_scale_home import generate

WALL_MS = 300.0
RSS_MB = 150.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--home", type=Path, default=None, help="A home generated before (kept).")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="glider-bench-usage-") as tmp:
        home = args.home or Path(tmp) / "home"
        if args.home is None or not (home / "context").is_dir():
            made = generate(home, events=args.events, days=args.days)
            print(f"home     {made['events']:,} events, {made['turns']:,} turns over {made['days']} days")
        env = {**os.environ, "GLIDER_HOME": str(home)}
        for kept in (home / "context" / "index").glob("*.usage"):  # the first run below makes them
            kept.unlink()
        ok = True
        first = one_run([*GLIDER, "context", "usage", "--json"], env)
        report("context usage --json (first: digests kept)", [first], None, None)
        for by in ("day", "session", "rule"):
            argv = [*GLIDER, "context", "usage", "--by", by, "--json"]
            runs = [one_run(argv, env) for _ in range(args.runs)]
            ok = report(f"context usage --by {by} --json", runs, WALL_MS, RSS_MB) and ok
        print(f"target   wall ≤ {WALL_MS:.0f} ms (median), peak RSS ≤ {RSS_MB:.0f} MB")
        print(f"load     {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
