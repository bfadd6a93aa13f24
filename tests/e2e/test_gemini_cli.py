"""Real Gemini CLI (npm @google/gemini-cli) through a live `glider serve` app.

`gemini -p ... --output-format json` runs with GOOGLE_GEMINI_BASE_URL at Glider, GEMINI_API_KEY set, HOME
a tmp dir with the settings a headless run needs (tests/gemini_cli.py), cwd a tmp git repo and stdin at
/dev/null. Behind Glider the strict fake upstream: its Ollama side is the local backend, its Gemini side
the origin (Google's API as the client would reach it). Routing is the default profile's: `/local` and
`/cloud` anywhere in the prompt (Gemini CLI has no slash-word clash for words after the first).

Each prompt costs Gemini CLI two requests: its router classifier (generateContent, JSON mode: a local
backend must answer it with JSON) and the main streamGenerateContent; a tool prompt adds one request
per model turn.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gemini_cli
from fake_upstream import FakeUpstream

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.fake_serves(ollama_models=["qwen-local"])]


@pytest.fixture(scope="session")
def gemini_bin() -> str:
    found, why = gemini_cli.find_or_install()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def glider(fake: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from server.glider_harness import GliderServer, backends_yaml

    tmp = tmp_path_factory.mktemp("glider-gemini")
    with GliderServer(backends_yaml(fake.url), tmp, environ={"GLIDER_HOME": str(tmp / "home")}) as g:
        yield g


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def run_gemini(gemini: str, base_url: str, prompt: str, tmp: Path, *flags: str) -> dict[str, Any]:
    home = gemini_cli.home(tmp / "home")
    work = tmp / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    proc = subprocess.run(
        [gemini, "-p", prompt, "--output-format", "json", *flags],
        cwd=work,
        env=gemini_cli.env(base_url, home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, (
        f"gemini exited {proc.returncode}: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    assert "error" not in result, result
    return result


def model_calls(fake: FakeUpstream) -> list[Any]:
    return [r for r in fake.requests if r.path == "/api/chat" or r.path.startswith("/v1beta/")]


def decided(g: Any) -> list[dict[str, Any]]:
    return [d for t, d, _ in g.events if t == "RouteDecided"]


def test_say_hi_is_answered_locally(gemini_bin: str, glider: Any, fake: FakeUpstream, tmp_path: Path) -> None:
    result = run_gemini(gemini_bin, glider.url, "say hi /local", tmp_path)
    assert result["response"] == "hello from fake ollama qwen-local"
    calls = model_calls(fake)
    assert [r.path for r in calls] == ["/api/chat", "/api/chat"]
    classifier, main = calls
    # the router classifier asked for JSON and got it (no retries); the main turn carried the tools
    assert "format" in classifier.body and "tools" not in classifier.body and main.body["tools"]
    kinds = [d["family"]["kind"] for d in decided(glider)[-2:]]
    assert kinds == ["utility", "new_turn"]
    assert glider.wait_for("FulfilledLocal", 2)


def test_say_hi_is_answered_by_the_cloud(
    gemini_bin: str, glider: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    result = run_gemini(gemini_bin, glider.url, "say hi /cloud", tmp_path)
    assert result["response"].startswith("hello from fake gemini gemini-")
    calls = model_calls(fake)
    assert len(calls) == 2 and all(r.path.startswith("/v1beta/models/gemini-") for r in calls)
    assert calls[0].path.endswith(":generateContent") and calls[1].path.endswith(":streamGenerateContent")
    # origin passthrough: Gemini CLI's own key and query reach Google's side untouched
    assert calls[1].headers["x-goog-api-key"] == "sk-test-gemini" and calls[1].query == {"alt": "sse"}
    assert calls[1].headers["user-agent"].startswith("GeminiCLI")
    # the model Gemini CLI's classifier chose is the one Google was asked for
    models = result["stats"]["models"]
    assert calls[1].path.split("/")[-1].split(":")[0] in models


@pytest.mark.parametrize("word", ["/local", "/cloud"])
def test_a_shell_tool_round_trip_returns_to_the_same_side(
    gemini_bin: str, glider: Any, fake: FakeUpstream, tmp_path: Path, word: str
) -> None:
    prompt = f"run the check GLIDER_TOOL:run_shell_command {word}"
    result = run_gemini(gemini_bin, glider.url, prompt, tmp_path, "--yolo")
    side = "ollama" if word == "/local" else "gemini"
    assert result["response"].startswith(f"hello from fake {side}")
    assert result["stats"]["tools"]["byName"]["run_shell_command"]["success"] == 1
    calls = model_calls(fake)
    paths = {r.path.split(":")[0] if side == "gemini" else r.path for r in calls}
    assert len(calls) == 3 and all((r.path == "/api/chat") == (side == "ollama") for r in calls)
    # the third request carries the functionResponse with what the shell printed
    assert "glider-tool-ok" in calls[-1].raw.decode() and paths
    last = decided(glider)[-1]
    issued = [d for t, d, _ in glider.events if t == "ToolCallsIssued"][-1]
    assert last["family"]["kind"] == "tool_result"
    assert last["family"]["answered"] == [issued["calls"][0]["id"]]
