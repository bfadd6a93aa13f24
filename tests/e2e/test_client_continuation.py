"""Claude Code's own continuation of a `/local` turn stays local: the real CLI, a live Glider on the
default profile, the real llama.cpp server (SmolLM2-135M) behind a logging relay, a strict cloud fake.

The local backend's `max_tokens` is tiny, so the model's reply stops at the limit; Claude Code then sends
`Output token limit hit. Resume directly…` as a new user message with its tools, which the default
profile's classifier (`task_classifier.tools`) would send to the cloud as a new turn. It joins the
`/local` turn as a continuation and the real model answers it. After two local replies in a row stopped
at the limit, the next continuation goes to the fallback that the config's `/local` rule names (the
cloud: without it an explicit `/local` never leaves the machine, issue 39), and Claude Code's run ends
well instead of giving up after its third continuation.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import claude_code
from e2e.test_local_model import LOCAL_MAY_FALL_BACK, _config, _serve
from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.claude_code,
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=[claude_code.MODEL, "claude-x"], ollama_models=["qwen-local"]),
]

RESUME = "Output token limit hit. Resume directly"


def test_claude_codes_max_tokens_continuation_of_a_local_turn_is_answered_locally(
    claude_bin: str, llama_relay: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.reset()
    with _serve(tmp_path, _config(llama_relay.url, fake.url, max_tokens=3, rules=LOCAL_MAY_FALL_BACK)) as g:
        home, work = tmp_path / "cc-home", tmp_path / "work"
        home.mkdir()
        work.mkdir()
        proc = subprocess.run(
            [claude_bin, "-p", "tell me a long story about a parser /local", "--output-format", "json"],
            cwd=work,
            env=claude_code.env(g.url, home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
        )
        out = proc.stdout[-2000:] + proc.stderr[-2000:]
        decided = [(d, turn) for t, d, turn in g.events if t == "RouteDecided"]
    continued = [(d, turn) for d, turn in decided if d["family"]["kind"] == "continuation"]
    assert continued, ([d["family"] for d, _ in decided], out)
    opened = next(turn for d, turn in decided if d["family"]["kind"] == "new_turn")
    for d, turn in continued:
        assert (turn, d["target"], d["backend"], d["rule"]) == (opened, "local", "llama", "sticky"), d
        assert "Claude Code's own continuation" in d["family"]["link"]
    asked = [r for r in llama_relay.requests if r.path == "/v1/chat/completions"]
    resumed = [r for r in asked if RESUME in json.dumps(r.body)]
    assert resumed, "the real model got the continuation"
    # ... with the turn it continues: the person's prompt and the reply so far, not the continuation alone.
    said = [m["content"] for m in resumed[0].body["messages"] if m["role"] in ("user", "assistant")]
    assert "tell me a long story about a parser" in json.dumps(said) and len(said) >= 3, said
    # Two local replies stopped at the limit: the second continuation went to the cloud, and the run ended.
    clouded = [r for r in fake.requests if r.path.startswith("/v1/messages")]
    assert [RESUME in json.dumps(r.body["messages"][-1]) for r in clouded] == [True], out
    assert proc.returncode == 0, out
    used = [d for t, d, _ in g.events if t == "FallbackUsed"]
    assert [(d["from"], d["to"]) for d in used] == [("llama", "origin")], used
    assert "output-token limit" in used[0]["reason"]
