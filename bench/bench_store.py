"""Speed of the context store: prints each figure next to its target (issue 4 §8).

    .venv/bin/python bench/bench_store.py [--quick] [--redaction]   (--redaction: only that part)

- append: events/s through `log.append_events` in batches of 1000 (target ≥ 100k/s), and through
  `EventWriter.emit` + flush (the path `glider serve` uses);
- warm load: 500k events over 2 days read back by `EventWriter.warm_load` (target ≤ 1.5 s);
- query: a keyword query over 100k entities with the index built (target ≤ 100 ms, median of 20);
- index: index-tree + index-symbols of this repository, cold (target ≤ 2 s);
- redaction: the fast path on clean text and on a clean event's JSON (what every event pays), and
  the full pass over text that holds a secret (no target; printed to compare before and after).
Everything is written under a temporary GLIDER_HOME that is removed at the end.
"""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path

from glider_cli.config.settings import ContextSettings
from glider_cli.paths import Paths
from glider_cli.store.entities.graph import Edge, Entity, EntityStore, Graph
from glider_cli.store.entities.index_symbols import index_symbols
from glider_cli.store.entities.index_tree import index_tree
from glider_cli.store.eventlog import log
from glider_cli.store.eventlog.events import IdGenerator, format_ts, make_event
from glider_cli.store.eventlog.writer import EventWriter
from glider_cli.store.queries.query import run
from glider_cli.store.queries.search import SearchIndex

REPO = Path(__file__).resolve().parent.parent


def report(name: str, value: float, unit: str, target: str, ok: bool) -> None:
    print(f"{name:<44} {value:>12,.1f} {unit:<9} target {target:<12} {'OK' if ok else 'MISSED'}")


def _events(n: int, t0: float, spread_s: float) -> list[dict[str, object]]:
    ids = IdGenerator(lambda: t0)
    out = []
    for i in range(n):
        t = t0 + spread_s * i / n
        out.append(
            make_event(
                ids(),
                "RouteDecided",
                format_ts(t),
                f"turn-{i % 500}",
                {
                    "target": "local",
                    "backend": "ollama",
                    "model": "qwen",
                    "rule": "small",
                    "request": {"estimated_tokens": i % 4000, "has_tools": bool(i % 2)},
                },
            )
        )
    return out


def bench_append(home: Path, n: int) -> None:
    context = Paths(home=home / "a").context
    events = _events(n, time.time(), 1.0)
    t = time.perf_counter()
    for i in range(0, n, 1000):
        log.append_events(context, events[i : i + 1000])
    dt = time.perf_counter() - t
    report(f"append_events, {n:,} in batches of 1000", n / dt, "events/s", ">= 100,000", n / dt >= 100_000)

    w = EventWriter(Paths(home=home / "b"))
    w.start()
    data = {"target": "local", "backend": "ollama", "model": "qwen", "rule": "small"}
    t = time.perf_counter()
    for i in range(n):
        w.emit("RouteDecided", data, turn_id=f"turn-{i % 500}")
    emit_dt = time.perf_counter() - t
    w.flush()
    total = time.perf_counter() - t
    w.close()
    print(f"{'EventWriter.emit (caller side), ' + format(n, ','):<44} {n / emit_dt:>12,.1f} events/s")
    print(f"{'EventWriter emit + flush to disk':<44} {n / total:>12,.1f} events/s")


def bench_warm_load(home: Path, n: int) -> None:
    paths = Paths(home=home / "w")
    now = time.time()
    events = _events(n, now - 86_400, 86_000)  # yesterday and today: two files
    for i in range(0, n, 10_000):
        log.append_events(paths.context, events[i : i + 10_000])
    w = EventWriter(paths, ContextSettings(warm_load_days=2))
    t = time.perf_counter()
    lines = w.warm_load()
    dt = time.perf_counter() - t
    assert lines == n and w.stats.warm_loaded == w.settings.max_events, (lines, w.stats)
    report(f"warm load of {n:,} events (2 days, ring filled)", dt, "s", "<= 1.5 s", dt <= 1.5)
    t = time.perf_counter()
    parsed = sum(1 for _ in log.iter_events(paths.context, days=2))
    dt = time.perf_counter() - t
    print(f"{'  full parse of all ' + format(parsed, ',') + ' (CLI views)':<44} {dt:>12,.1f} s")


WORDS = (
    "parse",
    "token",
    "route",
    "decide",
    "stream",
    "event",
    "store",
    "graph",
    "index",
    "query",
    "sticky",
    "local",
    "cloud",
    "model",
    "backend",
    "proxy",
    "server",
    "client",
    "config",
    "profile",
    "rule",
    "script",
    "delegate",
    "summary",
    "episode",
    "turn",
    "file",
    "symbol",
    "writer",
    "reader",
    "cache",
    "buffer",
    "frame",
    "relay",
    "fallback",
    "timeout",
    "retry",
    "budget",
)


