"""Router decision benchmark (issue 2 §6). Prints each figure next to its target.

A "typical" request is 20 messages of a coding conversation (user prompts of ~150 characters,
assistant answers of ~450, English text), a ~3 KB system prompt and no tools, worded so that no
classifier pattern matches: the decision falls through every rule down to `small_context_local`,
so every rule (both bundled scripts included) is evaluated.

    default profile minus its two script rules   p50 <= 50 us
    default profile with its two script rules    p50 <= 50 us back to back (issue 29; was 200)
    the same, requests `--gap` seconds apart     p50 <= 100 us (issue 29: 5 s apart)

The default profile's two scripts are evaluated as Python (sandbox.native: they are in the subset
of Starlark that means the same in Python), so those rows make no Starlark call. For comparison,
rows marked "via Starlark" evaluate the very same scripts through the in-process Starlark
interpreter (sandbox.inprocess), as every decision did before: the router is built with the native
compiler turned off (`via_starlark`).

Beside that spaced row, in the same run and timed the same way (one call after each `--gap` sleep,
interleaved with the decisions), the floor: what any code pays on this machine after an idle gap.
A reference workload of plain Python (no Glider code: dicts, strings, json, re), sized so that its
back-to-back cost is about the decision's, and one no-op Starlark call (starlark-pyo3 alone, which
a decision that reached a script rule made once before the bundled scripts ran as Python). Each is
printed with its back-to-back p50, its spaced p50 and their ratio; the decision's ratio beside the
reference's says how much of the spaced remainder is the machine's own wake-up cost and how much is
ours.

Also printed (no target): the same request with non-ASCII text, and a heavy Claude-Code-like request
(20 messages of ~3 KB each), because a script's cost grows with the bytes it is handed; and single
requests `--gap` seconds apart (decide, and parse and decide, timed one by one), as requests come in
real use, when the process has gone idle before each one: without scripts and with the two.

The bundled profiles' scripts run in-process (as Python, else through glider_cli.sandbox.inprocess);
a user's script runs in the sandbox worker process, and a decision that reaches it pays one pipe
round trip. That per-call cost is printed on its own: the round trip of one no-op script on a
one-message request (the fixed cost of the worker), and the default profile's two scripts sent to
the worker on the typical request.

Usage: .venv/bin/python bench/bench_router.py [--n 5000] [--gap 5 --spaced 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
import timeit
from collections.abc import Callable
from pathlib import Path

from glider_cli.config.load import load_config
from glider_cli.config.model import Config
from glider_cli.domain import ChatRequest
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router
from glider_cli.values import replace

PROFILES = Path(__file__).resolve().parent.parent / "profiles"
USER = "Can you look at how the session cache handles expiry when two workers write at the same moment? {i}"
ASSISTANT = (
    "The cache stores each entry with a timestamp and the worker id. When two workers write, the later "
    "write wins, and the expiry check compares the stored timestamp with the current time minus the TTL. "
    "I looked at the code path in the store module and the helper that computes the key. The helper "
    "lowercases the session id and joins it with the tenant name, which is fine. Step {i} is done. "
)


def request(*, user: str = USER, assistant: str = ASSISTANT, scale: int = 1) -> ChatRequest:
    return parse_request("anthropic", request_body(user=user, assistant=assistant, scale=scale))


def request_body(*, user: str = USER, assistant: str = ASSISTANT, scale: int = 1) -> dict[str, object]:
    messages = []
    for i in range(10):
        messages.append({"role": "user", "content": user.format(i=i) * scale})
        messages.append({"role": "assistant", "content": assistant.format(i=i) * scale})
    messages.append({"role": "user", "content": "Good. Where should we look next in that area?"})
    messages = messages[-20:]
    body = {
        "model": "claude-sonnet-5-5",
        "system": "You are a coding agent. " * 130,
        "messages": messages,
        "max_tokens": 4096,
        "stream": True,
    }
    return body


def measure(
    router: Router, req: ChatRequest, samples: int, batch: int = 50
) -> tuple[float, float, float, str]:
    """(p50, best, p99) microseconds per decision, and the rule in control.

    Each sample times `batch` decisions back to back (perf_counter) and divides: timing single
    calls adds the timer's own cost and the scheduler's jitter on a shared machine to every figure.
    """
    for _ in range(200):
        router.decide(req)
    per: list[float] = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(batch):
            d = router.decide(req)
        per.append((time.perf_counter() - t0) / batch * 1e6)
    per.sort()
    return statistics.median(per), per[0], per[int(len(per) * 0.99)], d.rule


def spaced(router: Router, samples: int, gap_s: float, *, parse: bool) -> tuple[float, float, float, str]:
    """(p50, best, p99) microseconds of deciding the typical request (with `parse`, of parsing it
    and deciding it), one request every `gap_s`, as requests come in real use: the processes have
    gone idle before each one."""
    body = request_body()
    for _ in range(50):
        router.decide(parse_request("anthropic", body))
    per: list[float] = []
    for _ in range(samples):
        time.sleep(gap_s)
        t0 = time.perf_counter()
        d = router.decide(parse_request("anthropic", body) if parse else typical_parsed(body))
        per.append((time.perf_counter() - t0) * 1e6)
    per.sort()
    return statistics.median(per), per[0], per[int(len(per) * 0.99)], d.rule


_PARSED: dict[int, ChatRequest] = {}


def typical_parsed(body: dict[str, object]) -> ChatRequest:
    """The request parsed once (a decision-only row times the router alone)."""
    req = _PARSED.get(id(body))
    if req is None:
        req = _PARSED[id(body)] = parse_request("anthropic", body)
    return req


_WORDS = (
    "cache",
    "expiry",
    "worker",
    "session",
    "tenant",
    "helper",
    "store",
    "module",
    "timestamp",
    "deadline",
)


def reference(rounds: int) -> int:
    """Plain Python, no Glider code: the kinds of work a decision does (dict and list building,
    string scans, a JSON dump, a regex search), `rounds` times."""
    found = 0
    for i in range(rounds):
        text = " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(12))
        record = {"i": i, "words": text.split(), "upper": text.upper(), "n": len(text)}
        found += len(json.dumps(record)) + (1 if _REF_PATTERN.search(text) else 0)
        found += text.lower().count("e") + sum(1 for w in record["words"] if w.startswith("s"))
    return found


_REF_PATTERN = re.compile(r"\b(deadline|session)\s+\w+")


def back_to_back(call: Callable[[], object], samples: int, batch: int = 50) -> float:
    """p50 microseconds per call, timed as `measure` times a decision (batches, divided)."""
    for _ in range(200):
        call()
    per: list[float] = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(batch):
            call()
        per.append((time.perf_counter() - t0) / batch * 1e6)
    return statistics.median(per)


def via_starlark(config: Config) -> Router:
    """A router whose bundled scripts go through the in-process Starlark interpreter, as before the
    native evaluator (sandbox.native): its compiler is switched off while the rules compile."""
    import glider_cli.sandbox.native as native

    compile_native = native.compile_native
    native.compile_native = lambda *args, **kwargs: None
    try:
        return Router(config)
    finally:
        native.compile_native = compile_native


def floor_calls(decision_us: float, samples: int) -> dict[str, Callable[[], object]]:
    """The floor's workloads: the reference sized to about `decision_us` back to back, and a
    no-op Starlark call with the typical request's size of argument."""
    import starlark as sl

    rounds = 1
    for _ in range(6):  # settle the size: cost grows linearly with the rounds
        us = back_to_back(lambda n=rounds: reference(n), max(10, samples // 4))
        rounds = max(1, round(rounds * decision_us / us))
    module = sl.Module()
    sl.eval(module, sl.parse("noop.star", "def f(payload):\n    return None\n"), sl.Globals.standard())
    frozen = module.freeze()
    text = "".join(m.content for m in request().messages)
    return {
        f"plain Python reference ({rounds} rounds)": lambda: reference(rounds),
        "one no-op Starlark call (starlark-pyo3)": lambda: frozen.call("f", text),
    }


def spaced_with_floor(
    router: Router, samples: int, gap_s: float, floor: dict[str, Callable[[], object]]
) -> tuple[tuple[float, float, float, str], dict[str, float]]:
    """`spaced(parse=False)`, with each floor workload timed the same way after its own gap,
    interleaved with the decisions (so the machine's state is the same for all)."""
    body = request_body()
    req = typical_parsed(body)
    for _ in range(50):
        router.decide(req)
    per: list[float] = []
    floor_per: dict[str, list[float]] = {label: [] for label in floor}
    for _ in range(samples):
        time.sleep(gap_s)
        t0 = time.perf_counter()
        d = router.decide(typical_parsed(body))
        per.append((time.perf_counter() - t0) * 1e6)
        for label, call in floor.items():
            time.sleep(gap_s)
            t0 = time.perf_counter()
            call()
            floor_per[label].append((time.perf_counter() - t0) * 1e6)
    per.sort()
    row = (statistics.median(per), per[0], per[int(len(per) * 0.99)], d.rule)
    return row, {label: statistics.median(v) for label, v in floor_per.items()}


def per_call(samples: int) -> list[tuple[str, float, float, float]]:
    """(label, p50, best, p99) microseconds of `Sandbox.call` alone."""
    from glider_cli.router.scripts import build_payload
    from glider_cli.sandbox.supervisor import Sandbox

    box = Sandbox()
    try:
        noop = box.load("def evaluate(request):\n    return None\n", "noop.star")
        pair = [
            box.load((PROFILES / "scripts" / name).read_text(), name)
            for name in ("swarm_fanout.star", "refactor_local.star")
        ]
        typical = request()
        rows = []
        for label, ids, payload in (
            ("worker round trip, no-op script, tiny", [noop], build_payload({}, ["user"], ["hi"])),
            (
                "worker call, the 2 default scripts, typical",
                pair,
                build_payload(
                    {"model": typical.model, "stream": True, "estimated_tokens": 1, "has_tools": False},
                    [m.role for m in typical.messages],
                    [m.content for m in typical.messages],
                ),
            ),
        ):
            for _ in range(200):
                box.call(ids, payload.data)
            per: list[float] = []
            for _ in range(samples):
                t0 = time.perf_counter()
                for _ in range(20):
                    box.call(ids, payload.data)
                per.append((time.perf_counter() - t0) / 20 * 1e6)
            per.sort()
            rows.append((label, statistics.median(per), per[0], per[int(len(per) * 0.99)]))
        return rows
    finally:
        box.close()


def print_floor(
    spaced_us: float, b2b_us: float, floor_b2b: dict[str, float], floor_spaced: dict[str, float], gap: str
) -> None:
    """The floor beside the spaced row: back to back, spaced, ratio; and what the decision would
    cost spaced if it paid only the reference's ratio (the rest is the decision's own)."""
    print(f"  floor, timed the same way in the same run ({gap} vs back to back):")
    ratio = spaced_us / b2b_us if b2b_us else float("nan")
    label = "the decision (default, 2 scripts native)"
    print(f"    {label:<44} {b2b_us:6.1f} -> {spaced_us:6.1f} us  x{ratio:4.1f}")
    for label in floor_b2b:
        b, s = floor_b2b[label], floor_spaced[label]
        print(f"    {label:<44} {b:6.1f} -> {s:6.1f} us  x{s / b if b else float('nan'):4.1f}")
    ref, star = list(floor_b2b)[:2]
    ref_ratio = floor_spaced[ref] / floor_b2b[ref] if floor_b2b[ref] else float("nan")
    at_floor = b2b_us * ref_ratio
    print(
        f"    the decision at the reference's ratio: {at_floor:.1f} us ({gap}); "
        f"beyond it: {spaced_us - at_floor:+.1f} us"
    )
    # Had the decision made its one Starlark call (before the scripts ran as Python): that call's
    # own spaced cost, plus the rest of the decision at the reference's ratio.
    with_star = floor_spaced[star] + max(0.0, b2b_us - floor_b2b[star]) * ref_ratio
    print(
        f"    had it made one Starlark call (the old way): {with_star:.1f} us; "
        f"the decision beside it: {spaced_us - with_star:+.1f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument(
        "--gap", type=float, default=1.0, help="seconds between the spaced rows' requests (issue 29: 5)"
    )
    parser.add_argument("--spaced", type=int, default=30, help="requests per spaced row")
    args = parser.parse_args()
    config = load_config(profile="default")
    no_scripts = replace(config, rules=tuple(r for r in config.rules if r.trigger.type != "script"))
    # The same two scripts evaluated as a user's would be: in the supervised worker (the old way).
    in_worker = replace(
        config,
        rules=tuple(
            replace(r, trigger=replace(r.trigger, bundled=False)) if r.trigger.type == "script" else r
            for r in config.rules
        ),
    )
    typical = request()
    print(f"typical request: {len(typical.messages)} messages, ~{typical.estimated_tokens} tokens")
    starlark = via_starlark(config)
    rows = [
        ("default minus scripts, typical", Router(no_scripts), typical, 50.0),
        ("default with 2 script rules, typical", Router(config), typical, 50.0),
        ("the 2 scripts via Starlark, typical", starlark, typical, None),
        ("the 2 scripts in the worker, typical", Router(in_worker), typical, None),
        (
            "default with scripts, non-ASCII text",
            Router(config),
            request(
                user="Pourquoi le cache échoue-t-il ? {i} ",
                assistant="Réponse détaillée : ça dépend. {i} " * 12,
            ),
            None,
        ),
        ("default with scripts, heavy (~3 KB/message)", Router(config), request(scale=7), None),
    ]
    ref = sorted(timeit.repeat(lambda: sum(range(100)), number=20000, repeat=5))
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
        f"CPU reference: sum(range(100)) best {ref[0] / 20000 * 1e6:.2f} us"
    )
    typical_us = 0.0
    for label, router, req, target in rows:
        p50, best, p99, rule = measure(router, req, max(20, args.n // 50))
        if label == "default with 2 script rules, typical":
            typical_us = p50
        verdict = (
            "" if target is None else f"target p50 <= {target:.0f} us: {'OK' if p50 <= target else 'MISSED'}"
        )
        print(f"{label:<44} p50 {p50:6.1f} us  best {best:6.1f} us  p99 {p99:6.1f} us  ({rule})  {verdict}")
    gap = f"{args.gap:g} s apart"
    floor = floor_calls(typical_us, max(20, args.n // 50))
    floor_b2b = {label: back_to_back(call, max(20, args.n // 50)) for label, call in floor.items()}
    for label, router, parse, target in (
        (f"{gap}, decide, no scripts", Router(no_scripts), False, None),
        (f"{gap}, decide, 2 scripts", Router(config), False, 100.0),
        (f"{gap}, decide, 2 scripts via Starlark", starlark, False, None),
        (f"{gap}, decide, 2 scripts in the worker", Router(in_worker), False, None),
        (f"{gap}, parse + decide, no scripts", Router(no_scripts), True, None),
        (f"{gap}, parse + decide, 2 scripts", Router(config), True, None),
    ):
        floor_spaced: dict[str, float] = {}
        if target is None:
            p50, best, p99, rule = spaced(router, args.spaced, args.gap, parse=parse)
        else:
            (p50, best, p99, rule), floor_spaced = spaced_with_floor(router, args.spaced, args.gap, floor)
        verdict = (
            "" if target is None else f"target p50 <= {target:.0f} us: {'OK' if p50 <= target else 'MISSED'}"
        )
        print(f"{label:<44} p50 {p50:6.1f} us  best {best:6.1f} us  p99 {p99:6.1f} us  ({rule})  {verdict}")
        if floor_spaced:
            print_floor(p50, typical_us, floor_b2b, floor_spaced, gap)
    for label, p50, best, p99 in per_call(max(20, args.n // 20)):
        print(f"{label:<44} p50 {p50:6.1f} us  best {best:6.1f} us  p99 {p99:6.1f} us")


if __name__ == "__main__":
    main()
