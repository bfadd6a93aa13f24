"""OpenAI Chat Completions <-> the neutral shape (`ir`): requests, replies, SSE streams.

Requests, inbound (parse_request): `system` and `developer` messages (anywhere) go to `Request.system` in
order; user content parts `text`/`image_url`; assistant `tool_calls`; `tool` messages become tool
results. `max_completion_tokens` is preferred over `max_tokens`.

Requests, outbound (build_request): all system text is merged into ONE leading system message, because many
local chat templates (Qwen, Llama via vLLM/llama.cpp) reject a system message that is not first.
Tool results become one `tool` message each, placed before any other content of that user turn;
a `tool` message carries text only, so images inside a tool result are dropped, and an error
result is prefixed "Error: " (there is no is_error field). Images go as `image_url` parts. A
streaming request asks for `stream_options.include_usage` so the usage can be tapped. Thinking
parts are not sent. A JSON reply (`response_schema`) is asked for with `response_format`
(`json_schema`, or `json_object` when there is no schema).

The small pieces shared by requests, replies and Ollama's builder: tool call, tool list and tool
result shapes.

Replies: `reasoning_content` (vLLM, DeepSeek, llama.cpp) and `reasoning` (OpenRouter) are read as
thinking; the encoder writes thinking as `reasoning_content` deltas. finish_reason maps
stop->end_turn, length->max_tokens, tool_calls/function_call->tool_use, content_filter->refusal.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from glider_cli.protocol import ir
from glider_cli.protocol.encoder_base import StreamEncoderBase
from glider_cli.protocol.error_bodies import openai_error, openai_kind
from glider_cli.protocol.sse import SSEEvent, encode_done, encode_sse
from glider_cli.protocol.structured import schema_of

__all__ = [
    "FINISH_TO_STOP",
    "STOP_TO_FINISH",
    "StreamDecoder",
    "StreamEncoder",
    "build_choice",
    "build_messages",
    "build_request",
    "build_response",
    "calls_json",
    "content_parts",
    "image_from_url",
    "parse_call",
    "parse_choice",
    "parse_request",
    "parse_response",
    "parse_usage",
    "tool_result_text",
    "tools_json",
    "usage_json",
]


# ---------------------------------------------------------------- requests


def content_parts(content: Any) -> list[ir.Part]:
    """A Chat `content` (a string or a list of parts) as ir text and image parts."""
    if isinstance(content, str):
        return [ir.Text(content)] if content else []
    parts: list[ir.Part] = []
    for p in content if isinstance(content, list) else []:
        if not isinstance(p, dict):
            continue
        if p.get("type") in ("text", "input_text", "output_text"):
            parts.append(ir.Text(str(p.get("text", ""))))
        elif p.get("type") == "image_url":
            url = p.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            if isinstance(url, str):
                parts.append(image_from_url(url))
    return parts


def image_from_url(url: str) -> ir.Image:
    if url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return ir.Image(media_type=head, data=data)
    return ir.Image(url=url)


def parse_call(call: dict[str, Any]) -> ir.ToolCall:
    """One `tool_calls` entry; arguments given as an object are kept as JSON text."""
    fn = call.get("function") or {}
    args = fn.get("arguments")
    return ir.ToolCall(
        str(call.get("id", "")),
        str(fn.get("name", "")),
        args if isinstance(args, str) else ir.json_text(args or {}),
    )


def calls_json(parts: Iterable[ir.Part]) -> list[dict[str, Any]]:
    """The `tool_calls` list for the tool calls among `parts`."""
    return [
        {
            "id": ir.safe_id(p.id, "call_"),
            "type": "function",
            "function": {"name": p.name, "arguments": p.arguments or "{}"},
        }
        for p in parts
        if isinstance(p, ir.ToolCall)
    ]


def tools_json(tools: Iterable[ir.Tool]) -> list[dict[str, Any]]:
    """The `tools` list (function tools), also what Ollama takes."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def tool_result_text(result: ir.ToolResult) -> str:
    """A tool result as a `tool` message's text: there is no is_error field, so errors say so."""
    text = result.text()
    return f"Error: {text}" if result.is_error else text


def parse_request(body: dict[str, Any]) -> ir.Request:
    system: list[str] = []
    messages: list[ir.Message] = []
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role in ("system", "developer"):
            text = "\n".join(p.text for p in content_parts(msg.get("content")) if isinstance(p, ir.Text))
            if text:
                system.append(text)
        elif role == "user":
            messages.append(ir.Message("user", content_parts(msg.get("content"))))
        elif role == "assistant":
            parts = content_parts(msg.get("content"))
            parts.extend(parse_call(call) for call in msg.get("tool_calls") or [] if isinstance(call, dict))
            messages.append(ir.Message("assistant", parts))
        elif role == "tool":
            inner = [p for p in content_parts(msg.get("content")) if isinstance(p, ir.Text | ir.Image)]
            result = ir.ToolResult(str(msg.get("tool_call_id", "")), inner)
            if (
                messages
                and messages[-1].role == "user"
                and all(isinstance(p, ir.ToolResult) for p in messages[-1].parts)
            ):
                messages[-1].parts.append(result)
            else:
                messages.append(ir.Message("user", [result]))
    tools = []
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            tools.append(
                ir.Tool(
                    str(fn["name"]),
                    str(fn.get("description") or ""),
                    fn.get("parameters") or {"type": "object", "properties": {}},
                )
            )
    stop = body.get("stop")
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    return ir.Request(
        model=str(body.get("model", "")),
        messages=messages,
        system=system,
        tools=tools,
        tool_choice=parse_choice(body.get("tool_choice")),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        temperature=ir.as_float(body.get("temperature")),
        top_p=ir.as_float(body.get("top_p")),
        stop=[stop] if isinstance(stop, str) else [str(s) for s in stop] if isinstance(stop, list) else [],
        stream=bool(body.get("stream", False)),
        response_schema=schema_of("openai_chat", body),
    )


