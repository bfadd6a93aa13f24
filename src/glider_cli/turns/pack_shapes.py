"""The three request shapes as the pack (`turns.pack`) reads and rebuilds them. Pure; nothing is modified.

Each shape splits a body into the client's system text and its conversation, finds where the current
turn starts, names the tools offered and used, shortens tools for the diet, and builds the packed body:

    anthropic         `system` (string or text blocks) and `role: "system"` messages; `messages`;
                      tools {name, description, input_schema}; calls are `tool_use` blocks
    openai_chat       `system` / `developer` messages; tools {type: function, function: {...}};
                      calls are an assistant's `tool_calls`
    openai_responses  `instructions` and system / developer input items; tools {type: function | custom |
                      namespace | <built-in>, name, ...}; calls are `function_call` / `custom_tool_call` items

A real user message is user text that answers no tool call and is not only client-injected context
(Claude Code's `<system-reminder>` blocks, Codex's `<environment_context>`, AGENTS.md and permission
messages) or a continuation the client sent on its own (`turns.client_texts`: Claude Code's `Output
token limit hit…`, Gemini CLI's `Please continue.`), so the turn a continuation continues is sent whole;
an image or a file from the user counts as real too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from glider_cli.turns.client_texts import client_continuation
from glider_cli.values import lazy_pattern

_CONTEXT = lazy_pattern(
    r"^\s*(?:<system-reminder>|<environment_context>|<user_instructions>|<permissions instructions>"
    r"|<skills_instructions>|# AGENTS\.md instructions for )"
)
_FOLDED = frozenset({"system", "developer"})
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
_USER_MEDIA = frozenset(
    {"image", "document", "image_url", "input_audio", "input_image", "input_file", "file"}
)


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: whole when it fits, else up to the last line or sentence end
    (or word) in the second half of the budget, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:limit]
    head = text[: limit - 1]
    at = max(head.rfind("\n"), head.rfind(". ") + 1)
    if at < limit // 2:
        at = head.rfind(" ")
    return (head[:at] if at >= limit // 2 else head).rstrip() + "…"


class Split(NamedTuple):
    system: list[str]
    messages: list[dict[str, Any]]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type", "text") in _TEXT_BLOCKS and isinstance(b.get("text"), str)
    )


def _says_something(content: Any) -> bool:
    """User content with words (not only injected context) or media of the user's own."""
    if isinstance(content, str):
        return bool(content.strip()) and not _CONTEXT.match(content) and not client_continuation(content)
    if not isinstance(content, list):
        return False
    for block in content:
        if isinstance(block, str) and block.strip():
            return True
        if not isinstance(block, dict):
            continue
        kind = block.get("type", "text")
        if kind in ("tool_result", "function_call_output"):
            return False
        if kind in _USER_MEDIA:
            return True
        text = block.get("text")
        if not (kind in _TEXT_BLOCKS and isinstance(text, str) and text.strip()):
            continue
        if not _CONTEXT.match(text) and not client_continuation(text):
            return True
    return False


