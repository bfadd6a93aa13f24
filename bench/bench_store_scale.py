"""Store views at the scale of weeks of traffic: prints each figure next to its target (issue 17 §1).

    .venv/bin/python bench/bench_store_scale.py [--events N] [--days D] [--runs R] [--requests N]

A home of `--events` (200,000) events over `--days` (14) UTC days is generated in a temporary
directory (bench/store_scale_home.py: the real Router, turn lifecycle and EventWriter), then:
- each view as a whole process, `--runs` times after one warm-up: wall time and peak RSS from
  `resource.getrusage(RUSAGE_CHILDREN)` in a wrapper process per run (targets: ≤ 300 ms, ≤ 150 MB):
  `glider context turns --json`, `glider context query '*' kind=symbol …`, `glider context turn <id>`;
  the first runs after generation (the first full read compacts the past days' index), `--all` too;
- `glider serve` on that home, in front of the fake upstream (tests/fake_upstream.py): its RSS after
  every context view was called once (target ≤ 150 MB); then serve + its store worker together while
  the dashboard's views are polled (`--poll-rounds` rounds of what the Overview, Sessions and Context
  pages ask for: target ≤ 150 MB for both, after every view and at the end, with how many workers were
  recycled over the shared budget); and the proxy's p50 at c=1 with and without a
  poller on `GET /api/context/turns` (every `--poll` seconds; 0: back to back), in alternating
  rounds (target: moves ≤ 10 %). Servers are pinned as bench/bench_proxy.py pins them.
Medians are printed with the min and max; the load average says how busy the machine was.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_proxy import BODY, HEADERS, cpu_split, free_port, pin, rss_mb, wait_port
from store_scale_home import generate

ROOT = Path(__file__).resolve().parent.parent
# The fake serves the model bench_proxy's requests name (a strict fake answers 404 to any other).
FAKE = textwrap.dedent(
    """
    import sys, uvicorn
    sys.path.insert(0, {tests!r})
    from fake_upstream import FakeUpstream
    app = FakeUpstream(models=["claude-bench"]).app
    uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
    """
)
PY = sys.executable
GLIDER = [PY, "-m", "glider_cli"]
MEASURE = textwrap.dedent(
    """
    import json, resource, subprocess, sys, time
    t = time.perf_counter()
    p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
                      "rc": p.returncode, "err": p.stderr.decode()[-300:]}))
    """
)


def store_workers(pid: int) -> list[int]:
    """The server's store worker processes (children of any of its threads, started by `spawn`)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for kid in (task / "children").read_text().split():
            try:
                if b"multiprocessing.spawn" in Path(f"/proc/{kid}/cmdline").read_bytes():
                    out.append(int(kid))
            except OSError:
                continue
    return out


