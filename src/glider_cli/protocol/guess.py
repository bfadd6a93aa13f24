"""Which protocol a request speaks: from the path it was sent to (`protocol_for_path`; and
`error_protocol`, the shape of an error answered on any path), or guessed from its body's shape
(`guess_protocol`, for `route explain --request` and `route replay`).
Re-exported by `protocol.parse`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MAP = (dict, Mapping)  # plain dicts first: isinstance tries them before the ABC


def protocol_for_path(path: str) -> str | None:
    """The protocol a proxy path speaks (`/v1/messages` -> anthropic), or None."""
    p = path.split("?", 1)[0].rstrip("/")
    if p.endswith((":generateContent", ":streamGenerateContent", ":countTokens")):
        return "gemini"
    if p.endswith("/messages") or p.endswith("/messages/count_tokens"):
        return "anthropic"
    if p.endswith("/chat/completions"):
        return "openai_chat"
    if p.endswith("/responses"):
        return "openai_responses"
    return None


def error_protocol(path: str) -> str:
    """The protocol whose error shape a client calling `path` reads: the path's own, else OpenAI's
    (what Glider's own `/api/*` routes answer in)."""
    return protocol_for_path(path) or "openai_chat"


def guess_protocol(body: Mapping[str, Any]) -> str:
    """Best guess of a bare body's shape, for `route explain --request` without `--protocol`."""
    if "input" in body and "messages" not in body:
        return "openai_responses"
    if "contents" in body and "messages" not in body:
        return "gemini"
    messages = body.get("messages")
    if "system" in body or ("metadata" in body and isinstance(body.get("metadata"), _MAP)):
        return "anthropic"
    if isinstance(messages, list):
        for m in messages:
            if not isinstance(m, _MAP):
                continue
            if m.get("role") in ("developer", "tool") or "tool_calls" in m:
                return "openai_chat"
            if m.get("role") == "system" and isinstance(m.get("content"), str):
                return "openai_chat"
            content = m.get("content")
            if isinstance(content, list):
                for b in content:
                    if isinstance(b, _MAP) and b.get("type") in ("tool_use", "tool_result", "image"):
                        return "anthropic"
                    if isinstance(b, _MAP) and b.get("type") in ("image_url", "input_audio"):
                        return "openai_chat"
    if "max_tokens" in body and "tools" not in body:
        return "anthropic"
    tools = body.get("tools")
    if isinstance(tools, list) and tools and isinstance(tools[0], _MAP):
        return "openai_chat" if "function" in tools[0] else "anthropic"
    return "openai_chat"
