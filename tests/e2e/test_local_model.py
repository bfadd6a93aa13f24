"""The local path with a real model: real Claude Code and SDK-shaped requests through `glider serve`
to a real llama.cpp server (SmolLM2-135M) behind a logging relay, and a strict cloud fake.

What must hold (issue: the local path made real): the local model receives a pack, not Claude Code's
whole request; a turn with earlier turns in the session carries their episodes; a pack that does not
fit a small configured window is refused local with the gate in the trace; with the local server
gone, the cloud answers with a model it serves, within seconds.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import claude_code
from fake_upstream import FakeUpstream, closed_port_url
from glider_cli.protocol.parse import parse_request
from glider_cli.turns.pack import BRIEF, EPISODES_HEADING

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=[claude_code.MODEL, "claude-x"], ollama_models=["qwen-local"]),
]

HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


# The person's own choice: their `/local` may go to the cloud when the local side cannot answer it
# (an explicit `/local` never does without its rule's `fallback`, issue 39).
LOCAL_MAY_FALL_BACK = "  rules:\n    - {name: explicit_local, fallback: origin}\n"


def _config(
    local_url: str, cloud_url: str, *, window: int = 8192, max_tokens: int = 48, rules: str = ""
) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{local_url}/v1', model: smollm2,"
        f" context_window: {window}, max_tokens: {max_tokens}, tools: false}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
        "routing:\n  local_backend: llama\n" + rules
    )


def _serve(tmp: Path, config: str, *, record: bool = True, observer: Any = None) -> Any:
    from server.glider_harness import GliderServer

    home = {"GLIDER_HOME": str(tmp / "home")}
    return GliderServer(config, tmp, record=record, environ=home, observer=observer)


def _system_text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def test_claude_code_say_hi_local_is_answered_by_the_real_model_from_a_pack(
    claude_bin: str, llama_relay: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    # Room for the model to finish: a reply cut at max_tokens is continued by Claude Code on the local
    # side too (#24). SmolLM2 at Claude Code's sampling sometimes loops past the cap again and again: after
    # two cut replies the continuation goes to the rule's fallback (cloud), so the run still ends well.
    cfg = _config(llama_relay.url, fake.url, max_tokens=1024, rules=LOCAL_MAY_FALL_BACK)
    with _serve(tmp_path, cfg) as g:
        home, work = tmp_path / "cc-home", tmp_path / "work"
        home.mkdir()
        work.mkdir()
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        proc = subprocess.run(
            [claude_bin, "-p", "say hi /local", "--output-format", "json"],
            cwd=work,
            env=claude_code.env(g.url, home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        result = json.loads(proc.stdout)
        assert result["is_error"] is False and result["result"].strip()
        done = g.wait_for("FulfilledLocal")
    chats = [r for r in llama_relay.requests if r.path == "/v1/chat/completions"]
    assert chats, "the real model was asked"
    first = next(r for r in chats if "say hi" in json.dumps(r.body))
    # A pack: a few KB and our brief, not Claude Code's ~50-77 KB request with 24 tool definitions.
    assert first.size < 12_000, first.size
    assert BRIEF in _system_text(first.body)
    assert "tools" not in first.body  # the backend is configured without tool support
    assert any(d["backend"] == "llama" and d["complete"] for d in done)
    assert parse_request("openai_chat", first.body).estimated_tokens <= 1500


def test_earlier_turns_of_the_session_reach_the_model_as_episodes(
    llama_relay: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    sid = {"x-claude-code-session-id": "11111111-2222-4333-8444-555555555555", **HEADERS}
    # The live event writer (not a recording sink): episodes are read from its ring.
    with _serve(tmp_path, _config(llama_relay.url, fake.url), record=False) as g:
        for text in ("/local what is 2+2", "/local name a colour"):
            body = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": text}]}
            r = httpx.post(g.url + "/v1/messages", json=body, headers=sid, timeout=120)
            assert r.status_code == 200, r.text
            time.sleep(0.1)  # the reply's closing events are written on the next drain
    last = llama_relay.requests[-1].body
    system = _system_text(last)
    assert EPISODES_HEADING in system and "what is 2+2" in system
    assert "name a colour" not in system  # the turn in progress is the message, not an episode


def test_a_pack_over_a_small_window_is_refused_local_with_the_gate_in_the_trace(
    llama_relay: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    with _serve(tmp_path, _config(llama_relay.url, fake.url, window=600)) as g:
        text = "please refactor this: " + "def f(x):\n    return x + 1\n" * 120
        body = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": text}]}
        r = httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=60)
        assert r.status_code == 200, r.text
        assert r.headers["x-glider-route"].startswith("cloud;")
        decided = g.wait_for("RouteDecided")[-1]
    gated = [t["reason"] for t in decided["trace"] if "cannot take it" in t["reason"]]
    assert gated and "> window 600" in gated[0] and "pack " in gated[0]
    assert [r.path for r in llama_relay.requests if r.method == "POST"] == []  # only the probe asked it


def test_with_the_local_server_gone_the_cloud_answers_with_a_model_it_serves(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    with _serve(tmp_path, _config(closed_port_url(), fake.url)) as g:
        # A turn another local rule sends local (an explicit `/local` would get an error instead, issue 39).
        body = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
        start = time.monotonic()
        r = httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)
        took = time.monotonic() - start
    assert r.status_code == 200, r.text
    assert "fallback-from=llama" in r.headers["x-glider-route"]
    assert fake.requests[-1].body["model"] == "claude-x"  # the client's, never the local model's
    assert took < 5, took
