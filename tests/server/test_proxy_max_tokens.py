"""`backends.<name>.max_tokens` caps what a translated request asks for, and only that."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream
from glider_cli.config.load import load_config
from glider_cli.errors import ConfigError

pytestmark = pytest.mark.live


def _config(url: str, cap: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{url}', model: qwen-local{cap}}}\n"
        f"  vllm: {{type: openai, side: local, base_url: '{url}/v1', model: coder{cap}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'{cap}}}\n"
        "routing:\n"
        "  rules:\n"
        "    - {name: to_vllm, priority: 101, trigger: {type: explicit, commands: [/vllm]},"
        " action: {target: local, backend: vllm}}\n"
    )


def _ask(url: str, text: str) -> None:
    # What Claude Code sends (max_tokens 128000); the SDK would insist on streaming for that.
    body = {"model": "m", "max_tokens": 128000, "messages": [{"role": "user", "content": text}]}
    r = httpx.post(f"{url}/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=30)
    assert r.status_code == 200, r.text


def test_translated_requests_are_capped_and_passthrough_is_not(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["m", "coder"], ollama_models=["qwen-local"]) as fake,
        GliderServer(_config(fake.url, ", max_tokens: 4096"), tmp_path) as g,
    ):
        _ask(g.url, "say hi /local")
        _ask(g.url, "say hi /vllm")
        _ask(g.url, "say hi /cloud")
        by_path = {r.path: r.body for r in fake.requests}
    assert by_path["/api/chat"]["options"]["num_predict"] == 4096
    assert by_path["/v1/chat/completions"]["max_tokens"] == 4096
    # same-protocol passthrough keeps the client's body as it was
    assert by_path["/v1/messages"]["max_tokens"] == 128000


def test_without_a_cap_the_client_value_goes_through(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["m", "coder"], ollama_models=["qwen-local"]) as fake,
        GliderServer(_config(fake.url, ""), tmp_path) as g,
    ):
        _ask(g.url, "say hi /local")
        body = next(r.body for r in fake.requests if r.path == "/api/chat")
    assert body["options"]["num_predict"] == 128000


def test_a_cap_below_one_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("backends:\n  ollama: {type: ollama, max_tokens: 0}\n")
    with pytest.raises(ConfigError) as info:
        load_config(config=str(path))
    assert "backends.ollama.max_tokens" in str(info.value)
