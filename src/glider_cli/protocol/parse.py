"""Build the one internal request model (`domain.ChatRequest`) from the three request shapes clients send.

Contract:
- `parse_request(protocol, body, headers)` accepts `anthropic` (Messages), `openai_chat` (Chat
  Completions), `openai_responses` (Responses) and `gemini` (`protocol.gemini_request`: a framed
  generateContent body). It is pure: no I/O, the body is not modified.
- Unknown fields, block types and item types are never rejected; they are skipped for routing
  (their text still counts towards the token estimate when it is text). A body whose *known*
  fields have the wrong shape (messages not a list, a message that is not an object, a model that
  is not a string, a block whose `type` is not a string...) raises `errors.RequestError` (status
  400) naming the field: `protocol.inbound_types` checks the JSON type of every field any part of
  Glider reads, at every depth, before anything reads it.
- `role: "system"` / `"developer"` messages inside `messages`/`input` are folded into
  `ChatRequest.system`, so `messages[-1]` is always the most recent user/assistant/tool turn.
- `Message.content` is what a person or model wrote: the text blocks joined by newlines. Tool
  outputs (`tool_result`, `function_call_output`, role `tool`) are not content (the message
  records the ids it answers); Claude Code's injected `<system-reminder>` text blocks are not
  content either. Both still count towards `estimated_tokens`.
- `session_id` comes from `X-Claude-Code-Session-Id`, then `metadata.user_id` (a JSON string with a
  `session_id`), then the `session-id` header (Codex).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from glider_cli.domain import ChatRequest, Message, Protocol_, ToolCall
from glider_cli.errors import RequestError
from glider_cli.protocol.guess import guess_protocol as guess_protocol
from glider_cli.protocol.guess import protocol_for_path as protocol_for_path
from glider_cli.protocol.inbound_types import check_types
from glider_cli.protocol.tokens import estimate_tokens

PROTOCOLS: tuple[str, ...] = ("anthropic", "openai_chat", "openai_responses", "gemini")
_FOLDED_ROLES = frozenset({"system", "developer"})
_REMINDER = "<system-reminder>"
# `text.lstrip().startswith(_REMINDER)` without the copy `lstrip` makes of a text led by whitespace
# (`\s` is `str.isspace`'s whitespace, as `lstrip`'s is).
_REMINDER_AFTER_SPACE = re.compile(r"\s*" + _REMINDER)
# A parsed body is made of dicts: the exact-type test comes first, the ABC check (slower) after it.
_MAP = (dict, Mapping)
_EXACT = 1 << 53  # an int a float holds exactly


def _lower_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    if not headers:
        return {}
    return {str(k).lower(): str(v) for k, v in headers.items()}


def _opt_str(body: Mapping[str, Any], key: str, *, required: bool = False) -> str:
    value = body.get(key)
    if value is None:
        if required:
            raise RequestError(f"request body has no {key!r}")
        return ""
    if not isinstance(value, str):
        raise RequestError(f"{key!r} must be a string, got {type(value).__name__}")
    return value


def _number(body: Mapping[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RequestError(f"{key!r} must be a number, got {type(value).__name__}")
        return float(value)
    return None


def _int(body: Mapping[str, Any], *keys: str) -> int | None:
    value = _number(body, *keys)
    return None if value is None else int(value)


def _stream(body: Mapping[str, Any]) -> bool:
    value = body.get("stream", False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError(f"'stream' must be true or false, got {type(value).__name__}")
    return value


def _as_text(value: Any) -> str:
    """Any tool output / unknown content as text for the token estimate."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_as_text(v) for v in value)
    if isinstance(value, _MAP):
        text = value.get("text")
        if isinstance(text, str):
            return text
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _blocks(
    content: Any, where: str, parts: list[str], at: int = -1
) -> tuple[str, list[ToolCall], list[str]]:
    """Text, tool calls and tool-result ids of a content value (a string or a list of blocks); the
    text of every part goes to `parts` (for the token estimate). `where` names the value in errors;
    with `at` >= 0 it is a format string for that index (the name is only made when there is an
    error to report)."""
    if content is None:
        return "", [], []
    if isinstance(content, str):
        parts.append(content)
        return content, [], []
    if not isinstance(content, list):
        raise RequestError(
            f"{_at(where, at)} must be a string or a list of blocks, got {type(content).__name__}"
        )
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[str] = []
    add = parts.append
    for i, block in enumerate(content):
        if isinstance(block, str):
            add(block)
            texts.append(block)
            continue
        if type(block) is not dict:
            block = _object(block, f"{_at(where, at)}[{i}]")
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text") or (kind is None and "text" in block):
            text = block.get("text")
            if not isinstance(text, str):
                raise RequestError(f"{_at(where, at)}[{i}].text must be a string")
            add(text)
            if text[:1].isspace():
                if _REMINDER_AFTER_SPACE.match(text) is None:
                    texts.append(text)
            elif not text.startswith(_REMINDER):
                texts.append(text)
        elif kind == "tool_use":
            calls.append(ToolCall(id=str(block.get("id") or ""), name=str(block.get("name") or "")))
            add(_as_text(block.get("input")))
        elif kind == "tool_result":
            results.append(str(block.get("tool_use_id") or ""))
            add(_as_text(block.get("content")))
        else:
            # thinking, images, documents, refusals...: unknown to routing; keep their text size.
            add(_as_text(block.get("text") or block.get("thinking") or ""))
    if len(texts) == 1:  # one text (most messages): itself, not a copy
        return texts[0], calls, results
    return "\n".join([t for t in texts if t]), calls, results


