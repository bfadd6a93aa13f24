"""Gemini `generateContent` requests as Glider sees them: the URL target, call linking, the ChatRequest.

Gemini names the model and the method in the URL path (`/v1beta/models/{model}:{method}`), not in the
body. Contract:

- `parse_target(path)` -> (version, model, method) for `/{version}/models/{model}:{method}`, else None.
  `frame(body, model, method)` is the body as the rest of Glider reads it: the client's JSON plus
  `model` (from the path), `stream` (true for `streamGenerateContent`) and `alt` (the query's `alt`
  system parameter: `sse`, else `json`, a stream sent as one JSON array). A `countTokens` body that
  wraps a `generateContentRequest` is read through to it. The raw bytes a passthrough sends are never
  framed; `with_model(path, model)` is the client's path with another model in it.
- Field names are accepted in both JSON spellings the API takes (`functionCall` / `function_call`).
- Call linking (`link_calls`): Gemini functionCall parts carry no id from Google's API (Gemini CLI makes
  its own, `<name>_<ms>_<n>`, which no reply ever showed), so for routing every call gets an id made
  from the conversation, its order and its name: `gemini-<session>-<ordinal>-<name>`, where the ordinal
  counts the functionCall parts of `contents` in order. A functionResponse answers the call of the same
  name (the first one not answered yet) in the model content before it, or the call at the same
  position when no name matches. The reply tap (`protocol.reply_tap`) numbers a reply's calls from
  the request's count on, so the next request's tool result finds the family that issued the call.
- The session (`session_key`) is a hash of the first two text parts of the conversation: Gemini CLI
  sends no session id, and those parts (its `<session_context>` and the first prompt) are re-sent
  unchanged with every request of a session, its router-classifier request included.
- `parse_chat(body, headers)` builds the `domain.ChatRequest` (protocol "gemini"): `systemInstruction`
  is the system text; `<session_context>` parts are not content (they count towards the estimate);
  thought parts are neither; tool names come from `functionDeclarations` (other tools by their key).
  Malformed known fields raise `errors.RequestError`, unknown ones are skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from glider_cli.domain import ChatRequest, Message, ToolCall
from glider_cli.errors import RequestError
from glider_cli.protocol.tokens import estimate_tokens
from glider_cli.values import lazy_pattern

_TARGET = lazy_pattern(r"^/(v1(?:alpha|beta)?\d*)/models/([^/:]+):([A-Za-z]+)$")
_SNAKE = lazy_pattern(r"(?<!^)([A-Z])")
_ID_SAFE = lazy_pattern(r"[^A-Za-z0-9_-]")
METHODS = ("generateContent", "streamGenerateContent", "countTokens")
CONTEXT_TAG = "<session_context>"
_ROLES = {"user": "user", "model": "assistant", "function": "user", "tool": "user"}


def get(obj: Mapping[str, Any], camel: str) -> Any:
    """A field in either spelling: `functionCall`, else `function_call`."""
    value = obj.get(camel)
    if value is None:
        value = obj.get(_SNAKE.sub(r"_\1", camel).lower())
    return value


def parse_target(path: str) -> tuple[str, str, str] | None:
    m = _TARGET.match(path)
    if m is None or m.group(3) not in METHODS:
        return None
    return m.group(1), m.group(2), m.group(3)


def with_model(path: str, model: str) -> str:
    """The client's Gemini path with `model` in it (unchanged when it is no Gemini path)."""
    target = parse_target(path)
    if target is None:
        return path
    version, _, method = target
    return f"/{version}/models/{model}:{method}"


def frame(body: dict[str, Any], model: str, method: str, query: str = "") -> dict[str, Any]:
    if method == "countTokens":
        inner = get(body, "generateContentRequest")
        if isinstance(inner, Mapping):
            body = dict(inner)
    alt = "sse" if "alt=sse" in query.split("&") else "json"
    return {**body, "model": model, "stream": method == "streamGenerateContent", "alt": alt}


def frame_request(body: dict[str, Any], path: str, query: str) -> dict[str, Any]:
    """`frame` for a request to `path` (the body as it came when the path names no Gemini method)."""
    target = parse_target(path)
    return body if target is None else frame(body, target[1], target[2], query)


# ---------------------------------------------------------------- linking calls and results


def contents_of(body: Mapping[str, Any]) -> list[Any]:
    value = body.get("contents")
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [value]  # the API takes one Content where it takes a list
    if not isinstance(value, list):
        raise RequestError(f"'contents' must be a list, got {type(value).__name__}")
    return value


def parts_of(content: Any) -> list[Mapping[str, Any]]:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []


def session_key(contents: list[Any]) -> str:
    texts: list[str] = []
    for content in contents:
        for part in parts_of(content):
            text = part.get("text")
            if isinstance(text, str) and not part.get("thought"):
                texts.append(text)
                if len(texts) == 2:
                    break
        if len(texts) == 2:
            break
    return hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def call_id(session: str, ordinal: int, name: str) -> str:
    return f"gemini-{session[:8]}-{ordinal}-{_ID_SAFE.sub('_', name)[:40]}"


def reply_call_id(request: ChatRequest | None, k: int, name: str) -> str:
    """The id the next request's `link_calls` gives the k-th call of the reply to `request`."""
    if request is None:
        return ""
    session = (request.session_id or "").removeprefix("gemini-")
    return call_id(session, sum(len(m.tool_calls) for m in request.messages) + k, name)


