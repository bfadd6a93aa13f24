"""Router decision benchmark (issue 2 §6). Prints each figure next to its target.

A "typical" request is 20 messages of a coding conversation (user prompts of ~150 characters,
assistant answers of ~450, English text), a ~3 KB system prompt and no tools, worded so that no
classifier pattern matches: the decision falls through every rule down to `small_context_local`,
so every rule (both Starlark scripts included) is evaluated.

    default profile minus its two script rules   p50 <= 50 us
    default profile with its two Starlark rules  p50 <= 200 us

Also printed (no target): the same request with non-ASCII text, and a heavy Claude-Code-like request
(20 messages of ~3 KB each), because a script's cost grows with the bytes it is handed; and single
requests 5 ms apart (parse and decide, timed one by one), as requests come in real use, when the
processes have gone idle before each one: without scripts and with the two (the difference is
what the sandbox's round trip costs when its worker must be woken up).

Scripts run in the sandbox worker process (glider_cli.sandbox), so each decision that reaches the two
script rules pays one pipe round trip (both scripts share it). The per-call cost is printed on its
own: the round trip of one no-op script on a one-message request (the fixed cost of the sandbox),
and the default profile's two scripts on the typical request (what the decision pays for them).

Usage: .venv/bin/python bench/bench_router.py [--n 5000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import timeit
from pathlib import Path

from glider_cli.config.load import load_config
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


def spaced(router: Router, samples: int) -> tuple[float, float, float, str]:
    """(p50, best, p99) microseconds of parsing the typical request and deciding it, one request
    every 5 ms, as requests come in real use: the processes have gone idle before each one."""
    body = request_body()
    for _ in range(50):
        router.decide(parse_request("anthropic", body))
    per: list[float] = []
    for _ in range(samples):
        time.sleep(0.005)
        t0 = time.perf_counter()
        d = router.decide(parse_request("anthropic", body))
        per.append((time.perf_counter() - t0) * 1e6)
    per.sort()
    return statistics.median(per), per[0], per[int(len(per) * 0.99)], d.rule


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
            ("sandbox round trip, no-op script, tiny", [noop], build_payload({}, ["user"], ["hi"])),
            (
                "sandbox call, the 2 default scripts, typical",
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5000)
    args = parser.parse_args()
    config = load_config(profile="default")
    no_scripts = replace(config, rules=tuple(r for r in config.rules if r.trigger.type != "script"))
    typical = request()
    print(f"typical request: {len(typical.messages)} messages, ~{typical.estimated_tokens} tokens")
    rows = [
        ("default minus scripts, typical", Router(no_scripts), typical, 50.0),
        ("default with 2 Starlark rules, typical", Router(config), typical, 200.0),
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
    for label, router, req, target in rows:
        p50, best, p99, rule = measure(router, req, max(20, args.n // 50))
        verdict = (
            "" if target is None else f"target p50 <= {target:.0f} us: {'OK' if p50 <= target else 'MISSED'}"
        )
        print(f"{label:<44} p50 {p50:6.1f} us  best {best:6.1f} us  p99 {p99:6.1f} us  ({rule})  {verdict}")
    for label, router in (
        ("5 ms apart, parse + decide, no scripts", Router(no_scripts)),
        ("5 ms apart, parse + decide, 2 scripts", Router(config)),
    ):
        p50, best, p99, rule = spaced(router, max(20, args.n // 50))
        print(f"{label:<44} p50 {p50:6.1f} us  best {best:6.1f} us  p99 {p99:6.1f} us  ({rule})")
    for label, p50, best, p99 in per_call(max(20, args.n // 20)):
        print(f"{label:<44} p50 {p50:6.1f} us  best {best:6.1f} us  p99 {p99:6.1f} us")


if __name__ == "__main__":
    main()
