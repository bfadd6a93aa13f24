"""What the tests of a local model stuck at its output-token limit share: Claude Code's conversation
(the prompt, then each reply and the client's continuation of it) and the config with the strict fake
as both the local backend (Ollama) and the origin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from glider_harness import GliderServer

PROMPT = "tell me a long story about a parser"
# Claude Code's own text after a reply that stopped at max_tokens (its cli.js).
RESUME = (
    "Output token limit hit. Resume directly \u2014 no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. Break remaining work into smaller pieces."
)


def limit_config(url: str, fallback: str = "") -> str:
    """`extends: default` with the fake as the local `ollama` (serving qwen-local) and the origin."""
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{url}', model: qwen-local{fallback}}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{url}'}}\n"
    )


class Conversation:
    """Claude Code's messages: the prompt, then each reply and its continuation (`send` to any server,
    so one conversation can go on across a restart)."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self.headers = dict(headers)
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]

    def send(self, g: GliderServer) -> httpx.Response:
        body = {"model": "claude-x", "max_tokens": 64, "messages": self.messages}
        r = httpx.post(g.url + "/v1/messages", json=body, headers=self.headers, timeout=30)
        assert r.status_code == 200, r.text
        text = "".join(b.get("text", "") for b in r.json()["content"])
        self.messages = [*self.messages, {"role": "assistant", "content": text}]
        self.messages.append({"role": "user", "content": RESUME})
        return r
