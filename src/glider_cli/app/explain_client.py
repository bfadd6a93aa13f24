"""A message as a coding agent sends it, for `glider route explain --client NAME`.

`client_request(name, message) -> (body, protocol, headers)`: a request each client really sent
(captured, package data in `client_requests/`), with its latest user text replaced by `message`: the
same system prompt, tools, history and size as the real first turn, so the router decides as it would
for that client. Every request of these clients carries tools, which rules read (the task
classifier's tools rule, 85, takes them first), so a bare message can be decided differently.

Captured (paths, keys and ids masked): Claude Code 2.1.332 `claude -p` (Anthropic Messages, 12 tools),
Codex 0.171.0 `codex exec` (Responses, 14 tools with its namespaced ones), Gemini CLI 0.61.0 `gemini -p`
(its main `streamGenerateContent` turn, 8 tools; its router classifier request carries none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from glider_cli.errors import RequestError

CLIENTS: dict[str, str] = {"claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}
_DIR = Path(__file__).parent / "client_requests"


def client_request(name: str, message: str) -> tuple[dict[str, Any], str, dict[str, str]]:
    """The captured request of client `name` with `message` as its latest user text."""
    if name not in CLIENTS:
        raise RequestError(f"unknown client {name!r}; expected one of {', '.join(CLIENTS)}")
    data = json.loads((_DIR / f"{name}.json").read_text(encoding="utf-8"))
    body: dict[str, Any] = data["body"]
    protocol: str = data["protocol"]
    if protocol == "anthropic":
        _replace(body["messages"], "role", "content", "text", message)
    elif protocol == "openai_responses":
        _replace(body["input"], "role", "content", "input_text", message)
    else:  # gemini: the model and method are in the path
        from glider_cli.protocol.gemini_request import frame, parse_target

        _replace(body["contents"], "role", "parts", None, message)
        target = parse_target(data["path"])
        assert target is not None, data["path"]
        body = frame(body, target[1], target[2])
    return body, protocol, dict(data["headers"])


def _replace(items: list[Any], role: str, parts: str, kind: str | None, message: str) -> None:
    """Put `message` in the last text part of the last user item (the prompt the person typed)."""
    item = next(i for i in reversed(items) if isinstance(i, dict) and i.get(role) == "user")
    blocks = item[parts]
    if isinstance(blocks, str):
        item[parts] = message
        return
    block = next(
        b for b in reversed(blocks) if isinstance(b, dict) and "text" in b and b.get("type", kind) == kind
    )
    block["text"] = message
