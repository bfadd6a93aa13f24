"""Gemini CLI's own failure message escalates the turn (issue 42, point 2), with the real Gemini CLI.

A live Glider, a regex rule sending "small task" to a scripted local model (a strict OpenAI-compatible
fake): it calls a tool, Gemini CLI runs it, and the local model's answer to the tool result is empty.
With the reply check off (`routing.escalate.on_invalid_reply: false`, so the empty reply reaches the
client as it did before this change), Gemini CLI's agent session (`GEMINI_CLI_EXP_AGENT=true` with
`-p`; the plain `-p` loop sends no nudge) keeps the empty answer as a `model` turn with no parts and
sends "[System: You successfully executed a tool but returned an empty response…]": that request goes
to the cloud (a strict Gemini fake, which refuses a history with an empty turn: Glider leaves it out),
which answers, and the run ends with the cloud's answer. With `on_client_failure: false` too, the
nudge stays on the local side that answered the turn.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gemini_cli
from fake_upstream import FakeUpstream, ToolReply
from server.glider_harness import GliderServer

pytestmark = [pytest.mark.live, pytest.mark.slow]

NUDGE = "[System: You successfully executed a tool but returned an empty response."


@pytest.fixture(scope="session")
def gemini_bin() -> str:
    found, why = gemini_cli.find_or_install()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture
def fakes() -> Iterator[tuple[FakeUpstream, FakeUpstream]]:
    with FakeUpstream(models=["smol"]) as local, FakeUpstream(models=["gemini-x"]) as cloud:
        # A tool call in answer to the person's message, then (to the tool result) an empty answer.
        local.set_reply(text="", tool=ToolReply("list_directory", {"dir_path": "."}, once=True))
        yield local, cloud


def _config(local: str, cloud: str, escalate: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{local}/v1', model: smol}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud}'}}\n"
        "routing:\n"
        "  local_backend: llama\n"
        "  cloud_backend: origin\n"
        f"  escalate: {escalate}\n"
        "  rules:\n"
        "    - {name: small_local, priority: 90, trigger: {type: regex, pattern: 'small task'},"
        " action: {target: local}}\n"
    )


def run_gemini(gemini: str, base_url: str, prompt: str, tmp: Path) -> dict[str, Any]:
    """`gemini -p` with its agent session (`GEMINI_CLI_EXP_AGENT=true`: the loop its interactive mode runs,
    which sends the empty-response nudge; the plain `-p` loop does not)."""
    home = gemini_cli.home(tmp / "home")
    work = tmp / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    env = {**gemini_cli.env(base_url, home), "GEMINI_CLI_EXP_AGENT": "true"}
    proc = subprocess.run(
        [gemini, "-p", prompt, "--output-format", "json", "-m", "gemini-x"],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, (
        f"gemini exited {proc.returncode}: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _said(requests: list[Any]) -> list[str]:
    return [
        json.dumps(r.body) for r in requests if r.path.endswith("/chat/completions") or "/v1beta/" in r.path
    ]


def test_gemini_clis_empty_response_nudge_goes_to_the_cloud(
    gemini_bin: str, fakes: tuple[FakeUpstream, FakeUpstream], tmp_path: Path
) -> None:
    local, cloud = fakes
    config = _config(local.url, cloud.url, "{on_invalid_reply: false}")
    with GliderServer(config, tmp_path, environ={"GLIDER_HOME": str(tmp_path / "gh")}) as g:
        result = run_gemini(gemini_bin, g.url, "small task: list the files here", tmp_path)
        events = list(g.events)
    assert result["response"].startswith("hello from fake gemini gemini-x"), result
    asked_local = _said(local.requests)
    assert len(asked_local) == 2 and not any(NUDGE in s for s in asked_local)  # the turn, the tool result
    (nudged,) = [r for r in cloud.requests if "/v1beta/" in r.path]
    assert NUDGE in json.dumps(nudged.body["contents"][-1])
    assert all(c["parts"] for c in nudged.body["contents"])  # the empty model turn left out
    (esc,) = [d for t, d, _ in events if t == "Escalated"]
    assert (esc["reason"], esc["from"], esc["to"], esc["rule"]) == (
        "client_failure:empty_after_tool",
        "llama",
        "origin",
        "small_local",
    )


def test_with_client_failures_not_escalated_the_nudge_stays_local(
    gemini_bin: str, fakes: tuple[FakeUpstream, FakeUpstream], tmp_path: Path
) -> None:
    local, cloud = fakes
    config = _config(local.url, cloud.url, "{on_invalid_reply: false, on_client_failure: false}")
    with GliderServer(config, tmp_path, environ={"GLIDER_HOME": str(tmp_path / "gh")}) as g:
        run_gemini(gemini_bin, g.url, "small task: list the files here", tmp_path)
        events = list(g.events)
    assert any(NUDGE in s for s in _said(local.requests))
    assert not [r for r in cloud.requests if "/v1beta/" in r.path]
    assert "Escalated" not in [t for t, _, _ in events]
