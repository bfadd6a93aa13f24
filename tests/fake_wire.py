"""Hand-written wire replies for the fake upstream (see fake_upstream.py): plan a reply from a
request, then build the exact JSON bodies and SSE/NDJSON event sequences of each protocol
(OpenAI Responses lives in fake_wire_responses.py).

Deliberately independent of `glider_cli.protocol`, so the fake checks the translation layer.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fake_wire_gemini import json_answer

TOOL_MARKER = "GLIDER_TOOL:"
DEFAULT_USAGE = (21, 9)


@dataclass
class ToolReply:
    name: str
    arguments: dict[str, Any] | str | None = None
    # Only in answer to a message the person wrote (not to a tool result): the agent calls the tool
    # once per prompt, then the fake answers its text.
    once: bool = False


@dataclass
class Reply:
    text: str | None = None
    tool: ToolReply | None = None
    thinking: str | None = None
    usage: tuple[int, int] = DEFAULT_USAGE
    event_delay: float = 0.0
    count_tokens: int = 42
    at_limit: bool = False  # the reply stops at the output-token limit (every protocol's reply)
    # False: a Chat server that sends no usage in a stream whatever `stream_options` asks for, as
    # llama-cpp-python does (its whole replies still report usage).
    stream_usage: bool = True


# --------------------------------------------------------------------------- request inspection


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") in ("text", "input_text") and "text" in block:
                parts.append(str(block["text"]))
        return "\n".join(parts)
    return ""


def _last_user_text(protocol: str, body: dict[str, Any]) -> str:
    """The last message's text when it is a user message (a tool result turn yields "")."""
    if protocol == "openai_responses":
        items = body.get("input")
        if isinstance(items, str):
            return items
        if not isinstance(items, list) or not items:
            return ""
        last = items[-1]
        if isinstance(last, dict) and last.get("role") == "user":
            return _text_of(last.get("content"))
        return ""
    messages = body.get("messages") or []
    if not messages:
        return ""
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user":
        return ""
    return _text_of(last.get("content"))


