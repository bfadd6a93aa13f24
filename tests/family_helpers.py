"""Request builders in the shapes Claude Code and Codex send (see ../shared/CLIENTS.md), for the
turn-family and sticky tests."""

from __future__ import annotations

import json
from typing import Any

from glider_cli.domain import ChatRequest
from glider_cli.protocol.parse import parse_request

TOOLS = [
    {"name": "Bash", "input_schema": {"type": "object"}},
    {"name": "Agent", "input_schema": {"type": "object"}},
]


def cc_body(
    session: str | None, messages: list[dict[str, Any]], *, tools: list[Any] | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-opus-5-5",
        "messages": messages,
        "tools": TOOLS if tools is None else tools,
        "stream": True,
    }
    if session is not None:
        user_id = {"device_id": "d" * 64, "account_uuid": "", "session_id": session}
        body["metadata"] = {"user_id": json.dumps(user_id)}
    body.update(extra)
    return body


def cc(session: str | None, messages: list[dict[str, Any]], **kw: Any) -> tuple[ChatRequest, dict[str, Any]]:
    body = cc_body(session, messages, **kw)
    headers = {"x-claude-code-session-id": session} if session else {}
    return parse_request("anthropic", body, headers), body


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def tool_use(call_id: str, name: str = "Bash", **inp: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": inp or {"command": "ls"}}],
    }


def tool_result(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}]}


def title_request(session: str, prompt: str) -> tuple[ChatRequest, dict[str, Any]]:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    return cc(
        session,
        [user(f"<session>{prompt}</session>")],
        tools=[],
        output_config={"effort": "low", "format": {"type": "json_schema", "schema": schema}},
    )


def codex(session: str, items: list[dict[str, Any]], **meta: Any) -> ChatRequest:
    turn_meta = {"session_id": session, "thread_id": session, "request_kind": "turn", **meta}
    headers = {
        "session-id": session,
        "thread-id": session,
        "x-codex-turn-metadata": json.dumps(turn_meta),
    }
    body = {
        "model": "gpt-5",
        "input": items,
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}],
        "stream": True,
    }
    return parse_request("openai_responses", body, headers)


def codex_user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def codex_call(call_id: str, name: str = "exec_command") -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": '{"cmd": "ls"}', "call_id": call_id}


def codex_output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


class Ids:
    """Deterministic turn ids t1, t2, ..."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"t{self.n}"


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
