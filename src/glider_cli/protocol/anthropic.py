"""Anthropic Messages <-> the neutral shape (`ir`): requests, replies, SSE streams.

Inbound (parse_request): `system` (string or text blocks), `role:"system"` messages anywhere in
`messages` (string or blocks; Claude Code sends one mid-conversation) are collected, in order,
into `Request.system`. Content blocks: text, image (base64 or url), tool_use, tool_result (text
and images), thinking. `redacted_thinking`, documents and unknown blocks are dropped when the
request is translated (a passthrough never parses the body, so they survive there).

Outbound (build_request): tool results go in user messages right after the tool_use turn;
consecutive same-role messages are merged; `max_tokens` is required by the API, so 8192 is used
when the client gave none. Thinking parts from another protocol are not sent: the API rejects
thinking blocks without a valid signature.

Streams: StreamDecoder maps the SSE events to ir stream events (message_start -> Start with input
usage, text/thinking/signature/input_json deltas, message_delta -> stop reason and output usage,
message_stop -> Finish, `error` -> Failure). StreamEncoder writes the exact event sequence
message_start, content_block_start, ping, content_block_delta, content_block_stop, message_delta,
message_stop (or `error`). Tool calls become tool_use blocks in the order they start; a call's
argument deltas must arrive before the next call starts (as OpenAI, vLLM, llama.cpp and Ollama send
them), since a closed Anthropic block cannot be reopened. `message_start` reports the upstream's input
count, else `input_estimate`. A client sees `toolu_`-shaped ids: another backend's `call_x` goes out as
`toolu_g_call_x` (`client_id`) and is parsed back as `call_x` (`backend_id`).
"""

from __future__ import annotations

from typing import Any

from glider_cli.protocol import ir
from glider_cli.protocol.encoder_base import StreamEncoderBase
from glider_cli.protocol.errors import anthropic_error
from glider_cli.protocol.sse import SSEEvent, encode_sse

DEFAULT_MAX_TOKENS = 8192
_FOREIGN = "toolu_g_"


def client_id(call_id: str) -> str:
    """A tool call id as an Anthropic client sees it (`toolu_…`), reversible by `backend_id`."""
    safe = ir.safe_id(call_id, "toolu_")
    return safe if safe.startswith(("toolu_", "srvtoolu_")) else _FOREIGN + safe


def backend_id(call_id: str) -> str:
    return call_id[len(_FOREIGN) :] if call_id.startswith(_FOREIGN) else call_id


# ---------------------------------------------------------------- requests


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _image(block: dict[str, Any]) -> ir.Image | None:
    src = block.get("source")
    if not isinstance(src, dict):
        return None
    if src.get("type") == "base64":
        return ir.Image(media_type=str(src.get("media_type", "")), data=str(src.get("data", "")))
    if src.get("type") == "url":
        return ir.Image(url=str(src.get("url", "")))
    return None


def _parts(content: Any) -> list[ir.Part]:
    parts: list[ir.Part] = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(ir.Text(str(block.get("text", ""))))
        elif kind == "image" and (img := _image(block)) is not None:
            parts.append(img)
        elif kind in ("tool_use", "server_tool_use"):
            args = block.get("input")
            parts.append(
                ir.ToolCall(
                    backend_id(str(block.get("id", ""))), str(block.get("name", "")), ir.json_text(args or {})
                )
            )
        elif kind == "tool_result":
            inner: list[ir.Text | ir.Image] = [
                p for p in _parts(block.get("content", "")) if isinstance(p, ir.Text | ir.Image)
            ]
            call_id = backend_id(str(block.get("tool_use_id", "")))
            parts.append(ir.ToolResult(call_id, inner, bool(block.get("is_error", False))))
        elif kind == "thinking":
            parts.append(ir.Thinking(str(block.get("thinking", "")), str(block.get("signature", ""))))
    return parts


def _translatable_tool(tool: Any) -> bool:
    # Server tools (`web_search_…`, `code_execution_…`) have a `type` and no input_schema, and
    # `defer_loading` tools are placeholders of the advanced-tool-use beta: neither is a function
    # another backend could call.
    return (
        isinstance(tool, dict)
        and bool(tool.get("name"))
        and bool(tool.get("input_schema") or "type" not in tool)
        and not tool.get("defer_loading")
    )