def _tool_schemas(protocol: str, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if protocol == "anthropic" and "name" in tool:
            out[tool["name"]] = tool.get("input_schema") or {}
        elif protocol == "openai_responses" and tool.get("type") == "function":
            out[tool["name"]] = tool.get("parameters") or {}
        elif isinstance(tool.get("function"), dict):
            out[tool["function"]["name"]] = tool["function"].get("parameters") or {}
    return out


def _arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    if not props:
        return {}
    key = next((k for k in ("command", "cmd") if k in props), next(iter(props)))
    kind = props[key].get("type") if isinstance(props[key], dict) else None
    if kind == "array":
        return {key: ["echo", "glider-tool-ok"]}
    if kind in ("number", "integer"):
        return {key: 1}
    if kind == "boolean":
        return {key: True}
    return {key: "echo glider-tool-ok"}


@dataclass
class Plan:
    """What to answer for one request."""

    protocol: str
    model: str
    text: str
    tool_name: str | None
    tool_args: dict[str, Any] | str
    thinking: str | None
    usage: tuple[int, int]
    event_delay: float
    at_limit: bool = False
    # What a Responses reply echoes of its request (the real API returns the request's settings).
    echo: dict[str, Any] = field(default_factory=dict)

    def stop(self, tool: str, limit: str, done: str) -> str:
        """The protocol's stop reason: `tool` after a tool call, `limit` at the token limit, else `done`."""
        return tool if self.tool_name else limit if self.at_limit else done

    @property
    def args_json(self) -> str:
        # A `ToolReply` whose arguments are text sends that text as they are (a model's broken JSON).
        return self.tool_args if isinstance(self.tool_args, str) else json.dumps(self.tool_args)


def _json_mode(protocol: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a JSON-mode request asks for (Ollama `format`, Chat `response_format`), else None."""
    if protocol == "ollama" and body.get("format"):
        fmt = body["format"]
        return fmt if isinstance(fmt, dict) else {"type": "object"}
    rf = body.get("response_format") if protocol == "openai_chat" else None
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        return dict((rf.get("json_schema") or {}).get("schema") or {"type": "object"})
    if isinstance(rf, dict) and rf.get("type") == "json_object":
        return {"type": "object"}
    return None


def plan_reply(protocol: str, body: dict[str, Any], reply: Reply) -> Plan:
    model = str(body.get("model") or "fake-model")
    schemas = _tool_schemas(protocol, body)
    tool_name: str | None = None
    tool_args: dict[str, Any] | str = {}
    if reply.tool is not None and not (reply.tool.once and not _last_user_text(protocol, body)):
        tool_name = reply.tool.name
        tool_args = (
            reply.tool.arguments
            if reply.tool.arguments is not None
            else _arguments_for(schemas.get(tool_name, {}))
        )
    elif schemas:
        last = _last_user_text(protocol, body)
        if TOOL_MARKER in last:
            wanted = last.split(TOOL_MARKER, 1)[1].split()[0] if last.split(TOOL_MARKER, 1)[1].split() else ""
            if wanted in schemas:
                tool_name = wanted
                tool_args = _arguments_for(schemas[wanted])
    schema = _json_mode(protocol, body)
    if reply.text is not None:
        text = reply.text
    elif schema is not None and tool_name is None:
        text = json_answer(schema)  # a JSON-mode request gets JSON, as from a real server
    elif tool_name is not None:
        text = "Using a tool."
    else:
        text = f"hello from fake {protocol} {model}"
    thinking, usage, delay = reply.thinking, reply.usage, reply.event_delay
    echo = {k: body[k] for k in ("instructions", "max_output_tokens", "temperature", "top_p") if k in body}
    return Plan(protocol, model, text, tool_name, tool_args, thinking, usage, delay, reply.at_limit, echo)


def pieces(text: str) -> list[str]:
    """Split text into a few stream deltas (words with their following space)."""
    words = text.split(" ")
    out = [w + " " for w in words[:-1]] + [words[-1]]
    return [p for p in out if p] or [""]


def halves(s: str) -> list[str]:
    mid = len(s) // 2
    return [s[:mid], s[mid:]] if mid else [s]


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


# --------------------------------------------------------------------------- error bodies

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
    503: "overloaded_error",
}


def error_body(protocol: str, status: int, message: str) -> dict[str, Any]:
    if protocol == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if protocol == "ollama":
        return {"error": message}
    kind = (
        "invalid_request_error"
        if status < 500 and status != 429
        else ("rate_limit_exceeded" if status == 429 else "server_error")
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


# --------------------------------------------------------------------------- event builders


def sse_event(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    return sse_event(
        "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
    )


def _block_delta(index: int, delta: dict[str, Any]) -> bytes:
    return sse_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _block_stop(index: int) -> bytes:
    return sse_event("content_block_stop", {"type": "content_block_stop", "index": index})


def anthropic_events(plan: Plan) -> list[bytes]:
    msg_id = new_id("msg_")
    tin, tout = plan.usage
    events: list[bytes] = [
        sse_event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": plan.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": tin, "output_tokens": 1},
                },
            },
        )
    ]
    index = 0
    if plan.thinking is not None:
        events.append(_block_start(index, {"type": "thinking", "thinking": "", "signature": ""}))
        for piece in pieces(plan.thinking):
            events.append(_block_delta(index, {"type": "thinking_delta", "thinking": piece}))
        events.append(_block_delta(index, {"type": "signature_delta", "signature": "fakesig" + "A" * 16}))
        events.append(_block_stop(index))
        index += 1
    events.append(_block_start(index, {"type": "text", "text": ""}))
    events.append(sse_event("ping", {"type": "ping"}))
    for piece in pieces(plan.text):
        events.append(_block_delta(index, {"type": "text_delta", "text": piece}))
    events.append(_block_stop(index))
    if plan.tool_name is not None:
        index += 1
        events.append(
            _block_start(
                index, {"type": "tool_use", "id": new_id("toolu_"), "name": plan.tool_name, "input": {}}
            )
        )
        for part in halves(plan.args_json):
            events.append(_block_delta(index, {"type": "input_json_delta", "partial_json": part}))
        events.append(_block_stop(index))
    events.append(
        sse_event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": plan.stop("tool_use", "max_tokens", "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": tout},
            },
        )
    )
    events.append(sse_event("message_stop", {"type": "message_stop"}))
    return events


def anthropic_json(plan: Plan) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if plan.thinking is not None:
        content.append({"type": "thinking", "thinking": plan.thinking, "signature": "fakesig" + "A" * 16})
    content.append({"type": "text", "text": plan.text})
    if plan.tool_name is not None:
        content.append(
            {"type": "tool_use", "id": new_id("toolu_"), "name": plan.tool_name, "input": plan.tool_args}
        )
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": plan.model,
        "content": content,
        "stop_reason": plan.stop("tool_use", "max_tokens", "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": plan.usage[0], "output_tokens": plan.usage[1]},
    }


def chat_events(plan: Plan, include_usage: bool) -> list[bytes]:
    cid = new_id("chatcmpl-")
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": plan.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            data["usage"] = None
        return sse_event(None, data)

    events = [chunk({"role": "assistant", "content": ""})]
    if plan.thinking is not None:
        events.extend(chunk({"reasoning_content": p}) for p in pieces(plan.thinking))
    events.extend(chunk({"content": p}) for p in pieces(plan.text))
    if plan.tool_name is not None:
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": new_id("call_"),
                            "type": "function",
                            "function": {"name": plan.tool_name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for part in halves(plan.args_json):
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
    events.append(chunk({}, plan.stop("tool_calls", "length", "stop")))
    if include_usage:
        tin, tout = plan.usage
        events.append(
            sse_event(
                None,
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": plan.model,
                    "choices": [],
                    "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
                },
            )
        )
    events.append(b"data: [DONE]\n\n")
    return events


def chat_json(plan: Plan) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": plan.text, "refusal": None}
    if plan.thinking is not None:
        message["reasoning_content"] = plan.thinking
    if plan.tool_name is not None:
        message["tool_calls"] = [
            {
                "id": new_id("call_"),
                "type": "function",
                "function": {"name": plan.tool_name, "arguments": plan.args_json},
            }
        ]
    tin, tout = plan.usage
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": plan.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": plan.stop("tool_calls", "length", "stop"),
            }
        ],
        "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
    }


def _ollama_line(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def _ollama_base(plan: Plan) -> dict[str, Any]:
    return {"model": plan.model, "created_at": "2026-11-29T12:00:00.000000Z"}


def _ollama_done(plan: Plan) -> dict[str, Any]:
    return {
        "done": True,
        "done_reason": "length" if plan.at_limit else "stop",
        "total_duration": 1000000,
        "load_duration": 1000,
        "prompt_eval_count": plan.usage[0],
        "prompt_eval_duration": 1000,
        "eval_count": plan.usage[1],
        "eval_duration": 1000,
    }


def _ollama_tool_calls(plan: Plan) -> list[dict[str, Any]]:
    return [{"function": {"name": plan.tool_name, "arguments": plan.tool_args}}]


def ollama_events(plan: Plan) -> list[bytes]:
    lines: list[bytes] = []
    if plan.thinking is not None:
        for p in pieces(plan.thinking):
            lines.append(
                _ollama_line(
                    {
                        **_ollama_base(plan),
                        "message": {"role": "assistant", "content": "", "thinking": p},
                        "done": False,
                    }
                )
            )
    for p in pieces(plan.text):
        lines.append(
            _ollama_line(
                {**_ollama_base(plan), "message": {"role": "assistant", "content": p}, "done": False}
            )
        )
    if plan.tool_name is not None:
        lines.append(
            _ollama_line(
                {
                    **_ollama_base(plan),
                    "message": {"role": "assistant", "content": "", "tool_calls": _ollama_tool_calls(plan)},
                    "done": False,
                }
            )
        )
    lines.append(
        _ollama_line(
            {**_ollama_base(plan), "message": {"role": "assistant", "content": ""}, **_ollama_done(plan)}
        )
    )
    return lines


def ollama_json(plan: Plan) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": plan.text}
    if plan.thinking is not None:
        message["thinking"] = plan.thinking
    if plan.tool_name is not None:
        message["tool_calls"] = _ollama_tool_calls(plan)
    return {**_ollama_base(plan), "message": message, **_ollama_done(plan)}
