"""Usage after seven tiny prompts (issue 39 §3 and §4): what `glider context usage` and `glider context
turns` say after seven one-line `claude -p "... /local"` prompts through real Claude Code -> `glider serve`
-> the real llama.cpp server (llama-cpp-python + SmolLM2-135M, which .ci/run builds in .ci/llama-venv,
started with `--interrupt_requests false` so that the title Claude Code asks for while the prompt's
answer streams does not cut it), with a strict fake cloud behind `origin` (nothing is meant to reach it).

It prints both views as a person sees them, then the figures: the output tokens the outcome events
recorded for the prompts' answers against what Claude Code was told (`usage.output_tokens` of its JSON
result), the input recorded against the pack the local model was sent and against the client's whole
request, and the estimated savings. Target: the recorded output equals what the client was told, and
the local input is the pack's size (a few hundred tokens a prompt), not Claude Code's request (~20k).

    .venv/bin/python bench/usage_seven_prompts.py [--src DIR] [--json]

`--src` runs `glider serve` and the `glider context` commands from another checkout's `src` (the code
before a change, for a before/after figure); the default is this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

PROMPTS = (
    "say hi /local",
    "name a colour /local",
    "what is 2+2 /local",
    "say thanks /local",
    "name a fruit /local",
    "say goodbye /local",
    "count to three /local",
)


def _config(local_url: str, cloud_url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{local_url}/v1', model: smollm2,"
        " context_window: 8192, max_tokens: 256, tools: false}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
        "routing:\n  local_backend: llama\n"
    )


def _glider(src: Path, env: dict[str, str], *args: str, timeout: float = 120) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", *args],
        env={**env, "PYTHONPATH": str(src), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.stdout + proc.stderr


def _events(home: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in sorted((home / "context").glob("events-*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def run(src: Path) -> dict[str, Any]:
    import claude_code
    import llama_server
    from fake_upstream import FakeUpstream
    from serve_process import ServeProcess

    install, why = llama_server.find()
    if install is None:
        raise SystemExit(f"no llama.cpp server: {why}")
    claude, why = claude_code.find_or_install()
    if claude is None:
        raise SystemExit(f"no Claude Code: {why}")
    with (
        tempfile.TemporaryDirectory(prefix="glider-usage7-") as tmp_,
        llama_server.LlamaServer(install, interrupt=False) as llama,
        llama_server.LoggingRelay(llama.url) as relay,
        FakeUpstream(models=[claude_code.MODEL]) as cloud,
    ):
        tmp = Path(tmp_)
        home, cc_home, work = tmp / "glider-home", tmp / "cc-home", tmp / "work"
        for d in (home, cc_home, work):
            d.mkdir()
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        cfg = tmp / "glider.yaml"
        cfg.write_text(_config(relay.url, cloud.url))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "GLIDER_HOME": str(home)}
        told: list[dict[str, Any]] = []
        with ServeProcess("--config", str(cfg), "--quiet", env={**env, "PYTHONPATH": str(src)}) as served:
            url = served.url
            # As a person runs it: Claude Code also asks for each session's title (a side request that
            # `-p` does not wait for); telemetry, error reports and the updater stay off.
            cc_env = claude_code.env(url, cc_home)
            cc_env.pop("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
            for prompt in PROMPTS:
                proc = subprocess.run(
                    [claude, "-p", prompt, "--output-format", "json"],
                    cwd=work,
                    env=cc_env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                try:
                    result = json.loads(proc.stdout)
                except ValueError:
                    result = {"is_error": True, "result": (proc.stdout + proc.stderr)[-300:]}
                told.append({"prompt": prompt, "rc": proc.returncode, **result})
            time.sleep(1.0)  # the last replies' closing events are written on the next drain
        usage = _glider(src, env, "context", "usage")
        turns = _glider(src, env, "context", "turns")
        usage_json = json.loads(_glider(src, env, "context", "usage", "--json"))
        events = _events(home)
        packs = [r.size for r in relay.requests if r.path == "/v1/chat/completions"]
        cloud_calls = len(cloud.requests)
    local = [e["data"] for e in events if e["type"] == "FulfilledLocal"]
    main = [d for d in local if "request_kind" not in d]  # the prompts' answers (not the titles)
    t = usage_json["totals"]
    return {
        "usage": usage,
        "turns": turns,
        "prompts": len(PROMPTS),
        "answered": sum(1 for r in told if not r.get("is_error")),
        "client_output_tokens": sum(int((r.get("usage") or {}).get("output_tokens") or 0) for r in told),
        "client_input_tokens": sum(int((r.get("usage") or {}).get("input_tokens") or 0) for r in told),
        "recorded_output_tokens": sum(int(d.get("output_tokens") or 0) for d in main),
        "recorded_input_tokens": sum(int(d.get("input_tokens") or 0) for d in main),
        "side_output_tokens": sum(int(d.get("output_tokens") or 0) for d in local if d not in main),
        "main_calls": len(main),
        "local_calls": len(local),
        "pack_bytes_sent": packs,
        "cloud_calls": cloud_calls,
        "local_tokens": t["tokens"]["local"],
        "avoided_cloud_tokens": t.get("avoided_cloud_tokens"),
        "savings": t["savings"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the checkout's src to run Glider from")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    r = run(args.src.resolve())
    if args.json:
        print(json.dumps(r, indent=2))
        return
    print("$ glider context usage")
    print(r["usage"])
    print("$ glider context turns")
    print(r["turns"])
    print(
        f"prompts answered            {r['answered']}/{r['prompts']} ({r['local_calls']} local calls logged)"
    )
    print(
        f"output tokens               recorded {r['recorded_output_tokens']:,} for the prompts' answers; "
        f"Claude Code was told {r['client_output_tokens']:,} (target: the same); the titles "
        f"{r['side_output_tokens']:,}"
    )
    sent = r["pack_bytes_sent"]
    print(
        f"input tokens                recorded {r['recorded_input_tokens']:,} "
        f"over the {r['main_calls']} answers; "
        f"{len(sent)} packs of {min(sent, default=0):,}-{max(sent, default=0):,} bytes were sent "
        "(target: the packs' size, a few hundred tokens each, not Claude Code's ~20k-token request)"
    )
    print(
        f"local tokens {r['local_tokens']:,}; saved cloud tokens (est.) {r['avoided_cloud_tokens']}; "
        f"savings ${r['savings']:.4f}; cloud calls {r['cloud_calls']}"
    )


if __name__ == "__main__":
    main()