def parse_request(body: dict[str, Any]) -> ir.Request:
    system: list[str] = []
    for block in _blocks(body.get("system")):
        if block.get("type") == "text" and block.get("text"):
            system.append(str(block["text"]))
    messages: list[ir.Message] = []
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role == "system":
            system.extend(p.text for p in _parts(msg.get("content")) if isinstance(p, ir.Text) and p.text)
        elif role in ("user", "assistant"):
            messages.append(ir.Message(str(role), _parts(msg.get("content"))))
    tools = [
        ir.Tool(str(t["name"]), str(t.get("description") or ""), t.get("input_schema") or {"type": "object"})
        for t in body.get("tools") or []
        if _translatable_tool(t)
    ]
    stop = body.get("stop_sequences")
    return ir.Request(
        model=str(body.get("model", "")),
        messages=messages,
        system=system,
        tools=tools,
        tool_choice=_parse_choice(body.get("tool_choice")),
        max_tokens=body.get("max_tokens") if isinstance(body.get("max_tokens"), int) else None,
        temperature=ir.as_float(body.get("temperature")),
        top_p=ir.as_float(body.get("top_p")),
        stop=[str(s) for s in stop] if isinstance(stop, list) else [],
        stream=bool(body.get("stream", False)),
    )


def _parse_choice(choice: Any) -> str | None:
    if not isinstance(choice, dict):
        return None
    kind = choice.get("type")
    if kind == "any":
        return "required"
    if kind == "tool":
        return str(choice.get("name", ""))
    return str(kind) if kind in ("auto", "none") else None


def _image_block(img: ir.Image) -> dict[str, Any]:
    if img.data:
        return {"type": "image", "source": {"type": "base64", "media_type": img.media_type, "data": img.data}}
    if img.url.startswith("data:") and ";base64," in img.url:
        head, data = img.url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": head, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": img.url}}


def _out_block(part: ir.Part, *, to_client: bool = False) -> dict[str, Any] | None:
    if isinstance(part, ir.Text):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ir.Image):
        return _image_block(part)
    if isinstance(part, ir.ToolCall):
        return {
            "type": "tool_use",
            "id": client_id(part.id) if to_client else ir.safe_id(part.id, "toolu_"),
            "name": part.name,
            "input": part.arguments_obj(),
        }
    if isinstance(part, ir.ToolResult):
        inner = [b for p in part.content if (b := _out_block(p)) is not None]
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": ir.safe_id(part.call_id, "toolu_"),
            "content": inner,
        }
        if part.is_error:
            block["is_error"] = True
        return block
    return None  # thinking from another protocol has no valid signature


def build_request(req: ir.Request) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for msg in req.messages:
        blocks = [b for p in msg.parts if (b := _out_block(p)) is not None]
        if not blocks:
            continue
        if msg.role == "user":
            # tool_result blocks must open the user turn that follows a tool_use turn
            blocks.sort(key=lambda b: b["type"] != "tool_result")
        if messages and messages[-1]["role"] == msg.role:
            messages[-1]["content"].extend(blocks)
            if msg.role == "user":
                messages[-1]["content"].sort(key=lambda b: b["type"] != "tool_result")
        else:
            messages.append({"role": msg.role, "content": blocks})
    body: dict[str, Any] = {
        "model": req.model,
        "messages": messages,
        "max_tokens": req.max_tokens or DEFAULT_MAX_TOKENS,
    }
    if req.system:
        body["system"] = "\n\n".join(req.system)
    if req.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in req.tools
        ]
    if req.tool_choice and (req.tools or req.tool_choice == "none"):
        body["tool_choice"] = (
            {"type": "any"}
            if req.tool_choice == "required"
            else {"type": req.tool_choice}
            if req.tool_choice in ("auto", "none")
            else {"type": "tool", "name": req.tool_choice}
        )
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if req.top_p is not None:
        body["top_p"] = req.top_p
    if req.stop:
        body["stop_sequences"] = req.stop
    body["stream"] = req.stream
    return body


# ---------------------------------------------------------------- replies


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


def parse_response(body: dict[str, Any]) -> ir.Response:
    return ir.Response(
        id=str(body.get("id", "")),
        model=str(body.get("model", "")),
        parts=_parts(body.get("content")),
        stop_reason=str(body.get("stop_reason") or "end_turn"),
        usage=parse_usage(body.get("usage")),
    )


def build_response(resp: ir.Response, *, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for part in resp.parts:
        block = _out_block(part, to_client=True)
        if block is not None:
            content.append(block)
    return {
        "id": resp.id if resp.id.startswith("msg_") else ir.new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": resp.stop_reason,
        "stop_sequence": None,
        "usage": usage_json(resp.usage),
    }


# ---------------------------------------------------------------- streams


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
                    "usage": usage_json(usage),
                },
            )
        )
        out.append(encode_sse("message_stop", {"type": "message_stop"}))
        return out

    def _error_frames(self, message: str, type: str) -> list[bytes]:
        return [encode_sse("error", anthropic_error(message, type))]
