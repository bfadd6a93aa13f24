"""The Gemini request shape as the pack (`turns.pack`) reads and rebuilds it. Pure; nothing is modified.

    gemini   `systemInstruction` (a Content, or a string); `contents` (roles `user` / `model`, parts:
             `text`, `functionCall`, `functionResponse`, `inlineData`...); `tools` is a list of groups:
             `{functionDeclarations: [{name, description, parameters | parametersJsonSchema}]}` and
             built-ins (`googleSearch`, `codeExecution`...) named by their key; `toolConfig`.

Gemini CLI opens every conversation with a `<session_context>` user message (date, OS, working
directory, folder structure): it is context, not the person's turn, and the pack reads environment lines
out of it. A real user message has text that is neither that nor a thought, or media (`inlineData`,
`fileData`); a `functionResponse` answers a call. Field names are read in both JSON spellings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from glider_cli.protocol.gemini_request import CONTEXT_TAG, contents_of, get, parts_of
from glider_cli.turns.client_texts import client_continuation
from glider_cli.turns.pack_shapes import Shape, Split, _slim

_MEDIA = ("inlineData", "fileData")
_DECLS = ("functionDeclarations", "function_declarations")
_SCHEMAS = ("parameters", "parametersJsonSchema", "parameters_json_schema")


def _texts(content: Mapping[str, Any]) -> list[str]:
    return [p["text"] for p in parts_of(content) if isinstance(p.get("text"), str) and not p.get("thought")]


class Gemini(Shape):
    def split(self, body: Mapping[str, Any]) -> Split:
        system = get(body, "systemInstruction")
        texts = [system] if isinstance(system, str) else _texts(system) if isinstance(system, Mapping) else []
        messages = [c for c in contents_of(body) if isinstance(c, dict)]
        return Split([t for t in texts if t], messages)

    def is_real_user(self, message: Mapping[str, Any]) -> bool:
        if (message.get("role") or "user") != "user":
            return False
        parts = parts_of(message)
        if any(get(p, "functionResponse") is not None for p in parts):
            return False
        if any(get(p, m) is not None for p in parts for m in _MEDIA):
            return True
        return any(
            t.strip() and not t.lstrip().startswith(CONTEXT_TAG) and not client_continuation(t)
            for t in _texts(message)
        )

    def text(self, message: Mapping[str, Any]) -> str:
        return "\n".join(_texts(message))

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        names: list[str] = []
        tools = body.get("tools")
        for group in tools if isinstance(tools, list) else []:
            if not isinstance(group, Mapping):
                continue
            decls = get(group, "functionDeclarations")
            for d in decls if isinstance(decls, list) else []:
                if isinstance(d, Mapping) and isinstance(d.get("name"), str):
                    names.append(d["name"])
            names.extend(k for k in group if k not in _DECLS)
        return names

    def used_tools(self, turn: Sequence[Mapping[str, Any]]) -> set[str]:
        names: set[str] = set()
        for content in turn:
            for part in parts_of(content):
                call = get(part, "functionCall")
                if isinstance(call, Mapping) and isinstance(call.get("name"), str):
                    names.add(call["name"])
        return names

    def slim(self, tool: Mapping[str, Any], keep: set[str], budget: int) -> dict[str, Any] | None:
        """A function declaration shortened for the diet, or None when it is not kept."""
        if tool.get("name") not in keep:
            return None
        key = next((k for k in _SCHEMAS if k in tool), "parameters")
        return _slim(tool, budget, key)

    def diet(self, body: Mapping[str, Any], keep: set[str], budget: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        tools = body.get("tools")
        for group in tools if isinstance(tools, list) else []:
            if not isinstance(group, Mapping):
                continue
            decls = get(group, "functionDeclarations")
            if isinstance(decls, list):
                kept = [s for d in decls if isinstance(d, Mapping) for s in [self.slim(d, keep, budget)] if s]
                if kept:
                    out.append({"functionDeclarations": kept})
            builtins = {k: v for k, v in group.items() if k not in _DECLS and k in keep}
            if builtins:
                out.append(builtins)
        return out

    def build(
        self, body: Mapping[str, Any], system: str, turn: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        out = {k: v for k, v in body.items() if k != "system_instruction"}
        out["systemInstruction"] = {"parts": [{"text": system}]}
        out["contents"] = turn
        if tools:
            out["tools"] = tools
        else:
            for key in ("tools", "toolConfig", "tool_config"):
                out.pop(key, None)
        return out
