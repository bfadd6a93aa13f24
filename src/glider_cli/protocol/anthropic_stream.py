"""Anthropic Messages streams: `StreamDecoder` (SSE events -> `ir` stream events) and `StreamEncoder`
(`ir` stream events -> the exact event sequence the Messages API sends). Re-exported by
`protocol.anthropic`, whose request and response shapes they share.
"""

from __future__ import annotations

from typing import Any

from glider_cli.protocol import ir
from glider_cli.protocol.encoder_base import StreamEncoderBase
from glider_cli.protocol.error_bodies import anthropic_error
from glider_cli.protocol.sse import SSEEvent, encode_sse

# The prefix a backend's own call id gets for an Anthropic client (`client_id`; `backend_id` undoes it).
FOREIGN = "toolu_g_"


def client_id(call_id: str) -> str:
    """A tool call id as an Anthropic client sees it (`toolu_…`), reversible by `backend_id`."""
    safe = ir.safe_id(call_id, "toolu_")
    return safe if safe.startswith(("toolu_", "srvtoolu_")) else FOREIGN + safe


def parse_usage(usage: Any) -> ir.Usage:
    if not isinstance(usage, dict):
        return ir.Usage()
    return ir.Usage(
        ir.as_int(usage.get("input_tokens")),
        ir.as_int(usage.get("output_tokens")),
        ir.as_int(usage.get("cache_read_input_tokens")),
        ir.as_int(usage.get("cache_creation_input_tokens")),
    )


def usage_json(usage: ir.Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


class StreamDecoder:
    """Anthropic SSE events -> ir stream events."""

    def __init__(self) -> None:
        self._kinds: dict[int, str] = {}
        self._stop = "end_turn"
        self._usage: ir.Usage | None = None

    def decode(self, ev: SSEEvent) -> list[ir.StreamEvent]:
        data = ev.json_object()
        if data is None:
            return []
        kind = data.get("type") or ev.event
        if kind == "message_start":
            msg = data.get("message") or {}
            self._usage = parse_usage(msg.get("usage"))
            return [ir.Start(str(msg.get("id", "")), str(msg.get("model", "")), self._usage)]
        if kind == "content_block_start":
            index = ir.as_int(data.get("index"))
            block = data.get("content_block") or {}
            self._kinds[index] = str(block.get("type"))
            if block.get("type") in ("tool_use", "server_tool_use"):
                return [ir.ToolStart(index, str(block.get("id", "")), str(block.get("name", "")))]
            if block.get("type") == "text" and block.get("text"):
                return [ir.TextDelta(str(block["text"]))]
            return []
        if kind == "content_block_delta":
            index = ir.as_int(data.get("index"))
            delta = data.get("delta") or {}
            dkind = delta.get("type")
            if dkind == "text_delta":
                return [ir.TextDelta(str(delta.get("text", "")))]
            if dkind == "input_json_delta":
                return [ir.ToolArgs(index, str(delta.get("partial_json", "")))]
            if dkind == "thinking_delta":
                return [ir.ThinkingDelta(text=str(delta.get("thinking", "")))]
            if dkind == "signature_delta":
                return [ir.ThinkingDelta(signature=str(delta.get("signature", "")))]
            return []
        if kind == "message_delta":
            delta = data.get("delta") or {}
            if delta.get("stop_reason"):
                self._stop = str(delta["stop_reason"])
            self._usage = ir.merge_usage(self._usage, parse_usage(data.get("usage")))
            return []
        if kind == "message_stop":
            return [ir.Finish(self._stop, self._usage)]
        if kind == "error":
            err = data.get("error") or {}
            return [ir.Failure(str(err.get("message", "upstream error")), str(err.get("type", "api_error")))]
        return []


class StreamEncoder(StreamEncoderBase):
    """ir stream events -> Anthropic SSE event bytes. Thinking is written only with
    `keep_thinking` (a reply that came from Anthropic itself, whose signatures are genuine)."""

    def __init__(self, *, model: str, keep_thinking: bool = False, input_estimate: int | None = None) -> None:
        super().__init__(model=model)
        self.keep_thinking = keep_thinking
        self.input_estimate = input_estimate
        self._open: str | None = None  # "text" | "thinking" | "tool"
        self._index = -1
        self._tool_keys: dict[int, int] = {}

    def _on_start(self, ev: ir.Start) -> list[bytes]:
        # The input usage goes out in message_start, so only the first Start's counts are kept.
        return self._start(ev)

    def _opening(self, ev: ir.Start | None) -> list[bytes]:
        usage = ev.usage if ev is not None and ev.usage is not None else ir.Usage()
        if not usage.total_input and self.input_estimate:
            usage = ir.Usage(self.input_estimate, usage.output_tokens)
        self._usage = usage
        msg_id = ev.id if ev is not None and ev.id.startswith("msg_") else ir.new_id("msg_")
        message: dict[str, Any] = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage_json(usage), "output_tokens": 1},
        }
        return [
            encode_sse("message_start", {"type": "message_start", "message": message}),
            encode_sse("ping", {"type": "ping"}),
        ]

    def _close(self) -> list[bytes]:
        if self._open is None:
            return []
        self._open = None
        return [encode_sse("content_block_stop", {"type": "content_block_stop", "index": self._index})]

    def _open_block(self, kind: str, block: dict[str, Any]) -> list[bytes]:
        out = self._close()
        self._index += 1
        self._open = kind
        out.append(
            encode_sse(
                "content_block_start",
                {"type": "content_block_start", "index": self._index, "content_block": block},
            )
        )
        return out

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return encode_sse(
            "content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta}
        )

    def _content(self, ev: ir.StreamEvent) -> list[bytes]:
        out: list[bytes] = []
        if isinstance(ev, ir.TextDelta):
            if not ev.text:
                return out
            if self._open != "text":
                out += self._open_block("text", {"type": "text", "text": ""})
            out.append(self._delta({"type": "text_delta", "text": ev.text}))
        elif isinstance(ev, ir.ToolStart):
            out += self._open_block(
                "tool", {"type": "tool_use", "id": client_id(ev.id), "name": ev.name, "input": {}}
            )
            self._tool_keys[ev.key] = self._index
        elif isinstance(ev, ir.ToolArgs):
            if ev.json and self._open == "tool" and self._tool_keys.get(ev.key) == self._index:
                out.append(self._delta({"type": "input_json_delta", "partial_json": ev.json}))
        elif isinstance(ev, ir.ThinkingDelta) and self.keep_thinking:
            if self._open != "thinking":
                out += self._open_block("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            if ev.text:
                out.append(self._delta({"type": "thinking_delta", "thinking": ev.text}))
            if ev.signature:
                out.append(self._delta({"type": "signature_delta", "signature": ev.signature}))
        return out

    def _closing(self, ev: ir.Finish, usage: ir.Usage) -> list[bytes]:
        out = self._close()
        out.append(
            encode_sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": ev.stop_reason, "stop_sequence": None},
                    "usage": self.marked(dict(usage_json(usage))),
                },
            )
        )
        out.append(encode_sse("message_stop", {"type": "message_stop"}))
        return out

    def _error_frames(self, message: str, type: str) -> list[bytes]:
        return [encode_sse("error", anthropic_error(message, type))]
