"""Token estimate: UTF-8 bytes / 4, over the system prompt, the messages and the tools.

Measured against real tokenizers on coding-agent traffic, bytes/4 lands within ~15% for English
prose and code, which is all `context_size` rules need; it costs one `len(str.encode())` per part
and no tokenizer download. Tools count as their JSON text (names, descriptions and schemas are all
sent to the model). The estimate is never negative and never below 1 for a non-empty request.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

BYTES_PER_TOKEN = 4


def utf8_len(text: str) -> int:
    """len(text.encode("utf-8")) without encoding an ASCII string (`isascii` is O(1) in CPython)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _tool_bytes(tools: Iterable[Any]) -> int:
    total = 0
    for tool in tools:
        if isinstance(tool, str):
            total += utf8_len(tool)
            continue
        try:
            total += len(orjson.dumps(tool))
        except (TypeError, orjson.JSONEncodeError):
            total += utf8_len(str(tool))
    return total


def estimate_tokens(*, system: str = "", messages: Iterable[str] = (), tools: Iterable[Any] = ()) -> int:
    """Estimated prompt tokens: ceil(total UTF-8 bytes / 4).

    `messages` are the texts of every message part (text, tool inputs and tool outputs);
    `tools` are the tool definitions as the client sent them (dicts) or plain strings.
    """
    total = utf8_len(system) if system else 0
    for text in messages:  # `utf8_len` inline: one call per part would cost more than its test
        total += len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if tools:
        total += _tool_bytes(tools)
    return -(-total // BYTES_PER_TOKEN)
