"""OpenAI Responses <-> the neutral shape (`ir`). Inbound (a Codex or SDK client) and replies only:
a Responses backend is used solely as a same-protocol passthrough.

Inbound (parse_request): `instructions` and `system`/`developer` message items (Codex sends its base
prompt as a developer message) go to `Request.system` in order. `message` items with
input_text/output_text/input_image parts, `function_call` items (keyed by `call_id`) and
`function_call_output` items map to text, image, tool call and tool result parts. `reasoning`
items (opaque `encrypted_content`), `additional_tools`, `configuration_update` and any other item
type are dropped. Only `function` tools are translated; `namespace`, `web_search` and other
built-in tools are dropped (a local model cannot run them and their calls would not route back).

Replies: a function call becomes a `function_call` output item with a fresh `fc_` id and the
tool call id as `call_id`. Thinking is not written (see translate's docstring). max_tokens ends
as status "incomplete" with reason max_output_tokens (`response.incomplete` when streaming).

Stream events carry `type` and a `sequence_number` counting from 0, with the same name on the
`event:` line; the stream ends with response.completed / response.incomplete / response.failed.
"""

from __future__ import annotations

import time
from typing import Any

from glider_cli.protocol import ir
from glider_cli.protocol.encoder_base import StreamEncoderBase
from glider_cli.protocol.errors import openai_kind
from glider_cli.protocol.openai_chat import image_from_url
from glider_cli.protocol.sse import SSEEvent, encode_sse

# ---------------------------------------------------------------- requests


def _parts(content: Any) -> list[ir.Part]:
    if isinstance(content, str):
        return [ir.Text(content)] if content else []
    parts: list[ir.Part] = []
    for p in content if isinstance(content, list) else []:
        if not isinstance(p, dict):
            continue
        kind = p.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text"):
            parts.append(ir.Text(str(p.get("text", ""))))
        elif kind == "input_image" and isinstance(p.get("image_url"), str):
            parts.append(image_from_url(p["image_url"]))
    return parts


def _append(messages: list[ir.Message], role: str, part: ir.Part) -> None:
    last = messages[-1] if messages else None
    if (
        last is not None
        and last.role == role
        and (role == "assistant" or all(isinstance(p, ir.ToolResult) for p in last.parts))
    ):
        last.parts.append(part)
    else:
        messages.append(ir.Message(role, [part]))


def parse_request(body: dict[str, Any]) -> ir.Request:
    system: list[str] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        system.append(body["instructions"])
    messages: list[ir.Message] = []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            parts = _parts(item.get("content"))
            if role in ("system", "developer"):
                text = "\n".join(p.text for p in parts if isinstance(p, ir.Text))
                if text:
                    system.append(text)
            elif role in ("user", "assistant") and parts:
                messages.append(ir.Message(str(role), parts))
        elif kind == "function_call":
            call = ir.ToolCall(
                str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("arguments") or "{}")
            )
            _append(messages, "assistant", call)
        elif kind == "function_call_output":
            output = item.get("output")
            inner = [p for p in _parts(output) if isinstance(p, ir.Text | ir.Image)]
            _append(messages, "user", ir.ToolResult(str(item.get("call_id", "")), inner))
    tools = [
        ir.Tool(
            str(t["name"]),
            str(t.get("description") or ""),
            t.get("parameters") or {"type": "object", "properties": {}},
        )
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function" and t.get("name")
    ]
    choice = body.get("tool_choice")
    tool_choice = (
        choice
        if choice in ("auto", "none", "required")
        else str(choice["name"])
        if isinstance(choice, dict) and choice.get("name")
        else None
    )
    max_tokens = body.get("max_output_tokens")
    return ir.Request(
        model=str(body.get("model", "")),
        messages=messages,
        system=system,
        tools=tools,
        tool_choice=tool_choice,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        temperature=ir.as_float(body.get("temperature")),
        top_p=ir.as_float(body.get("top_p")),
        stream=bool(body.get("stream", False)),
    )


