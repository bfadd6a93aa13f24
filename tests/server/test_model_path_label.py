"""A local model named by its file path (llama.cpp lists the .gguf path it loaded as the model id) reads as
the file's name in episodes, not `llama//models/….gguf` (issue 24 §11); `org/name` ids are kept whole."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, closed_port_url
from glider_cli.domain import model_label

pytestmark = [pytest.mark.live]

GGUF = "/srv/models/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.parametrize(
    ("model", "label"),
    [
        (GGUF, "SmolLM2-135M-Instruct.Q4_1.gguf"),
        ("./models/smol.gguf", "smol.gguf"),
        ("C:\\models\\smol.gguf", "smol.gguf"),
        ("Qwen/Qwen2.5-Coder-7B-Instruct", "Qwen/Qwen2.5-Coder-7B-Instruct"),
        ("qwen2.5-coder:14b", "qwen2.5-coder:14b"),
    ],
)
def test_model_label(model: str, label: str) -> None:
    assert model_label(model) == label


def test_an_episode_names_a_path_model_by_its_file(tmp_path: Path) -> None:
    with FakeUpstream(models=[GGUF]) as llama:
        cfg = (
            "extends: default\nbackends:\n"
            f"  llama: {{type: openai, side: local, base_url: '{llama.url}/v1', model: '{GGUF}'}}\n"
            f"  origin: {{type: origin, side: cloud, base_url: '{closed_port_url()}'}}\n"
            "routing:\n  local_backend: llama\n"
        )
        with GliderServer(cfg, tmp_path, record=False, environ={"GLIDER_HOME": str(tmp_path / "home")}) as g:
            body = {
                "model": "claude-x",
                "max_tokens": 16,
                "messages": [{"role": "user", "content": "hi /local"}],
            }
            r = httpx.post(
                g.url + "/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"}, timeout=30
            )
            assert r.status_code == 200, r.text
            deadline = time.monotonic() + 20
            while True:
                episodes = httpx.get(g.url + "/api/context/episodes", timeout=30).json()
                if (episodes and "answered" in episodes[0]["outcome"]) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
    [ep] = episodes
    assert ep["outcome"].startswith("answered locally by llama/SmolLM2-135M-Instruct.Q4_1.gguf status 200"), (
        ep
    )
    assert "//" not in ep["summary"]
