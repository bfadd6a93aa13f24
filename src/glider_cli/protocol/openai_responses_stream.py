"""OpenAI Responses output: the items and envelope of a response, and `StreamEncoder` (`ir` stream
events -> the Responses event sequence, `response.created` to `response.completed` / `.failed`).
Used by `protocol.openai_responses` (which re-exports `StreamEncoder`) for whole replies too.
"""

from __future__ import annotations

import time
from typing import Any

from glider_cli.protocol import ir
from glider_cli.protocol.encoder_base import StreamEncoderBase
from glider_cli.protocol.error_bodies import openai_kind
from glider_cli.protocol.sse import encode_sse


def usage_json(usage: ir.Usage) -> dict[str, Any]:
    total_in = usage.total_input
    return {
        "input_tokens": total_in,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total_in + usage.output_tokens,
    }


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def call_item(item_id: str, call: ir.ToolCall, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "call_id": ir.safe_id(call.id, "call_"),
        "name": call.name,
        "arguments": call.arguments,
    }


def envelope(
    resp_id: str,
    model: str,
    created: int,
    status: str,
    output: list[dict[str, Any]],
    usage: ir.Usage | None,
    stop: str = "end_turn",
) -> dict[str, Any]:
    incomplete = status == "incomplete"
    return {
        "id": resp_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": None,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "truncation": "disabled",
        "metadata": {},
        "usage": usage_json(usage) if usage is not None else None,
    }


def final_status(stop: str) -> str:
    return "incomplete" if stop == "max_tokens" else "completed"


class StreamEncoder(StreamEncoderBase):
    """ir stream events -> Responses SSE events (with `event:` lines and sequence numbers)."""

    def __init__(self, *, model: str, input_estimate: int | None = None) -> None:
        super().__init__(model=model, input_estimate=input_estimate)
        self._id = ir.new_id("resp_")
        self._created = int(time.time())
        self._seq = 0
        self._output: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None
        self._tool_items: dict[int, dict[str, Any]] = {}

    def _emit(self, kind: str, **data: Any) -> bytes:
        out = encode_sse(kind, {"type": kind, "sequence_number": self._seq, **data})
        self._seq += 1
        return out

    def _env(self, status: str, usage: ir.Usage | None = None) -> dict[str, Any]:
        env = envelope(self._id, self.model, self._created, status, list(self._output), usage)
        if env.get("usage") is not None:
            env["usage"] = self.marked(env["usage"])
        return env

    def _opening(self, ev: ir.Start | None) -> list[bytes]:
        return [
            self._emit("response.created", response=self._env("in_progress")),
            self._emit("response.in_progress", response=self._env("in_progress")),
        ]

    def _close(self) -> list[bytes]:
        item, self._open = self._open, None
        if item is None:
            return []
        index = len(self._output)
        out: list[bytes] = []
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out.append(
                self._emit(
                    "response.output_text.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    text=text,
                    logprobs=[],
                )
            )
            out.append(
                self._emit(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    part=item["content"][0],
                )
            )
        else:
            out.append(
                self._emit(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    name=item["name"],
                    arguments=item["arguments"],
                )
            )
        item["status"] = "completed"
        out.append(self._emit("response.output_item.done", output_index=index, item=item))
        self._output.append(item)
        return out

    def _content(self, ev: ir.StreamEvent) -> list[bytes]:
        out: list[bytes] = []
        index = len(self._output)
        if isinstance(ev, ir.TextDelta) and ev.text:
            if self._open is None or self._open["type"] != "message":
                out += self._close()
                index = len(self._output)
                self._open = message_item(ir.new_id("msg_"), "", "in_progress")
                out.append(
                    self._emit(
                        "response.output_item.added", output_index=index, item={**self._open, "content": []}
                    )
                )
                out.append(
                    self._emit(
                        "response.content_part.added",
                        item_id=self._open["id"],
                        output_index=index,
                        content_index=0,
                        part=self._open["content"][0],
                    )
                )
            self._open["content"][0]["text"] += ev.text
            out.append(
                self._emit(
                    "response.output_text.delta",
                    item_id=self._open["id"],
                    output_index=index,
                    content_index=0,
                    delta=ev.text,
                    logprobs=[],
                )
            )
        elif isinstance(ev, ir.ToolStart):
            out += self._close()
            index = len(self._output)
            self._open = call_item(ir.new_id("fc_"), ir.ToolCall(ev.id, ev.name, ""), "in_progress")
            self._tool_items[ev.key] = self._open
            out.append(self._emit("response.output_item.added", output_index=index, item=dict(self._open)))
        elif isinstance(ev, ir.ToolArgs) and ev.json:
            item = self._tool_items.get(ev.key)
            if item is not None and item is self._open:
                item["arguments"] += ev.json
                out.append(
                    self._emit(
                        "response.function_call_arguments.delta",
                        item_id=item["id"],
                        output_index=index,
                        delta=ev.json,
                    )
                )
        return out

    def _closing(self, ev: ir.Finish, usage: ir.Usage) -> list[bytes]:
        out = self._close()
        status = final_status(ev.stop_reason)
        out.append(self._emit(f"response.{status}", response=self._env(status, usage)))
        return out

    def _error_frames(self, message: str, type: str) -> list[bytes]:
        out = self._start()
        env = self._env("failed")
        env["error"] = {"code": openai_kind(type), "message": message}
        out.append(self._emit("response.failed", response=env))
        return out
