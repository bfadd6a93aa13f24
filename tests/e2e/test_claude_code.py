"""Real Claude Code (npm @anthropic-ai/claude-code) through a live `glider serve` app.

`claude -p ... --output-format json` runs with ANTHROPIC_BASE_URL at Glider, HOME in a tmp dir, cwd a
tmp git repo, telemetry and updater off and stdin at /dev/null. Glider routes by the default profile's
explicit words, placed after the first word (Claude Code takes a leading `/word` as its own command):
`/local` -> the Ollama fake, `/cloud` -> origin (the fake speaking Anthropic).

`claude` is looked up on PATH, then in <repo>/.ci/node (where .ci/run installs it); if it is in neither,
one `npm install --prefix <repo>/.ci/node @anthropic-ai/claude-code` is tried, and the tests skip with the
reason only when that fails.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import claude_code
from fake_upstream import FakeUpstream

pytestmark = [
    pytest.mark.live,
    pytest.mark.claude_code,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=[claude_code.MODEL], ollama_models=["qwen-local"]),
]


@pytest.fixture(scope="module")
def glider(fake: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from server.glider_harness import GliderServer, backends_yaml

    tmp = tmp_path_factory.mktemp("glider-e2e")
    with GliderServer(backends_yaml(fake.url), tmp, environ={"GLIDER_HOME": str(tmp / "home")}) as g:
        yield g


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _run_claude(claude: str, base_url: str, prompt: str, tmp: Path) -> dict[str, Any]:
    home = tmp / "home"
    home.mkdir()
    work = tmp / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    env = claude_code.env(base_url, home)
    proc = subprocess.run(
        [claude, "-p", prompt, "--output-format", "json"],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, (
        f"claude exited {proc.returncode}: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    assert result.get("is_error") is False, result
    return result


def test_small_prompt_is_answered_by_the_local_backend(
    claude_bin: str, glider: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    result = _run_claude(claude_bin, glider.url, "say hi /local", tmp_path)
    assert "hello from fake ollama" in result["result"]
    model_calls = [r for r in fake.requests if r.path in ("/api/chat", "/v1/messages")]
    assert model_calls and all(r.path == "/api/chat" for r in model_calls)
    assert glider.wait_for("FulfilledLocal")


def test_cloud_word_later_in_the_prompt_goes_to_the_cloud(
    claude_bin: str, glider: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    result = _run_claude(claude_bin, glider.url, "please answer /cloud", tmp_path)
    assert "hello from fake anthropic" in result["result"]
    sent = [r for r in fake.requests if r.path == "/v1/messages"]
    assert sent
    # origin passthrough: Claude Code's own key and beta list reach the upstream untouched
    assert sent[-1].headers["x-api-key"] == "sk-test"
    assert "claude-code-20250219" in sent[-1].headers["anthropic-beta"]
    assert sent[-1].query.get("beta") == "true"


def test_tool_round_trip_stays_on_the_local_side(
    claude_bin: str, glider: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    result = _run_claude(claude_bin, glider.url, "run the check GLIDER_TOOL:Bash /local", tmp_path)
    assert "hello from fake ollama" in result["result"]
    calls = [r for r in fake.requests if r.path in ("/api/chat", "/v1/messages")]
    assert len(calls) >= 2
    assert all(r.path == "/api/chat" for r in calls)
    # The second request carries Claude Code's tool result (it ran `echo glider-tool-ok`).
    assert "glider-tool-ok" in calls[-1].raw.decode()
    assert result["num_turns"] >= 2
