"""A request without the empty model turns its history carries (issue 42: a turn escalated to the cloud).

A client keeps an empty answer in its history: Gemini CLI records a local model's empty reply as a
`model` content with no parts, then sends its nudge after it. A cloud service refuses such a history
(Google: `contents[i].parts must not be empty`, Anthropic: a non-final assistant message needs
content), so the request that escalates the turn would fail where a working answer was one request
away. `without_empty_turns(protocol, body)` is `body` without them — Gemini `model` contents whose
parts are empty (or only empty text), Anthropic assistant messages and Chat assistant messages with
neither text nor a tool call, Responses assistant `message` items with no text — or None when it has
none (the body then goes as it is). The last message is always kept. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _no_text(value: Any) -> bool:
    return not (isinstance(value, str) and value.strip())


def _empty(protocol: str, item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    if protocol == "gemini":
        parts = item.get("parts")
        return (
            item.get("role") == "model"
            and isinstance(parts, list)
            and all(isinstance(p, Mapping) and set(p) <= {"text"} and _no_text(p.get("text")) for p in parts)
        )
    if protocol == "openai_responses":
        content = item.get("content")
        return (
            item.get("type", "message") == "message"
            and item.get("role") == "assistant"
            and isinstance(content, list)
            and all(isinstance(c, Mapping) and _no_text(c.get("text")) for c in content)
        )
    if item.get("role") != "assistant":
        return False
    content = item.get("content")
    if protocol == "openai_chat":
        blank = content is None or (isinstance(content, str) and _no_text(content))
        return blank and not item.get("tool_calls")
    if isinstance(content, str):
        return _no_text(content)
    return isinstance(content, list) and all(
        isinstance(b, Mapping) and b.get("type") == "text" and _no_text(b.get("text")) for b in content
    )


def without_empty_turns(protocol: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """See the module contract."""
    key = {"gemini": "contents", "openai_responses": "input"}.get(protocol, "messages")
    items = body.get(key)
    if not isinstance(items, list) or len(items) < 2:
        return None
    kept = [m for m in items[:-1] if not _empty(protocol, m)]
    if len(kept) == len(items) - 1:
        return None
    return {**body, key: [*kept, items[-1]]}