def link_calls(contents: list[Any], session: str) -> dict[tuple[int, int], str]:
    """(content index, part index) -> id, for every functionCall part and every functionResponse part
    (the id of the call it answers; a response that answers no call gets an id of its own)."""
    ids: dict[tuple[int, int], str] = {}
    ordinal = 0
    open_calls: list[tuple[str, str]] = []  # (name, id) of the latest model content's calls, unanswered
    for ci, content in enumerate(contents):
        parts = parts_of(content)
        calls = [(pi, get(p, "functionCall")) for pi, p in enumerate(parts)]
        calls = [(pi, c) for pi, c in calls if isinstance(c, Mapping)]
        if calls:
            open_calls = []
            for pi, call in calls:
                name = str(call.get("name") or "")
                ids[(ci, pi)] = call_id(session, ordinal, name)
                open_calls.append((name, ids[(ci, pi)]))
                ordinal += 1
        position = 0
        for pi, part in enumerate(parts):
            resp = get(part, "functionResponse")
            if not isinstance(resp, Mapping):
                continue
            name = str(resp.get("name") or "")
            match = next((i for i, (n, _) in enumerate(open_calls) if n == name), None)
            if match is None and position < len(open_calls):
                match = position
            if match is None:
                ids[(ci, pi)] = f"gemini-{session[:8]}-unmatched-{ci}-{pi}"
            else:
                ids[(ci, pi)] = open_calls.pop(match)[1]
            position += 1
    return ids


# ---------------------------------------------------------------- the ChatRequest


def _text_parts(parts: list[Mapping[str, Any]], where: str) -> Iterator[tuple[int, Mapping[str, Any], str]]:
    for pi, part in enumerate(parts):
        text = part.get("text")
        if text is None:
            continue
        if not isinstance(text, str):
            raise RequestError(f"{where}.parts[{pi}].text must be a string")
        yield pi, part, text


def _system(body: Mapping[str, Any], sizes: list[str]) -> str:
    value = get(body, "systemInstruction")
    if value is None:
        return ""
    if isinstance(value, str):
        sizes.append(value)
        return value
    if not isinstance(value, Mapping):
        raise RequestError("'systemInstruction' must be a Content object")
    texts = [t for _, _, t in _text_parts(parts_of(value), "systemInstruction")]
    sizes.extend(texts)
    return "\n".join(texts)


def _tool_names(body: Mapping[str, Any]) -> tuple[tuple[str, ...], list[Any]]:
    tools = body.get("tools")
    if tools is None:
        return (), []
    if not isinstance(tools, list):
        raise RequestError(f"'tools' must be a list, got {type(tools).__name__}")
    names: list[str] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        decls = get(tool, "functionDeclarations")
        if isinstance(decls, list):
            names.extend(str(d["name"]) for d in decls if isinstance(d, Mapping) and d.get("name"))
        names.extend(k for k in tool if k not in ("functionDeclarations", "function_declarations"))
    return tuple(names), tools


def _number(config: Mapping[str, Any], key: str) -> float | None:
    value = get(config, key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError(f"'generationConfig.{key}' must be a number, got {type(value).__name__}")
    return float(value)


def _message(ci: int, content: Any, ids: dict[tuple[int, int], str], sizes: list[str]) -> Message:
    where = f"contents[{ci}]"
    if not isinstance(content, Mapping):
        raise RequestError(f"{where} must be an object, got {type(content).__name__}")
    role = content.get("role") or "user"
    if not isinstance(role, str):
        raise RequestError(f"{where}.role must be a string")
    parts = content.get("parts")
    if parts is not None and not isinstance(parts, list):
        raise RequestError(f"{where}.parts must be a list, got {type(parts).__name__}")
    texts: list[str] = []
    for _, part, text in _text_parts(parts_of(content), where):
        sizes.append(text)
        if not part.get("thought") and not text.lstrip().startswith(CONTEXT_TAG):
            texts.append(text)
    calls: list[ToolCall] = []
    results: list[str] = []
    for pi, part in enumerate(parts_of(content)):
        call = get(part, "functionCall")
        if isinstance(call, Mapping):
            calls.append(ToolCall(ids[(ci, pi)], str(call.get("name") or "")))
            sizes.append(json.dumps(call.get("args") or {}, ensure_ascii=False, default=str))
        resp = get(part, "functionResponse")
        if isinstance(resp, Mapping):
            results.append(ids[(ci, pi)])
            sizes.append(json.dumps(resp.get("response") or {}, ensure_ascii=False, default=str))
    return Message(_ROLES.get(role, role), "\n".join(t for t in texts if t), tuple(calls), tuple(results))


def parse_chat(body: Mapping[str, Any], headers: Mapping[str, str]) -> ChatRequest:
    """The ChatRequest of a framed Gemini body (see the module contract)."""
    model = body.get("model") or ""  # absent from a bare body (the model is in the path)
    if not isinstance(model, str):
        raise RequestError(f"'model' must be a string, got {type(model).__name__}")
    contents = contents_of(body)
    session = session_key(contents)
    ids = link_calls(contents, session)
    sizes: list[str] = []
    system = _system(body, sizes)
    messages = tuple(_message(ci, c, ids, sizes) for ci, c in enumerate(contents))
    names, tools = _tool_names(body)
    config = get(body, "generationConfig")
    if config is not None and not isinstance(config, Mapping):
        raise RequestError("'generationConfig' must be an object")
    config = config or {}
    max_tokens = _number(config, "maxOutputTokens")
    return ChatRequest(
        protocol="gemini",
        model=model,
        stream=bool(body.get("stream")),
        messages=messages,
        system=system,
        tool_names=names,
        estimated_tokens=estimate_tokens(system="", messages=sizes, tools=tools),
        temperature=_number(config, "temperature"),
        max_tokens=None if max_tokens is None else int(max_tokens),
        session_id=f"gemini-{session}",
        headers=headers,
    )