def parse_choice(choice: Any) -> str | None:
    if isinstance(choice, str):
        return choice if choice in ("auto", "none", "required") else None
    if isinstance(choice, dict):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else choice.get("name")
        return str(name) if name else None
    return None


def build_choice(choice: str) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _user_content(parts: Sequence[ir.Part]) -> str | list[dict[str, Any]]:
    if all(isinstance(p, ir.Text) for p in parts):
        return "".join(p.text for p in parts if isinstance(p, ir.Text))
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, ir.Text):
            out.append({"type": "text", "text": p.text})
        elif isinstance(p, ir.Image):
            out.append({"type": "image_url", "image_url": {"url": p.data_url()}})
    return out


def build_messages(req: ir.Request) -> list[dict[str, Any]]:
    """The Chat `messages` list."""
    messages: list[dict[str, Any]] = []
    if req.system:
        messages.append({"role": "system", "content": "\n\n".join(req.system)})
    for msg in req.messages:
        if msg.role == "assistant":
            text = msg.text()
            out: dict[str, Any] = {"role": "assistant", "content": text or None}
            calls = calls_json(msg.parts)
            if calls:
                out["tool_calls"] = calls
            elif not text:
                continue
            messages.append(out)
            continue
        for p in msg.parts:
            if isinstance(p, ir.ToolResult):
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": ir.safe_id(p.call_id, "call_"),
                        "content": tool_result_text(p),
                    }
                )
        rest = [p for p in msg.parts if isinstance(p, ir.Text | ir.Image)]
        if rest:
            messages.append({"role": "user", "content": _user_content(rest)})
    return messages


def build_request(req: ir.Request) -> dict[str, Any]:
    body: dict[str, Any] = {"model": req.model, "messages": build_messages(req)}
    if req.tools:
        body["tools"] = tools_json(req.tools)
        if req.tool_choice:
            body["tool_choice"] = build_choice(req.tool_choice)
    if req.max_tokens is not None:
        body["max_tokens"] = req.max_tokens
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if req.top_p is not None:
        body["top_p"] = req.top_p
    if req.stop:
        body["stop"] = req.stop
    if req.response_schema is not None:
        body["response_format"] = (
            {"type": "json_schema", "json_schema": {"name": "response", "schema": req.response_schema}}
            if req.response_schema
            else {"type": "json_object"}
        )
    body["stream"] = req.stream
    if req.stream:
        body["stream_options"] = {"include_usage": True}
    return body


# ---------------------------------------------------------------- replies

FINISH_TO_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
STOP_TO_FINISH = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "stop_sequence": "stop",
    "refusal": "content_filter",
    "pause_turn": "stop",
}


# ---------------------------------------------------------------- replies


def parse_usage(usage: Any) -> ir.Usage | None:
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = ir.as_int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return ir.Usage(
        max(0, ir.as_int(usage.get("prompt_tokens")) - cached),
        ir.as_int(usage.get("completion_tokens")),
        cached,
    )


def usage_json(usage: ir.Usage) -> dict[str, Any]:
    prompt = usage.total_input
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
    }


def parse_response(body: dict[str, Any]) -> ir.Response:
    choices = body.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    msg = choice.get("message") or {}
    parts: list[ir.Part] = []
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(ir.Thinking(reasoning))
    parts.extend(content_parts(msg.get("content")))
    parts.extend(parse_call(call) for call in msg.get("tool_calls") or [])
    stop = FINISH_TO_STOP.get(str(choice.get("finish_reason")), "end_turn")
    if any(isinstance(p, ir.ToolCall) for p in parts):
        stop = "tool_use"
    return ir.Response(
        str(body.get("id", "")),
        str(body.get("model", "")),
        parts,
        stop,
        parse_usage(body.get("usage")) or ir.Usage(),
    )


def build_response(resp: ir.Response, *, model: str) -> dict[str, Any]:
    text = "".join(p.text for p in resp.parts if isinstance(p, ir.Text))
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    thinking = "".join(p.text for p in resp.parts if isinstance(p, ir.Thinking))
    if thinking:
        message["reasoning_content"] = thinking
    calls = calls_json(resp.parts)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": resp.id if resp.id.startswith("chatcmpl") else ir.new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": STOP_TO_FINISH.get(resp.stop_reason, "stop"),
            }
        ],
        "usage": usage_json(resp.usage),
    }


