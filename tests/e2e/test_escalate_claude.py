"""The real Claude Code CLI through a live Glider, a regex rule (priority 90) sending "small task" local and a
strict Anthropic fake as the cloud, answering as a working model does (it reads notes.txt with the Read
tool, then answers). The prompt needs a tool (issue 42, point 6).

- With a local model whose answer calls a tool that was never offered (a scripted OpenAI-compatible
  fake, as strict as the real server): before this change the answer was passed on, Claude Code sent
  the tool's error back as a tool result, which went home to the local model, turn after turn, until
  `--max-turns` ended the run with an error (12 local calls; `bench/bench_escalate_claude.py --local
  fake`). Now the local model is asked once: its answer goes to the cloud before Claude Code sees a
  byte of it, and the run ends with the cloud's answer.
- With the real llama.cpp server (SmolLM2-135M) behind a logging relay: llama-cpp-python parses no tool
  call out of the model's text (it answers `tools` with text unless `tool_choice` names a function), so
  SmolLM2's answer is always text — usable, and passed on as it is: never escalated. The cloud is
  asked only when the sampled answers ran to the output limit twice in a row and Claude Code asked
  to go on again (`turns.sticky`, "Off local").
  `bench/bench_escalate_claude.py` runs this against the tree before the change and prints both.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import claude_code
from fake_upstream import FakeUpstream, ToolReply
from glider_cli.turns.sticky import LOCAL_LIMIT_RUNS
from server.glider_harness import GliderServer

pytestmark = [pytest.mark.claude_code, pytest.mark.live, pytest.mark.slow]

PROMPT = "small task: read notes.txt and tell me the secret word written in it"


def _config(local_url: str, cloud_url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{local_url}/v1', model: smollm2,"
        " context_window: 8192, max_tokens: 256}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
        "routing:\n"
        "  local_backend: llama\n"
        "  cloud_backend: origin\n"
        "  rules:\n"
        "    - {name: small_task_local, priority: 90, trigger: {type: regex, pattern: 'small task'},"
        " action: {target: local}}\n"
    )


def _settled(g: GliderServer) -> None:
    """Until every decided request has its outcome (the last one is written just after its reply)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        types = [t for t, _, _ in g.events]
        if types.count("FulfilledLocal") + types.count("OriginPassthrough") >= types.count("RouteDecided"):
            return
        time.sleep(0.05)


def _run(claude_bin: str, local_url: str, tmp_path: Path) -> tuple[Any, list[Any], list[Any]]:
    """Claude Code's run, Glider's events and the cloud's requests."""
    home, work = tmp_path / "cc-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "notes.txt").write_text("the secret word is periwinkle\n")
    with FakeUpstream(models=[claude_code.MODEL]) as cloud:
        cloud.set_reply(tool=ToolReply("Read", {"file_path": str(work / "notes.txt")}, once=True))
        with GliderServer(_config(local_url, cloud.url), tmp_path) as g:
            proc = subprocess.run(
                [claude_bin, "-p", PROMPT, "--output-format", "json", "--max-turns", "12"],
                cwd=work,
                env=claude_code.env(g.url, home),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=600,
            )
            out = proc.stdout[-2000:] + proc.stderr[-2000:]
            assert proc.returncode == 0, out
            _settled(g)
            events = list(g.events)
        asked_cloud = [r for r in cloud.requests if r.path.startswith("/v1/messages")]
    return json.loads(proc.stdout), events, asked_cloud


def test_a_local_answer_calling_a_tool_never_offered_completes_through_escalation(
    claude_bin: str, tmp_path: Path
) -> None:
    with FakeUpstream(models=["smollm2"]) as local:
        local.set_reply(text="", tool=ToolReply("open_file", {"name": "notes.txt"}))
        result, events, asked_cloud = _run(claude_bin, local.url, tmp_path)
        local_calls = [r for r in local.requests if r.path == "/v1/chat/completions"]
    assert result["is_error"] is False and result["result"].startswith("hello from fake anthropic"), result
    assert len(local_calls) == 1  # asked once, not turn after turn
    escalated = [d for t, d, _ in events if t == "Escalated"]
    assert [(d["reason"], d["from"], d["to"], d["rule"]) for d in escalated] == [
        ("bad_tool_name", "llama", "origin", "small_task_local")
    ]
    assert len(asked_cloud) == 2  # the turn (it calls Read), then Read's result (home to the cloud)


def test_the_real_smollm2s_text_answer_is_passed_on(
    claude_bin: str, llama_relay: Any, tmp_path: Path
) -> None:
    result, events, asked_cloud = _run(claude_bin, llama_relay.url, tmp_path)
    local_calls = [r for r in llama_relay.requests if r.path == "/v1/chat/completions"]
    assert result["is_error"] is False and result["result"].strip(), result
    # One call; when the sampled answer ran to the backend's max_tokens (256), Claude Code asks it to
    # go on ("Output token limit hit…", at most 3 times) and that neutral continuation stays local.
    _first, *continued = local_calls
    assert all("Output token limit hit" in _last_user_text(r.body) for r in continued), continued
    assert len(continued) <= 3
    assert "Escalated" not in [t for t, _, _ in events]
    outcomes = [d for t, d, _ in events if t == "FulfilledLocal"]
    assert len(outcomes) == len(local_calls) and {d["backend"] for d in outcomes} == {"llama"}
    assert outcomes[-1]["complete"] is True
    if asked_cloud:
        # The sampled answers ran to the limit LOCAL_LIMIT_RUNS times in a row: the next continuation
        # is taken off local (`turns.sticky`, "Off local"), and only that one went to the cloud.
        assert len(outcomes) >= LOCAL_LIMIT_RUNS, outcomes
        assert all(d.get("stopped_at_limit") is True for d in outcomes[-LOCAL_LIMIT_RUNS:]), outcomes
        assert "Output token limit hit" in _last_user_text(asked_cloud[0].body)


def _last_user_text(body: dict[str, Any]) -> str:
    """The text of a Chat request's last user message (a string, or its text parts joined)."""
    last = [m for m in body.get("messages", []) if m.get("role") == "user"][-1]
    content = last.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