def _at(where: str, at: int) -> str:
    return where.format(at) if at >= 0 else where


def _role(item: Mapping[str, Any], where: str) -> str:
    role = item.get("role")
    if not isinstance(role, str):
        raise RequestError(f"{where}.role must be a string")
    return role


def _object(item: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(item, _MAP):
        raise RequestError(f"{where} must be an object, got {type(item).__name__}")
    return item


def _message_list(body: Mapping[str, Any]) -> list[Any]:
    value = body.get("messages")
    if value is None:
        raise RequestError("request body has no 'messages'")
    if not isinstance(value, list):
        raise RequestError(f"'messages' must be a list, got {type(value).__name__}")
    return value


def _messages(
    body: Mapping[str, Any], system: list[str], parts: list[str]
) -> Iterator[tuple[Mapping[str, Any], str, str, list[ToolCall], list[str]]]:
    """Each entry of `messages` with its role and its content's text, tool calls and tool-result
    ids; system and developer messages are folded into `system` instead."""
    for i, raw in enumerate(_message_list(body)):
        item = raw if type(raw) is dict else _object(raw, f"messages[{i}]")
        role = item.get("role")
        if type(role) is not str:
            role = _role(item, f"messages[{i}]")
        content = item.get("content")
        text: str
        calls: list[ToolCall]
        results: list[str]
        if type(content) is str:  # `_blocks` of a string, inline: most messages of a chat are one
            parts.append(content)
            text, calls, results = content, [], []
        else:
            text, calls, results = _blocks(content, "messages[{}].content", parts, i)
        if role in _FOLDED_ROLES:
            system.append(text)
            continue
        yield item, role, text, calls, results


def _listed_tools(body: Mapping[str, Any]) -> list[Any]:
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise RequestError(f"'tools' must be a list, got {type(tools).__name__}")
    for i, tool in enumerate(tools):
        if not isinstance(tool, _MAP):
            raise RequestError(f"tools[{i}] must be an object, got {type(tool).__name__}")
    return tools


def _tool_names(tools: Any) -> tuple[tuple[str, ...], list[Any]]:
    if tools is None:
        return (), []
    if not isinstance(tools, list):
        raise RequestError(f"'tools' must be a list, got {type(tools).__name__}")
    names: list[str] = []
    for tool in tools:
        if not isinstance(tool, _MAP):
            continue
        fn = tool.get("function")  # most tools have none: no ABC check of None against Mapping
        name = fn.get("name") if fn is not None and isinstance(fn, _MAP) else tool.get("name")
        if not isinstance(name, str):
            name = tool.get("type") if isinstance(tool.get("type"), str) else None
        if name:
            names.append(name)
        nested = tool.get("tools")
        if isinstance(nested, list):
            names.extend(_tool_names(nested)[0])
    return tuple(names), tools


def _system_blocks(value: Any, system: list[str], parts: list[str]) -> None:
    """Anthropic's `system` (a string or a list of blocks): its text to `system`, every block's text
    to `parts`. Of a list, every block is system text (Claude Code's reminders and billing header
    too), each as `_as_text` gives it, joined by newlines."""
    if type(value) is list:
        # Text blocks only (Claude Code's system): their texts, each given to `system` as it is; the
        # system text joins them with the rest by newlines, as their join would be (one empty text
        # among several would be dropped there, so that join is made here).
        texts: list[str] = []
        for block in value:
            text = block.get("text") if type(block) is dict and block.get("type") == "text" else None
            if type(text) is not str:
                break
            texts.append(text)
        else:
            parts.extend(texts)
            if len(texts) > 1 and "" in texts:
                system.append("\n".join(texts))
            else:
                system.extend(texts)
            return
    text, _, _ = _blocks(value, "system", parts)
    if isinstance(value, list):
        text = "\n".join([_as_text(b) for b in value])
    system.append(text)


def _parse_anthropic(
    body: Mapping[str, Any], system: list[str], messages: list[Message], parts: list[str]
) -> list[Any]:
    value = body.get("system")
    if value is not None:
        _system_blocks(value, system, parts)
    listed = body.get("messages")
    if type(listed) is not list:
        listed = _message_list(body)
    append = messages.append
    add = parts.append
    # `_messages`, inline: a Claude Code conversation is hundreds of messages.
    for i, raw in enumerate(listed):
        item = raw if type(raw) is dict else _object(raw, f"messages[{i}]")
        role = item.get("role")
        if type(role) is not str:
            role = _role(item, f"messages[{i}]")
        content = item.get("content")
        if type(content) is str:
            add(content)
            if role in _FOLDED_ROLES:
                system.append(content)
            else:
                append(Message(role, content))
            continue
        text, calls, results = _blocks(content, "messages[{}].content", parts, i)
        if role in _FOLDED_ROLES:
            system.append(text)
        else:
            append(Message(role, text, tuple(calls) if calls else (), tuple(results) if results else ()))
    return [] if body.get("tools") is None else _listed_tools(body)


def _parse_chat(
    body: Mapping[str, Any], system: list[str], messages: list[Message], parts: list[str]
) -> list[Any]:
    for item, role, text, calls, results in _messages(body, system, parts):
        raw_calls = item.get("tool_calls")
        if isinstance(raw_calls, list):
            for call in raw_calls:
                if isinstance(call, _MAP):
                    fn = call.get("function")
                    fn = fn if isinstance(fn, _MAP) else {}
                    calls.append(ToolCall(id=str(call.get("id") or ""), name=str(fn.get("name") or "")))
                    parts.append(_as_text(fn.get("arguments")))
        if role == "tool":
            results.append(str(item.get("tool_call_id") or ""))
            text = ""
        messages.append(Message(role, text, tuple(calls), tuple(results)))
    return _listed_tools(body)


def _parse_responses(
    body: Mapping[str, Any], system: list[str], messages: list[Message], parts: list[str]
) -> list[Any]:
    instructions = _opt_str(body, "instructions")
    if instructions:
        system.append(instructions)
        parts.append(instructions)
    raw = body.get("input")
    if raw is None:
        raise RequestError("request body has no 'input'")
    extra_tools: list[Any] = []
    if isinstance(raw, str):
        parts.append(raw)
        messages.append(Message("user", raw))
        items: list[Any] = []
    elif isinstance(raw, list):
        items = raw
    else:
        raise RequestError(f"'input' must be a string or a list, got {type(raw).__name__}")
    for i, raw_item in enumerate(items):
        where = f"input[{i}]"
        item = _object(raw_item, where)
        kind = item.get("type")
        if kind == "message" or (kind is None and "role" in item):
            role = _role(item, where)
            text, _, _ = _blocks(item.get("content"), "input[{}].content", parts, i)
            if role in _FOLDED_ROLES:
                system.append(text)
            else:
                messages.append(Message(role, text))
        elif kind == "function_call":
            call = ToolCall(id=str(item.get("call_id") or ""), name=str(item.get("name") or ""))
            parts.append(_as_text(item.get("arguments")))
            messages.append(Message("assistant", "", tool_calls=(call,)))
        elif kind == "function_call_output":
            parts.append(_as_text(item.get("output")))
            messages.append(Message("tool", "", tool_results=(str(item.get("call_id") or ""),)))
        elif kind == "additional_tools":
            tools = item.get("tools")
            if isinstance(tools, list):
                extra_tools.extend(tools)
        else:
            parts.append(_as_text(item.get("text") or item.get("summary") or ""))
    return _listed_tools(body) + extra_tools


def _session_id(body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    sid = headers.get("x-claude-code-session-id")
    if sid:
        return sid
    metadata = body.get("metadata")
    if metadata is not None and isinstance(metadata, _MAP):
        user_id = metadata.get("user_id")
        if isinstance(user_id, str) and user_id.startswith("{"):
            try:
                decoded = json.loads(user_id)
            except ValueError:
                decoded = None
            if isinstance(decoded, _MAP) and isinstance(decoded.get("session_id"), str):
                return str(decoded["session_id"]) or None
    return headers.get("session-id") or None


_PARSERS = {"anthropic": _parse_anthropic, "openai_chat": _parse_chat, "openai_responses": _parse_responses}


def parse_request(
    protocol: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
    *,
    lowered: bool = False,
) -> ChatRequest:
    """A ChatRequest from a client's request body. Raises RequestError for a malformed body.
    `lowered`: `headers` is a dict of str whose names are lower-case already (the proxy's); it is
    kept as the request's headers as it is."""
    parser = _PARSERS.get(protocol)
    if parser is None and protocol != "gemini":
        raise RequestError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    if not isinstance(body, _MAP):
        raise RequestError(f"request body must be a JSON object, got {type(body).__name__}")
    check_types(protocol, body)
    if parser is None:
        from glider_cli.protocol.gemini_request import parse_chat

        low = headers if lowered and type(headers) is dict else _lower_headers(headers)
        try:
            return parse_chat(body, low)
        except RecursionError:
            raise RequestError("request body is nested too deeply") from None
    # The scalar fields read inline when they have their usual type; the helpers say what is wrong.
    model = body.get("model")
    if type(model) is not str:
        model = _opt_str(body, "model", required=True)
    # What the parser collects: the system texts, the messages, and the text of every part (for the
    # token estimate).
    systems: list[str] = []
    messages: list[Message] = []
    parts: list[str] = []
    try:
        raw_tools = parser(body, systems, messages, parts)
        names, tool_defs = _tool_names(raw_tools) if raw_tools else ((), raw_tools)
        system = "\n".join([s for s in systems if s]) if systems else ""
        # Every system text is in `parts` already (the folded messages, `instructions`, the system blocks).
        tokens = estimate_tokens(messages=parts, tools=tool_defs)
    except RecursionError:
        raise RequestError("request body is nested too deeply") from None
    low = headers if lowered and type(headers) is dict else _lower_headers(headers)
    proto: Protocol_ = protocol  # type: ignore[assignment]
    stream = body.get("stream", False)
    if type(stream) is not bool:
        stream = _stream(body)
    temperature = body.get("temperature")
    if temperature is not None:
        temperature = _number(body, "temperature")
    max_tokens = body.get("max_tokens")
    if type(max_tokens) is not int or not -_EXACT < max_tokens < _EXACT:  # int(float(n)) is n below 2**53
        max_tokens = _int(body, "max_tokens", "max_completion_tokens", "max_output_tokens")
    return ChatRequest(
        proto,
        model,
        stream,
        tuple(messages),
        system,
        names,
        tokens,
        temperature,
        max_tokens,
        _session_id(body, low),
        low,
    )