def trim_context(turn: Sequence[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The turn with the client-injected context blocks of its user messages (`<system-reminder>`...)
    cut to `limit` characters each; the messages that change are copies, the others the same objects."""
    out: list[dict[str, Any]] = []
    for m in turn:
        content = m.get("content")
        if m.get("role") != "user" or not isinstance(content, str | list):
            out.append(m)
        elif isinstance(content, str):
            out.append({**m, "content": cut(content, limit)} if _CONTEXT.match(content) else m)
        else:
            blocks = [
                {**b, "text": cut(b["text"], limit)}
                if isinstance(b, dict) and isinstance(b.get("text"), str) and _CONTEXT.match(b["text"])
                else b
                for b in content
            ]
            out.append({**m, "content": blocks} if blocks != content else m)
    return out


def slim_schema(value: Any, limit: int) -> Any:
    """A JSON Schema with `$schema` dropped and every description cut to `limit` characters."""
    if isinstance(value, dict):
        return {
            k: cut(v, limit) if k == "description" and isinstance(v, str) else slim_schema(v, limit)
            for k, v in value.items()
            if k != "$schema"
        }
    if isinstance(value, list):
        return [slim_schema(v, limit) for v in value]
    return value


def _slim(tool: Mapping[str, Any], budget: int, schema_key: str) -> dict[str, Any]:
    out = dict(tool)
    if isinstance(out.get("description"), str):
        out["description"] = cut(out["description"], budget)
    if schema_key in out:
        out[schema_key] = slim_schema(out[schema_key], budget // 4)
    return out


def _listed(body: Mapping[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    return value if isinstance(value, list) else []


class Shape(ABC):
    """One request shape. The subclasses say how to split, slim and build; this is what they share: the
    turn start, the diet, tool names and `tool_choice` upkeep."""

    @abstractmethod
    def split(self, body: Mapping[str, Any]) -> Split: ...

    @abstractmethod
    def used_tools(self, turn: Sequence[Mapping[str, Any]]) -> set[str]: ...

    @abstractmethod
    def slim(self, tool: Mapping[str, Any], keep: set[str], budget: int) -> dict[str, Any] | None:
        """The tool shortened for the diet, or None when it is not kept."""
        ...

    @abstractmethod
    def build(
        self, body: Mapping[str, Any], system: str, turn: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]: ...

    def is_real_user(self, message: Mapping[str, Any]) -> bool:
        return message.get("role") == "user" and _says_something(message.get("content"))

    def text(self, message: Mapping[str, Any]) -> str:
        return text_of(message.get("content"))

    def tool_name(self, tool: Any) -> str | None:
        if not isinstance(tool, dict):
            return None
        name = tool.get("name") or tool.get("type")
        return name if isinstance(name, str) else None

    def turn_start(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """The index of the latest real user message (0 when there is none: everything is the turn)."""
        for i in range(len(messages) - 1, -1, -1):
            if self.is_real_user(messages[i]):
                return i
        return 0

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        return [n for n in (self.tool_name(t) for t in _listed(body, "tools")) if n]

    def diet(self, body: Mapping[str, Any], keep: set[str], budget: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for tool in _listed(body, "tools"):
            if isinstance(tool, dict):
                slim = self.slim(tool, keep, budget)
                if slim is not None:
                    out.append(slim)
        return out

    def _finish(self, out: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if tools:
            out["tools"] = tools
            names = {self.tool_name(t) for t in tools}
            choice = out.get("tool_choice")
            if isinstance(choice, dict):
                fn = choice.get("function")
                named = choice.get("name") or (fn.get("name") if isinstance(fn, dict) else None)
                if named is not None and named not in names:
                    out.pop("tool_choice")
        else:
            out.pop("tools", None)
            out.pop("tool_choice", None)
            out.pop("parallel_tool_calls", None)
        return out


class Anthropic(Shape):
    def split(self, body: Mapping[str, Any]) -> Split:
        system = body.get("system")
        texts = [system] if isinstance(system, str) else [text_of([b]) for b in _listed(body, "system")]
        messages: list[dict[str, Any]] = []
        for m in _listed(body, "messages"):
            if isinstance(m, dict) and m.get("role") in _FOLDED:
                texts.append(text_of(m.get("content")))
            elif isinstance(m, dict):
                messages.append(m)
        return Split([t for t in texts if t], messages)

    def used_tools(self, turn: Sequence[Mapping[str, Any]]) -> set[str]:
        return {
            str(b.get("name"))
            for m in turn
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
        }

    def slim(self, tool: Mapping[str, Any], keep: set[str], budget: int) -> dict[str, Any] | None:
        return _slim(tool, budget, "input_schema") if self.tool_name(tool) in keep else None

    def build(
        self, body: Mapping[str, Any], system: str, turn: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return self._finish({**body, "system": system, "messages": turn}, tools)


class OpenAIChat(Shape):
    def split(self, body: Mapping[str, Any]) -> Split:
        texts: list[str] = []
        messages: list[dict[str, Any]] = []
        for m in _listed(body, "messages"):
            if isinstance(m, dict) and m.get("role") in _FOLDED:
                texts.append(text_of(m.get("content")))
            elif isinstance(m, dict):
                messages.append(m)
        return Split([t for t in texts if t], messages)

    def tool_name(self, tool: Any) -> str | None:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            return str(fn["name"])
        return super().tool_name(tool)

    def used_tools(self, turn: Sequence[Mapping[str, Any]]) -> set[str]:
        names: set[str] = set()
        for m in turn:
            calls = m.get("tool_calls") if m.get("role") == "assistant" else None
            for call in calls if isinstance(calls, list) else []:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                    names.add(fn["name"])
        return names

    def slim(self, tool: Mapping[str, Any], keep: set[str], budget: int) -> dict[str, Any] | None:
        if self.tool_name(tool) not in keep:
            return None
        fn = tool.get("function")
        return {**tool, "function": _slim(fn, budget, "parameters")} if isinstance(fn, dict) else dict(tool)

    def build(
        self, body: Mapping[str, Any], system: str, turn: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return self._finish({**body, "messages": [{"role": "system", "content": system}, *turn]}, tools)


class OpenAIResponses(Shape):
    def split(self, body: Mapping[str, Any]) -> Split:
        instructions = body.get("instructions")
        texts = [instructions] if isinstance(instructions, str) else []
        raw = body.get("input")
        if isinstance(raw, str):
            return Split([t for t in texts if t], [{"type": "message", "role": "user", "content": raw}])
        items: list[dict[str, Any]] = []
        for item in raw if isinstance(raw, list) else []:
            if not isinstance(item, dict):
                continue
            if item.get("type", "message") == "message" and item.get("role") in _FOLDED:
                texts.append(text_of(item.get("content")))
            else:
                items.append(item)
        return Split([t for t in texts if t], items)

    def is_real_user(self, message: Mapping[str, Any]) -> bool:
        return message.get("type", "message") == "message" and super().is_real_user(message)

    def used_tools(self, turn: Sequence[Mapping[str, Any]]) -> set[str]:
        return {
            str(item["name"])
            for item in turn
            if item.get("type") in ("function_call", "custom_tool_call") and isinstance(item.get("name"), str)
        }

    def slim(self, tool: Mapping[str, Any], keep: set[str], budget: int) -> dict[str, Any] | None:
        name = self.tool_name(tool)
        if tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            inner = [t for t in tool["tools"] if name in keep or self.tool_name(t) in keep]
            if not inner:
                return None
            slim = [_slim(t, budget, "parameters") if isinstance(t, dict) else t for t in inner]
            return {**_slim(tool, budget, "parameters"), "tools": slim}
        return _slim(tool, budget, "parameters") if name in keep else None

    def build(
        self, body: Mapping[str, Any], system: str, turn: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return self._finish({**body, "instructions": system, "input": turn}, tools)


SHAPES: Mapping[str, Shape] = {
    "anthropic": Anthropic(),
    "openai_chat": OpenAIChat(),
    "openai_responses": OpenAIResponses(),
}