# ---------------------------------------------------------------- replies


def parse_usage(usage: Any) -> ir.Usage | None:
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details")
    cached = ir.as_int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return ir.Usage(
        max(0, ir.as_int(usage.get("input_tokens")) - cached), ir.as_int(usage.get("output_tokens")), cached
    )


def usage_json(usage: ir.Usage) -> dict[str, Any]:
    total_in = usage.total_input
    return {
        "input_tokens": total_in,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total_in + usage.output_tokens,
    }


def parse_response(body: dict[str, Any]) -> ir.Response:
    parts: list[ir.Part] = []
    for item in body.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            parts.extend(_parts(item.get("content")))
        elif item.get("type") == "function_call":
            parts.append(
                ir.ToolCall(
                    str(item.get("call_id", "")),
                    str(item.get("name", "")),
                    str(item.get("arguments") or "{}"),
                )
            )
        elif item.get("type") == "reasoning":
            text = "".join(p.text for p in _parts(item.get("summary")) if isinstance(p, ir.Text))
            parts.append(ir.Thinking(text))
    details = body.get("incomplete_details")
    if any(isinstance(p, ir.ToolCall) for p in parts):
        stop = "tool_use"
    elif isinstance(details, dict) and details.get("reason") == "max_output_tokens":
        stop = "max_tokens"
    else:
        stop = "end_turn"
    return ir.Response(
        str(body.get("id", "")),
        str(body.get("model", "")),
        parts,
        stop,
        parse_usage(body.get("usage")) or ir.Usage(),
    )


def _message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def _call_item(item_id: str, call: ir.ToolCall, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "call_id": ir.safe_id(call.id, "call_"),
        "name": call.name,
        "arguments": call.arguments,
    }


def _envelope(
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


def _final_status(stop: str) -> str:
    return "incomplete" if stop == "max_tokens" else "completed"


def build_response(resp: ir.Response, *, model: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    for part in resp.parts:
        if isinstance(part, ir.Text) and part.text:
            if output and output[-1]["type"] == "message":
                output[-1]["content"][0]["text"] += part.text
            else:
                output.append(_message_item(ir.new_id("msg_"), part.text))
        elif isinstance(part, ir.ToolCall):
            output.append(_call_item(ir.new_id("fc_"), part))
    resp_id = resp.id if resp.id.startswith("resp_") else ir.new_id("resp_")
    return _envelope(resp_id, model, int(time.time()), _final_status(resp.stop_reason), output, resp.usage)


# ---------------------------------------------------------------- streams


def usage_from_event(ev: SSEEvent) -> tuple[ir.Usage | None, str | None]:
    """(usage, status) from a terminal Responses event; (None, None) for any other event."""
    if (
        not ev.event
        or not ev.event.startswith("response.")
        or ev.event not in ("response.completed", "response.incomplete", "response.failed")
    ):
        return None, None
    data = ev.json_object()
    resp = data.get("response") if data is not None else None
    if not isinstance(resp, dict):
        return None, None
    return parse_usage(resp.get("usage")), str(resp.get("status", ""))


class StreamEncoder(StreamEncoderBase):
    """ir stream events -> Responses SSE events (with `event:` lines and sequence numbers)."""

    def __init__(self, *, model: str) -> None:
        super().__init__(model=model)
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
        return _envelope(self._id, self.model, self._created, status, list(self._output), usage)

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
                self._open = _message_item(ir.new_id("msg_"), "", "in_progress")
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
            self._open = _call_item(ir.new_id("fc_"), ir.ToolCall(ev.id, ev.name, ""), "in_progress")
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
        status = _final_status(ev.stop_reason)
        out.append(self._emit(f"response.{status}", response=self._env(status, usage)))
        return out

    def _error_frames(self, message: str, type: str) -> list[bytes]:
        out = self._start()
        env = self._env("failed")
        env["error"] = {"code": openai_kind(type), "message": message}
        out.append(self._emit("response.failed", response=env))
        return out