def one_run(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run([PY, "-c", MEASURE, *argv], env=env, capture_output=True, text=True, check=True)
    res: dict[str, float] = json.loads(out.stdout)
    if res["rc"] != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {res['err']}")
    return res


def spread(values: list[float], fmt: str) -> str:
    mid, lo, hi = (format(v, fmt) for v in (statistics.median(values), min(values), max(values)))
    return f"{mid} (min {lo}, max {hi})"


def report(
    label: str, runs: list[dict[str, float]], wall_target: float | None, rss_target: float | None
) -> bool:
    wall = [r["wall"] * 1000 for r in runs]
    rss = [r["rss_mb"] for r in runs]
    cpu = [r["cpu"] * 1000 for r in runs]
    ok = (wall_target is None or statistics.median(wall) <= wall_target) and (
        rss_target is None or max(rss) <= rss_target
    )
    verdict = "" if wall_target is None else ("OK" if ok else "MISSED")
    print(
        f"{label:<46} wall {spread(wall, '.0f')} ms, cpu {spread(cpu, '.0f')} ms, "
        f"peak RSS {max(rss):.0f} MB {verdict}"
    )
    return ok


async def p50(url: str, n: int, poll: str | None = None, every: float = 0.2) -> tuple[float, int]:
    """The proxy's p50 at c=1 over `n` requests; with `poll`, that path is fetched every `every` seconds
    meanwhile (from this same loop: a poller process would compete with this client for its CPU).
    Returns (p50 ms, polls made)."""
    out: list[float] = []
    polls = 0
    async with aiohttp.ClientSession() as s:

        async def poller() -> None:
            nonlocal polls
            assert poll is not None
            while True:
                async with s.get(url + poll) as r:
                    await r.read()
                    if r.status != 200:
                        raise SystemExit(f"{poll} answered {r.status}")
                polls += 1
                await asyncio.sleep(every)

        task = asyncio.create_task(poller()) if poll else None
        await asyncio.sleep(0.2 if poll else 0)
        for _ in range(n):
            t0 = time.perf_counter()
            async with s.post(url + "/v1/messages", data=BODY, headers=HEADERS) as r:
                await r.read()
                if r.status != 200:
                    raise SystemExit(f"proxy answered {r.status}")
            out.append((time.perf_counter() - t0) * 1000)
        if task is not None:
            task.cancel()
    return statistics.median(out), polls


def views(home: Path, runs: int) -> tuple[bool, str]:
    env = {**os.environ, "GLIDER_HOME": str(home)}
    first = one_run([*GLIDER, "context", "turns", "--json"], env)
    report("context turns --json, the first run", [first], None, None)
    compacting = one_run([*GLIDER, "context", "turns", "--all", "--json"], env)
    report("context turns --all, first (compacts past days)", [compacting], None, None)
    all_turns = json.loads(
        subprocess.run(
            [*GLIDER, "context", "turns", "--all", "--json"], env=env, capture_output=True, check=True
        ).stdout
    )
    turn = all_turns[len(all_turns) // 2]["turn_id"]
    ok = True
    if runs <= 0:  # --skip-views
        return ok, turn
    cases = [
        ("context turns --json", ["context", "turns", "--json"], True),
        (
            "context query '*' kind=symbol parse --json",
            ["context", "query", "*", "kind=symbol", "parse", "--json"],
            True,
        ),
        (f"context turn <id> --json ({len(all_turns):,} turns)", ["context", "turn", turn, "--json"], True),
        ("context turns --all --json (every turn)", ["context", "turns", "--all", "--json"], False),
        (
            "context query <turn> goal OR plan --json",
            ["context", "query", turn, "goal", "OR", "plan", "--json"],
            False,
        ),
    ]
    for label, args, targeted in cases:
        one_run([*GLIDER, *args], env)  # warm-up
        measured = [one_run([*GLIDER, *args], env) for _ in range(runs)]
        good = report(label, measured, 300 if targeted else None, 150 if targeted else None)
        ok = ok and (good or not targeted)
    return ok, turn


# What the dashboard's pages ask for (server/ui/static: Overview, Sessions, Context).
DASHBOARD = (
    "/api/events/stats?window=hour",
    "/api/events/stats?window=day",
    "/api/context/episodes?limit=8",
    "/api/events/requests?limit=25",
    "/api/events/sessions",
    "/api/context/episodes?limit=50",
    "/api/context/query?q={turn}%20limit=20",
    "/api/context/query?q=*%20parse",
    "/api/context/explain?turn_id=*&id=glider_cli/store/context_store.py",
    "/api/context/communities?turn_id={turn}",
)


def dashboard(url: str, glider: int, turn: str, rounds: int) -> bool:
    """serve + store worker RSS while the dashboard's views are polled (target ≤ 150 MB together)."""
    import urllib.error
    import urllib.request

    peak, worst = 0.0, ""
    started = set(store_workers(glider))
    seen = set(started)
    for _ in range(rounds):
        for path in DASHBOARD:
            path = path.format(turn=turn)
            try:
                with urllib.request.urlopen(url + path, timeout=120) as r:
                    r.read()
            except urllib.error.HTTPError as exc:
                raise SystemExit(f"GET {path}: {exc.code} {exc.read()[:300]!r}") from None
            kids = store_workers(glider)
            seen.update(kids)
            total = rss_mb(glider) + sum(rss_mb(k) for k in kids)
            if total > peak:
                peak, worst = total, path
    kids = store_workers(glider)
    serve_mb, worker_mb = rss_mb(glider), sum(rss_mb(k) for k in kids)
    end = serve_mb + worker_mb
    good = end <= 150 and peak <= 150
    print(
        f"{'serve + store worker RSS, dashboard polled':<46} {end:.0f} MB (serve {serve_mb:.0f} + worker "
        f"{worker_mb:.0f}) after {rounds} rounds of {len(DASHBOARD)} views, at most {peak:.0f} MB after "
        f"a view ({worst.split('?')[0]}), target <= 150 MB {'OK' if good else 'MISSED'} "
        f"({len(seen - started)} workers started)"
    )
    return good


def serve(
    home: Path, turn: str, requests: int, rounds: int, poll: float, share_core: bool, poll_rounds: int = 5
) -> bool:
    load_cpus, sut_cpus = cpu_split()
    if load_cpus is not None:
        try:
            os.sched_setaffinity(0, load_cpus)
        except OSError:
            load_cpus = sut_cpus = None
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["GLIDER_HOME"] = str(home)
    procs: list[subprocess.Popen[bytes]] = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="glider-bench-") as tmp:
        try:
            up = free_port()
            procs.append(
                subprocess.Popen([PY, "-c", FAKE.format(tests=str(ROOT / "tests"), port=up)], env=env)
            )
            wait_port(up, procs[-1])
            cfg = Path(tmp) / "bench.yaml"
            cfg.write_text(
                f"extends: default\nbackends:\n  origin: {{type: origin, side: cloud, base_url: 'http://127.0.0.1:{up}'}}\n"
            )
            port = free_port()
            procs.append(
                subprocess.Popen(
                    [*GLIDER, "serve", "--config", str(cfg), "--port", str(port)],
                    env=env,
                    stderr=subprocess.DEVNULL,
                )
            )
            pin(procs[-1], sut_cpus)
            wait_port(port, procs[-1])
            glider = procs[-1].pid
            url = f"http://127.0.0.1:{port}"
            before = rss_mb(glider)
            worker_peak = 0.0
            import urllib.error
            import urllib.request

            for path in (
                "/api/context/recent",
                "/api/context/turns",
                f"/api/context/turns/{turn}",
                "/api/context/episodes",
                f"/api/context/query?q={turn}%20goal%20OR%20plan",
                "/api/context/query?q=*%20parse",
                "/api/context/explain?turn_id=*&id=glider_cli/store/context_store.py",
                f"/api/context/communities?turn_id={turn}",
                "/api/context/export",
            ):
                try:
                    with urllib.request.urlopen(url + path, timeout=120) as r:
                        r.read()
                except urllib.error.HTTPError as exc:
                    raise SystemExit(f"GET {path}: {exc.code} {exc.read()[:300]!r}") from None
                worker_peak = max([worker_peak, *(rss_mb(k) for k in store_workers(glider))])
            after = rss_mb(glider)
            good = after <= 150
            ok = ok and good
            print(
                f"{'serve RSS: started / after every view':<46} {before:.0f} MB / {after:.0f} MB, "
                f"target <= 150 MB {'OK' if good else 'MISSED'} (its store worker after a view: at most "
                f"{worker_peak:.0f} MB; one above 150 MB is replaced)"
            )
            ok = dashboard(url, glider, turn, poll_rounds) and ok
            if load_cpus is not None and not share_core:
                # The worker inherited the server's CPU: give it the rest of the machine, as an
                # unpinned system would (`--share-core` keeps them on one CPU: the worst case).
                for k in store_workers(glider):
                    os.sched_setaffinity(k, load_cpus)
            quiet: list[float] = []
            polled: list[float] = []
            control: list[float] = []
            polls = 0
            for _ in range(rounds):
                quiet.append(asyncio.run(p50(url, requests))[0])
                got, n = asyncio.run(p50(url, requests, "/api/context/turns", poll))
                polled.append(got)
                polls += n
                control.append(asyncio.run(p50(url, requests, "/healthz", poll))[0])
            q, p, c = (statistics.median(x) for x in (quiet, polled, control))
            move = 100 * (p - q) / q
            good = move <= 10
            ok = ok and good
            rate = "back to back" if poll == 0 else f"every {poll:g} s"
            print(
                f"{'proxy p50 c=1 quiet / turns polled ' + rate:<46} {q:.3f} ms / {p:.3f} ms: {move:+.1f} %, "
                f"target <= +10 % {'OK' if good else 'MISSED'} ({polls} polls; polling /healthz instead: "
                f"{c:.3f} ms, {100 * (c - q) / q:+.1f} %)"
            )
        finally:
            for pr in procs:
                pr.terminate()
            for pr in procs:
                try:
                    pr.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pr.kill()
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--requests", type=int, default=400, help="requests per p50 series")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--poll", type=float, default=0.2, help="seconds between polls (0: back to back)")
    ap.add_argument("--share-core", action="store_true", help="leave the store worker on the server's CPU")
    ap.add_argument("--poll-rounds", type=int, default=5, help="rounds of the dashboard's views")
    ap.add_argument("--skip-views", action="store_true", help="skip the whole-process view runs")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; cpus: {os.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="glider-scale-") as tmp:
        home = Path(tmp) / "home"
        made = generate(home, args.events, args.days)
        size = sum(p.stat().st_size for p in (home / "context").glob("events-*.jsonl"))
        print(
            f"home: {made['events']:,} events, {made['turns']:,} turns, {args.days} day files, "
            f"{size / 1e6:.0f} MB of JSONL (generated in {made['seconds']} s)"
        )
        ok, turn = views(home, 0 if args.skip_views else args.runs)
        served = serve(home, turn, args.requests, args.rounds, args.poll, args.share_core, args.poll_rounds)
        ok = served and ok
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
