"""The real Gemini CLI through a live Glider to the real llama.cpp server (SmolLM2-135M, window 8192).

`gemini -p "say hi /local"`: Gemini CLI's main request is ~10,000 estimated tokens (its system prompt,
its `<session_context>`, a dozen tool declarations) and asks for 4,096+ output tokens; the local model
gets a pack (the prompt, a short system part, the tool diet: none here, the backend cannot call tools),
which fits the window, and answers it. Its router-classifier request (JSON mode with a `responseSchema`)
is answered locally too, with JSON that the schema allows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gemini_cli
from e2e.test_gemini_cli import decided, model_calls, run_gemini
from fake_upstream import FakeUpstream
from glider_cli.turns.pack import BRIEF

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.fake_serves(ollama_models=["qwen-local"])]


@pytest.fixture(scope="session")
def gemini_bin() -> str:
    found, why = gemini_cli.find_or_install()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture
def glider(llama_relay: Any, fake: FakeUpstream, tmp_path: Path) -> Iterator[Any]:
    from server.glider_harness import GliderServer

    config = (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{llama_relay.url}/v1', model: smollm2,"
        " context_window: 8192, max_tokens: 64, tools: false}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{fake.url}'}}\n"
        "routing:\n  local_backend: llama\n"
    )
    fake.reset()
    home = tmp_path / "glider-home"
    with GliderServer(config, tmp_path, environ={"GLIDER_HOME": str(home)}) as g:
        yield g


def test_gemini_say_hi_local_is_answered_by_the_real_model_from_a_pack(
    gemini_bin: str, glider: Any, llama_relay: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    result = run_gemini(gemini_bin, glider.url, "say hi /local", tmp_path)
    assert result["response"].strip()
    assert model_calls(fake) == [], "nothing reached Google's side"
    kinds = [(d["family"]["kind"], d["target"], d["backend"]) for d in decided(glider)]
    assert ("new_turn", "local", "llama") in kinds and ("utility", "local", "llama") in kinds, kinds
    assert not [t for t, _, _ in glider.events if t in ("GateRefused", "FallbackUsed")]
    chats = [r for r in llama_relay.requests if r.path == "/v1/chat/completions"]
    main = next(r for r in chats if "response_format" not in r.body)
    system = main.body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(BRIEF)
    assert main.body["messages"][-1]["content"].strip().endswith("say hi /local")
    assert "tools" not in main.body and main.size < 12_000, main.size
    # The classifier's JSON-mode request: answered locally with JSON.
    classifier = next(r for r in chats if "response_format" in r.body)
    assert classifier.body["response_format"]["type"] == "json_object"
    assert "schema" in classifier.body["response_format"]
    assert json.dumps(classifier.body).count("say hi") >= 1
