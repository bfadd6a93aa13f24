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
from glider_cli.protocol.anthropic_stream import FOREIGN as _FOREIGN
from glider_cli.protocol.anthropic_stream import StreamDecoder as StreamDecoder
from glider_cli.protocol.anthropic_stream import StreamEncoder as StreamEncoder
from glider_cli.protocol.anthropic_stream import client_id as client_id
from glider_cli.protocol.anthropic_stream import parse_usage as parse_usage
from glider_cli.protocol.anthropic_stream import usage_json as usage_json
from glider_cli.protocol.structured import schema_of

DEFAULT_MAX_TOKENS = 8192


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
        response_schema=schema_of("anthropic", body),
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
        if messages and messages[-1]["role"] == msg.role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": msg.role, "content": blocks})
    for m in messages:
        if m["role"] == "user" and len(m["content"]) > 1:
            # tool_result blocks must open the user turn that follows a tool_use turn (one stable sort
            # per merged message: linear in the message count, where sorting after each merge was not)
            m["content"].sort(key=lambda b: b["type"] != "tool_result")
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
