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


def _tool_bytes(tools: Iterable[Any]) -> int:
    total = 0
    for tool in tools:
        if isinstance(tool, str):
            total += len(tool.encode("utf-8", "surrogatepass"))
            continue
        try:
            total += len(orjson.dumps(tool))
        except (TypeError, orjson.JSONEncodeError):
            total += len(str(tool).encode("utf-8", "surrogatepass"))
    return total


def estimate_tokens(*, system: str = "", messages: Iterable[str] = (), tools: Iterable[Any] = ()) -> int:
    """Estimated prompt tokens: ceil(total UTF-8 bytes / 4).

    `messages` are the texts of every message part (text, tool inputs and tool outputs);
    `tools` are the tool definitions as the client sent them (dicts) or plain strings.
    """
    total = len(system.encode("utf-8", "surrogatepass"))
    for text in messages:
        total += len(text.encode("utf-8", "surrogatepass"))
    total += _tool_bytes(tools)
    return -(-total // BYTES_PER_TOKEN)