# ---------------------------------------------------------------- streams


# llama-cpp-python's server ends a stream with [DONE] and no finish_reason when the next request
# interrupts it (its `interrupt_requests`, on by default).
CUT = (
    "stream cut: the server sent [DONE] before any finish_reason (llama-cpp-python does this when another "
    "request interrupts it: start it with --interrupt_requests false)"
)


class StreamDecoder:
    """Chat completion chunks -> ir stream events. `[DONE]` (or a usage chunk after the finish)
    ends the stream."""

    def __init__(self) -> None:
        self._started = False
        self._finish: str | None = None
        self._usage: ir.Usage | None = None
        self._tools: set[int] = set()
        self._done = False

    def decode(self, ev: SSEEvent) -> list[ir.StreamEvent]:
        if self._done:
            return []
        if ev.data.strip() == "[DONE]":
            self._done = True
            if self._finish is None:  # every server sends a finish_reason before [DONE] unless cut
                return [ir.Failure(CUT, "api_error")]
            return [ir.Finish(self._stop(), self._usage)]
        data = ev.json_object()
        if data is None:
            return []
        if "error" in data and not data.get("choices"):
            err = data["error"] if isinstance(data["error"], dict) else {"message": str(data["error"])}
            self._done = True
            return [ir.Failure(str(err.get("message", "upstream error")), "api_error")]
        out: list[ir.StreamEvent] = []
        if not self._started:
            self._started = True
            out.append(ir.Start(str(data.get("id", "")), str(data.get("model", ""))))
        usage = parse_usage(data.get("usage"))
        if usage is not None:
            self._usage = usage
        for choice in data.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                out.append(ir.ThinkingDelta(text=reasoning))
            if isinstance(delta.get("content"), str) and delta["content"]:
                out.append(ir.TextDelta(delta["content"]))
            for call in delta.get("tool_calls") or []:
                key = ir.as_int(call.get("index"))
                fn = call.get("function") or {}
                if key not in self._tools:
                    self._tools.add(key)
                    out.append(ir.ToolStart(key, str(call.get("id") or ""), str(fn.get("name") or "")))
                if fn.get("arguments"):
                    out.append(ir.ToolArgs(key, str(fn["arguments"])))
            if choice.get("finish_reason"):
                self._finish = str(choice["finish_reason"])
        return out

    def end(self) -> list[ir.StreamEvent]:
        """At end of input: servers that omit `[DONE]` still finished if they sent a finish_reason."""
        if self._done or self._finish is None:
            return []
        self._done = True
        return [ir.Finish(self._stop(), self._usage)]

    def _stop(self) -> str:
        if self._tools:
            return "tool_use"
        return FINISH_TO_STOP.get(self._finish or "stop", "end_turn")


class StreamEncoder(StreamEncoderBase):
    """ir stream events -> chat.completion.chunk SSE bytes, ending in `data: [DONE]`."""

    def __init__(self, *, model: str, include_usage: bool = False, input_estimate: int | None = None) -> None:
        super().__init__(model=model, input_estimate=input_estimate)
        self.include_usage = include_usage
        self._id = ir.new_id("chatcmpl-")
        self._created = int(time.time())
        self._tool_index: dict[int, int] = {}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        data: dict[str, Any] = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self.include_usage:
            data["usage"] = None
        return encode_sse(None, data)

    def _opening(self, ev: ir.Start | None) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def _content(self, ev: ir.StreamEvent) -> list[bytes]:
        if isinstance(ev, ir.TextDelta) and ev.text:
            return [self._chunk({"content": ev.text})]
        if isinstance(ev, ir.ThinkingDelta) and ev.text:
            return [self._chunk({"reasoning_content": ev.text})]
        if isinstance(ev, ir.ToolStart):
            index = self._tool_index.setdefault(ev.key, len(self._tool_index))
            call = {
                "index": index,
                "id": ir.safe_id(ev.id, "call_"),
                "type": "function",
                "function": {"name": ev.name, "arguments": ""},
            }
            return [self._chunk({"tool_calls": [call]})]
        if isinstance(ev, ir.ToolArgs) and ev.json and ev.key in self._tool_index:
            return [
                self._chunk(
                    {"tool_calls": [{"index": self._tool_index[ev.key], "function": {"arguments": ev.json}}]}
                )
            ]
        return []

    def _closing(self, ev: ir.Finish, usage: ir.Usage) -> list[bytes]:
        out = [self._chunk({}, STOP_TO_FINISH.get(ev.stop_reason, "stop"))]
        if self.include_usage:
            out.append(
                encode_sse(
                    None,
                    {
                        "id": self._id,
                        "object": "chat.completion.chunk",
                        "created": self._created,
                        "model": self.model,
                        "choices": [],
                        "usage": self.marked(usage_json(usage)),
                    },
                )
            )
        out.append(encode_done())
        return out

    def _error_frames(self, message: str, type: str) -> list[bytes]:
        return [encode_sse(None, openai_error(message, openai_kind(type)))]
