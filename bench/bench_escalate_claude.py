"""The real Claude Code through `glider serve`, a rule sending its small task to the real llama.cpp SmolLM2,
a strict fake cloud: how many requests each side served, before and after issue 42 (escalation).

For each source tree (`--before REF`, checked out with `git archive` into a temporary directory, and this
checkout), one run: `glider serve` from that tree (`python -m glider_cli serve`, its own GLIDER_HOME),
the llama.cpp server (llama-cpp-python + SmolLM2-135M, what .ci/run builds in .ci/llama-venv) behind a
logging relay as the local backend, the tests' strict fake Anthropic service as the cloud, and

    claude -p "small task: <PROMPT>" --output-format json     # in a git repo holding notes.txt

A regex rule (priority 90) sends "small task" local; everything else follows the default profile. The
cloud answers the way a working model does: it reads notes.txt with the Read tool, then answers. Printed
per tree: the local model's calls (the relay's /v1/chat/completions), the cloud's (/v1/messages), the
requests Claude Code sent, the escalations logged, Claude Code's exit code, turns and answer.

    .venv/bin/python bench/bench_escalate_claude.py [--before cb83390] [--local llama|fake]
                                                    [--max-tokens 256] [--json]

With a small `--max-tokens` (8) SmolLM2's answer stops at the cap and Claude Code sends its own
`Output token limit hit…`: before, that continuation of a rule's local turn was routed anew on its own
text (to the cloud); now it stays on the local side that answered, until two local answers in a row
stopped at the cap send the next continuation to the cloud.

`--local fake` runs the same with a scripted local model (the tests' fake, answering a call to a tool
that was not offered) instead of SmolLM2, when the llama.cpp server is not built.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "server")]
BASE = "cb83390"  # the commit issue 42's change was built on: the "before" by default
PROMPT = "small task: read notes.txt and tell me the secret word written in it"
SECRET = "the secret word is periwinkle"


def config(local_url: str, cloud_url: str, max_tokens: int = 256) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{local_url}/v1', model: smollm2,"
        f" context_window: 8192, max_tokens: {max_tokens}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
        "routing:\n"
        "  local_backend: llama\n"
        "  cloud_backend: origin\n"
        "  rules:\n"
        "    - {name: small_task_local, priority: 90, trigger: {type: regex, pattern: 'small task'},"
        " action: {target: local}}\n"
    )


@contextmanager
def serve(src: Path, cfg: Path, home: Path) -> Iterator[str]:
    """`glider serve` from the tree at `src` (its `src/` first on the path), until the block ends."""
    from serve_process import ServeProcess

    env = {**os.environ, "PYTHONPATH": str(src / "src"), "GLIDER_HOME": str(home)}
    with ServeProcess("--config", str(cfg), "-q", env=env) as served:
        yield served.url


def run_claude(claude: str, url: str, tmp: Path) -> dict[str, Any]:
    import claude_code

    home, work = tmp / "cc-home", tmp / "work"
    home.mkdir()
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "notes.txt").write_text(SECRET + "\n")
    proc = subprocess.run(
        [claude, "-p", PROMPT, "--output-format", "json", "--max-turns", "12"],
        cwd=work,
        env=claude_code.env(url, home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
    )
    try:
        out: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        out = {"result": (proc.stdout + proc.stderr)[-500:]}
    out["exit_code"] = proc.returncode
    out["notes"] = str(work / "notes.txt")
    return out


def events(home: Path, type_: str) -> list[dict[str, Any]]:
    out = []
    for f in sorted((home / "context").glob("events-*.jsonl")):
        out += [e for e in map(json.loads, f.read_text().splitlines()) if e["type"] == type_]
    return out


def one(tree: Path, local: Any, local_url: str, claude: str, max_tokens: int = 256) -> dict[str, Any]:
    """One run of Claude Code through `glider serve` from `tree`: what each side served."""
    import claude_code
    from fake_upstream import FakeUpstream, ToolReply

    with tempfile.TemporaryDirectory() as t, FakeUpstream(models=[claude_code.MODEL]) as cloud:
        tmp = Path(t)
        cloud.set_reply(tool=ToolReply("Read", {"file_path": str(tmp / "work" / "notes.txt")}, once=True))
        cfg = tmp / "glider.yaml"
        cfg.write_text(config(local_url, cloud.url, max_tokens))
        local.clear()
        with serve(tree, cfg, tmp / "home") as url:
            got = run_claude(claude, url, tmp)
            time.sleep(0.5)  # the last reply's closing events are written on the next drain
        decided = events(tmp / "home", "RouteDecided")
        return {
            "local_calls": len([r for r in local.requests if r.path.endswith("/chat/completions")]),
            "cloud_calls": len([r for r in cloud.requests if r.path.startswith("/v1/messages")]),
            "claude_requests": len(decided),
            "escalations": [e["data"]["reason"] for e in events(tmp / "home", "Escalated")],
            "exit_code": got["exit_code"],
            "num_turns": got.get("num_turns"),
            "is_error": got.get("is_error"),
            "result": str(got.get("result", ""))[:160],
        }


class _FakeLocal:
    """A scripted local model (the tests' fake): it calls a tool that was not offered, every time."""

    def __init__(self) -> None:
        from fake_upstream import FakeUpstream

        self.fake = FakeUpstream(models=["smollm2"])
        self.fake.start()
        self.url = self.fake.url
        self.clear()

    @property
    def requests(self) -> list[Any]:
        return self.fake.requests

    def clear(self) -> None:
        from fake_upstream import ToolReply

        self.fake.reset()
        self.fake.set_reply(text="", tool=ToolReply("open_file", {"name": "notes.txt"}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=BASE, help="the git ref of the tree before the change")
    ap.add_argument("--local", choices=("llama", "fake"), default="llama")
    ap.add_argument("--max-tokens", type=int, default=256, help="the local backend's output cap")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import claude_code
    import llama_server

    claude, why = claude_code.find_or_install()
    if claude is None:
        sys.exit(f"no Claude Code: {why}")
    results: dict[str, Any] = {"prompt": PROMPT, "local": args.local, "before_ref": args.before}
    with tempfile.TemporaryDirectory() as t:
        before = Path(t) / "before"
        before.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.before, "src", "profiles"],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        trees = (("before", before), ("after", ROOT))
        if args.local == "fake":
            fake = _FakeLocal()
            try:
                for name, tree in trees:
                    results[name] = one(tree, fake, fake.url, claude, args.max_tokens)
            finally:
                fake.fake.stop()
        else:
            install, why = llama_server.find()
            if install is None:
                sys.exit(f"no llama.cpp server: {why}")
            with (
                llama_server.LlamaServer(install) as llama,
                llama_server.LoggingRelay(llama.url) as relay,
            ):
                for name, tree in trees:
                    results[name] = one(tree, relay, relay.url, claude, args.max_tokens)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"Claude Code -p {PROMPT!r}; local: {args.local}; before = {args.before}, after = this tree")
    for name in ("before", "after"):
        r = results[name]
        print(
            f"  {name:<6} local model calls {r['local_calls']:>3}  cloud calls {r['cloud_calls']:>3}  "
            f"Claude Code requests {r['claude_requests']:>3}  escalations {r['escalations']}  "
            f"exit {r['exit_code']} turns {r['num_turns']}: {r['result']!r}"
        )


if __name__ == "__main__":
    main()
