"""What checking a local reply before it goes out costs (issue 42): one run, old and new side by side.

Two Glider apps (the tests' harness: the real app on 127.0.0.1 with the production upstream client) in
front of one local fake that paces its stream like a model (`--pace` seconds between events), with a
regex rule sending the requests local:

    old   `routing.escalate.on_invalid_reply: false`: the reply is relayed as before this change (no check)
    new   the default: the reply is checked before its first byte goes out

For each, over `--runs` requests sent alternately (old, new, old, ...) so that drift hits both alike:
- text: a streamed reply that opens with text, read as an Anthropic client (translated from the local
  server's Chat stream) and as a Chat client (relayed as it is). TTFT: the time until the client has
  the first visible text (the first byte too is printed: before this change a stream's opening events,
  which carry no text, went out ahead of it). Target: new's median within the noise of old's (noise:
  the larger median absolute deviation of the two).
- tool: a streamed reply that opens with a tool call (Chat client): the time to the first body byte
  the client gets, and the time until it has the whole call (its finish chunk). Target: new's first
  byte no later than old's whole call (the hold lasts while the call is written, no longer).

    .venv/bin/python bench/bench_escalate.py [--runs 40] [--pace 0.02] [--json]

The machine is shared (2 cores): compare the figures of one run, never absolute times across runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "server")]
SCHEMA = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
TEXT = "Sure, here is a short answer that streams a few words at a model's pace."


def _config(local: str, off: bool) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{local}/v1', model: smol}}\n"
        "  origin: {type: origin, side: cloud, base_url: 'http://127.0.0.1:9'}\n"
        "routing:\n"
        "  local_backend: llama\n"
        "  rules:\n"
        "    - {name: small_local, priority: 90, trigger: {type: regex, pattern: 'small task'},"
        " action: {target: local}}\n" + ("  escalate: {on_invalid_reply: false}\n" if off else "")
    )


def _request(protocol: str, n: int) -> tuple[str, dict[str, Any], dict[str, str]]:
    text = f"small task {n}: read the notes"
    if protocol == "anthropic":
        body = {
            "model": "claude-x",
            "max_tokens": 256,
            "stream": True,
            "messages": [{"role": "user", "content": text}],
            "tools": [{"name": "Read", "input_schema": SCHEMA}],
        }
        return "/v1/messages", body, {"x-api-key": "sk-b", "anthropic-version": "2023-06-01"}
    body = {
        "model": "gpt-x",
        "stream": True,
        "messages": [{"role": "user", "content": text}],
        "tools": [{"type": "function", "function": {"name": "Read", "parameters": SCHEMA}}],
    }
    return "/v1/chat/completions", body, {"authorization": "Bearer sk-b"}


def _ttft(client: httpx.Client, url: str, protocol: str, n: int, marker: bytes) -> tuple[float, float]:
    """(time to the first body byte, time until `marker` has arrived) of one streamed request."""
    path, body, headers = _request(protocol, n)
    t0 = time.perf_counter()
    first = seen = 0.0
    got = b""
    with client.stream("POST", url + path, json=body, headers=headers) as r:
        assert r.status_code == 200, r.read()
        for chunk in r.iter_raw():
            now = time.perf_counter() - t0
            first = first or now
            got += chunk
            if not seen and marker in got:
                seen = now
    assert seen, got[-400:]
    return first, seen


def _mad(xs: list[float]) -> float:
    m = statistics.median(xs)
    return statistics.median(abs(x - m) for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--pace", type=float, default=0.02, help="seconds between the local server's events")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from glider_harness import GliderServer

    from fake_upstream import FakeUpstream, ToolReply

    out: dict[str, Any] = {"runs": args.runs, "pace_s": args.pace}
    with tempfile.TemporaryDirectory() as tmp, FakeUpstream(models=["smol"]) as local:
        old_dir, new_dir = Path(tmp, "old"), Path(tmp, "new")
        old_dir.mkdir()
        new_dir.mkdir()
        with (
            GliderServer(_config(local.url, True), old_dir, record=False) as old,
            GliderServer(_config(local.url, False), new_dir, record=False) as new,
            httpx.Client(timeout=60) as client,
        ):
            cases = [
                ("text_anthropic", "anthropic"),
                ("text_chat", "openai_chat"),
                ("tool_chat", "openai_chat"),
            ]
            for name, protocol in cases:
                if name.startswith("text"):
                    local.set_reply(text=TEXT, event_delay=args.pace)
                    marker = b"Sure,"
                else:
                    call = ToolReply("Read", {"file_path": "notes.txt"})
                    local.set_reply(text="", tool=call, event_delay=args.pace)
                    marker = b'"tool_calls"}'  # the finish chunk: the call is complete
                times: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
                for n in range(3):  # warm both (imports, connections)
                    _ttft(client, old.url, protocol, n, marker)
                    _ttft(client, new.url, protocol, n, marker)
                for n in range(args.runs):
                    pair = (("old", old), ("new", new))
                    for label, g in pair if n % 2 == 0 else pair[::-1]:
                        times[label].append(_ttft(client, g.url, protocol, n, marker))
                old_first = [t[0] for t in times["old"]]
                new_first = [t[0] for t in times["new"]]
                old_seen = [t[1] for t in times["old"]]
                new_seen = [t[1] for t in times["new"]]
                out[name] = {
                    "old_first_byte_ms": _ms(statistics.median(old_first)),
                    "new_first_byte_ms": _ms(statistics.median(new_first)),
                    # text: the first visible text; tool: the call complete (its finish chunk)
                    "old_marker_ms": _ms(statistics.median(old_seen)),
                    "new_marker_ms": _ms(statistics.median(new_seen)),
                    "noise_ms": _ms(max(_mad(old_seen), _mad(new_seen))),
                }
    text_ok = all(
        abs(out[k]["new_marker_ms"] - out[k]["old_marker_ms"]) <= max(out[k]["noise_ms"], 0.5)
        for k in ("text_anthropic", "text_chat")
    )
    tool = out["tool_chat"]
    tool_ok = tool["new_first_byte_ms"] <= tool["old_marker_ms"] + max(tool["noise_ms"], 0.5)
    out["targets"] = {
        "text: TTFT (first visible text) new within the noise of old": text_ok,
        "tool: new first byte no later than old's call complete (+ noise)": tool_ok,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"escalate check, {args.runs} requests each, local server pacing {args.pace * 1000:.0f} ms/event")
    for k, what in (
        ("text_anthropic", "first text"),
        ("text_chat", "first text"),
        ("tool_chat", "call done"),
    ):
        r = out[k]
        print(
            f"  {k:<15} first byte old {r['old_first_byte_ms']:6.1f} new {r['new_first_byte_ms']:6.1f} ms;"
            f"  {what} old {r['old_marker_ms']:6.1f} new {r['new_marker_ms']:6.1f} ms"
            f"  (noise {r['noise_ms']:.1f})"
        )
    for target, ok in out["targets"].items():
        print(f"  target {target}: {'met' if ok else 'NOT met'}")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


if __name__ == "__main__":
    main()
