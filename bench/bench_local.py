"""The local turn on a real model: what the pack buys (issue 13 §7). All in one run, on the real
llama.cpp server (llama-cpp-python + SmolLM2-135M, n_ctx 16384) that .ci/run builds in .ci/llama-venv:

    direct       a tiny chat request sent straight to the server ("say hi")
    packed       Claude Code's captured first turn with `/local`, through `glider serve` (the pack)
    unpacked     the same with `transform.local_context: false` (the whole request, translated)

For each: wall time (median of --runs) and the prompt tokens the server counted. Targets: packed
<= 3x direct's time, and <= 1,500 prompt tokens for a Claude Code first turn. The machine has 2
shared cores: compare the ratios of one run, never absolute times across runs.

    .venv/bin/python bench/bench_local.py [--runs 3] [--json]
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
FIXTURE = ROOT / "tests" / "fixtures" / "clients" / "claude-code-01-first-turn.json"
OUT_TOKENS = 16
N_CTX = 16384


def _config(url: str, *, pack: bool, window: int) -> str:
    from fake_upstream import closed_port_url

    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{url}/v1', model: smol, context_window: {window},"
        f" tools: false, max_tokens: {OUT_TOKENS}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{closed_port_url()}'}}\n"
        "routing:\n  local_backend: llama\n"
        f"transform:\n  local_context: {'true' if pack else 'false'}\n"
    )


def _claude_code_turn() -> tuple[dict[str, Any], dict[str, str]]:
    capture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    req = next(
        r for r in capture["requests"] if r["path"].startswith("/v1/messages") and "count" not in r["path"]
    )
    body = json.loads(json.dumps(req["body"]))
    body["stream"] = False
    # Claude Code's prompt is the text "say hi" of the last user message; `/local` is typed after it.
    last = body["messages"][-1]
    if isinstance(last["content"], str):
        last["content"] += " /local"
    for msg in body["messages"]:
        for block in msg["content"] if isinstance(msg["content"], list) else []:
            if isinstance(block, dict) and block.get("type") == "text" and block["text"].strip() == "say hi":
                block["text"] = "say hi /local"
    headers = {"anthropic-version": "2023-06-01", "x-api-key": "sk-bench"}
    return body, headers


def _timed(runs: int, send: Any) -> tuple[float, int | None, int]:
    times, tokens, size = [], None, 0
    for _ in range(runs):
        t0 = time.perf_counter()
        tokens, size = send()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), tokens, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from glider_harness import GliderServer

    import llama_server

    install, why = llama_server.find()
    if install is None:
        sys.exit(f"no llama.cpp server: {why}")
    body, headers = _claude_code_turn()
    results: dict[str, dict[str, Any]] = {}
    with (
        llama_server.LlamaServer(install, n_ctx=N_CTX) as llama,
        llama_server.LoggingRelay(llama.url) as relay,
    ):

        def direct() -> tuple[int | None, int]:
            tiny = {
                "model": "smol",
                "max_tokens": OUT_TOKENS,
                "messages": [{"role": "user", "content": "say hi"}],
            }
            r = httpx.post(llama.url + "/v1/chat/completions", json=tiny, timeout=600)
            return r.json()["usage"]["prompt_tokens"], len(json.dumps(tiny))

        keys = ("s", "prompt_tokens", "bytes")
        results["direct"] = dict(zip(keys, _timed(args.runs, direct), strict=True))
        for name, pack in (("packed", True), ("unpacked", False)):
            # The whole request does not fit 8,192 tokens (the gate would refuse it): the server runs
            # with N_CTX, and the unpacked run is told so.
            config = _config(relay.url, pack=pack, window=8192 if pack else N_CTX)
            with tempfile.TemporaryDirectory() as tmp, GliderServer(config, Path(tmp)) as g:

                def through() -> tuple[int | None, int]:
                    r = httpx.post(g.url + "/v1/messages", json=body, headers=headers, timeout=900)
                    assert r.status_code == 200, r.text[:500]
                    sent = [x for x in relay.requests if x.path == "/v1/chat/completions"][-1]
                    return r.json()["usage"]["input_tokens"], sent.size

                results[name] = dict(
                    zip(("s", "prompt_tokens", "bytes"), _timed(args.runs, through), strict=True)
                )
    ratio = results["packed"]["s"] / results["direct"]["s"]
    tokens = results["packed"]["prompt_tokens"] or 0
    summary = {
        "packed_vs_direct": round(ratio, 2),
        "unpacked_vs_direct": round(results["unpacked"]["s"] / results["direct"]["s"], 2),
        "time_target_ok": ratio <= 3.0,
        "tokens_target_ok": tokens <= 1500,
    }
    if args.json:
        print(json.dumps({"results": results, "summary": summary}, indent=2))
        return
    for name, r in results.items():
        ms, tok, size = r["s"] * 1000, r["prompt_tokens"], r["bytes"]
        print(f"{name:<9} {ms:9.0f} ms  {tok!s:>6} prompt tokens  {size:>7,} bytes sent")
    ok = "OK" if summary["time_target_ok"] else "MISSED"
    print(f"packed turn {summary['packed_vs_direct']:.2f}x the direct request   target <= 3x        {ok}")
    ok = "OK" if summary["tokens_target_ok"] else "MISSED"
    print(f"packed prompt tokens {tokens}                        target <= 1,500     {ok}")
    print(f"without the pack: {summary['unpacked_vs_direct']:.1f}x the direct request")


if __name__ == "__main__":
    main()