def bench_query(n: int) -> None:
    rnd = random.Random(7)
    g = Graph()
    prev = ""
    for i in range(n):
        a, b, c = rnd.choice(WORDS), rnd.choice(WORDS), rnd.choice(WORDS)
        name = f"{a}_{b}{c.capitalize()}{i % 97}"
        rel = f"src/{a}/{b}/{c}_{i % 1000}.py"
        eid = f"sym:/r/{rel}#{name}{i}"
        g.add_entity(
            Entity(
                eid,
                "symbol",
                name,
                f"/r/{rel}",
                "EXTRACTED",
                None,
                {"rel": rel, "qualname": name, "line": i % 500 + 1},
            )
        )
        if prev and i % 10:
            g.add_edge(Edge(prev, eid, "contains", "EXTRACTED"))
        prev = eid
    t = time.perf_counter()
    idx = SearchIndex(g)
    build = time.perf_counter() - t
    print(f"{'index build, ' + format(n, ',') + ' entities':<44} {build * 1000:>12,.1f} ms")
    queries = [
        "* parse",
        "* sticky route",
        "* stream OR relay",
        "* kind=symbol limit=50 episode summary",
        "* fallbak",
        "* writer_cache",
    ]
    times = []
    for _ in range(20 // len(queries) + 1):
        for q in queries:
            t = time.perf_counter()
            run(g, q, idx)
            times.append(time.perf_counter() - t)
    med = statistics.median(times) * 1000
    report(f"keyword query over {n:,} entities (median)", med, "ms", "<= 100 ms", med <= 100)
    print(f"{'  slowest of those queries':<44} {max(times) * 1000:>12,.1f} ms")


def bench_index(home: Path) -> None:
    store = EntityStore(Paths(home=home / "i"))
    t = time.perf_counter()
    tree = index_tree(store, REPO, turn_id="bench")
    syms = index_symbols(store, REPO)
    dt = time.perf_counter() - t
    report(f"index this repo ({tree.files} files, {syms.symbols} symbols)", dt, "s", "<= 2 s", dt <= 2.0)
    t = time.perf_counter()
    index_tree(store, REPO, turn_id="bench")
    index_symbols(store, REPO)
    print(f"{'  re-index, nothing changed':<44} {time.perf_counter() - t:>12,.3f} s")


CLEAN_PROMPT = (
    "Can you look at how the session cache handles expiry when two workers write at the same moment? "
    "The cache stores each entry with a timestamp and the worker id; the later write wins, and the expiry "
    "check compares the stored timestamp with the current time minus the TTL. "
) * 8  # ~2.3 KB of ordinary English, no key shapes


def _per_call_us(fn: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def bench_redaction() -> None:
    import orjson

    from glider_cli.store.eventlog.redact import may_need_redaction, redact_text, text_may_need_redaction

    event = orjson.dumps(
        {
            "target": "local",
            "rule": "small_context_local",
            "backend": "ollama",
            "request": {"estimated_tokens": 2752, "has_tools": False, "complexity_score": 12},
            "trace": [
                {"rule": f"rule{i}", "priority": i, "matched": False, "reason": "no match"} for i in range(8)
            ],
            "ask": CLEAN_PROMPT[:400],
        }
    )
    secret = CLEAN_PROMPT + " aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY and more text"
    kb = len(CLEAN_PROMPT) / 1024
    rows = (
        (
            "redaction fast path, clean text (per KB)",
            lambda: text_may_need_redaction(CLEAN_PROMPT),
            20000,
            kb,
        ),
        ("redact_text, clean text (per KB)", lambda: redact_text(CLEAN_PROMPT), 20000, kb),
        (
            f"may_need_redaction, clean event JSON ({len(event)} B)",
            lambda: may_need_redaction(event),
            20000,
            1,
        ),
        ("redact_text, text with a secret (per KB)", lambda: redact_text(secret), 2000, kb),
    )
    for label, fn, number, per in rows:
        print(f"{label:<44} {_per_call_us(fn, number) / per:>12,.2f} us")


def main() -> None:
    quick = "--quick" in sys.argv
    if "--redaction" in sys.argv:
        bench_redaction()
        return
    home = Path(tempfile.mkdtemp(prefix="glider-bench-"))
    try:
        bench_append(home, 20_000 if quick else 200_000)
        bench_warm_load(home, 50_000 if quick else 500_000)
        bench_query(10_000 if quick else 100_000)
        bench_index(home)
        bench_redaction()
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
