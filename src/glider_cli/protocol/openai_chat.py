"""OpenAI Chat Completions <-> the neutral shape (`ir`): requests, replies, SSE streams.

Requests (parse_request, build_request and their helpers) live in `openai_chat_request` and are
re-exported here; see its docstring for the inbound and outbound rules.

Replies: `reasoning_content` (vLLM, DeepSeek, llama.cpp) and `reasoning` (OpenRouter) are read as
thinking; the encoder writes thinking as `reasoning_content` deltas. finish_reason maps
stop->end_turn, length->max_tokens, tool_calls/function_call->tool_use, content_filter->refusal.
"""

from __future__ import annotations

import time
from typing import Any

from glider_cli.protocol import ir
from glider_cli.protocol.encoder_base import StreamEncoderBase
from glider_cli.protocol.error_bodies import openai_error, openai_kind
from glider_cli.protocol.openai_chat_request import (
    build_choice,
    build_messages,
    build_request,
    calls_json,
    content_parts,
    image_from_url,
    parse_call,
    parse_choice,
    parse_request,
    tool_result_text,
    tools_json,
)
from glider_cli.protocol.sse import SSEEvent, encode_done, encode_sse

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
