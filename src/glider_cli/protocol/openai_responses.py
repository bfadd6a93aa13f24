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
from glider_cli.protocol.openai_chat import image_from_url
from glider_cli.protocol.openai_responses_stream import StreamEncoder as StreamEncoder
from glider_cli.protocol.openai_responses_stream import call_item, envelope, final_status, message_item
from glider_cli.protocol.openai_responses_stream import usage_json as usage_json
from glider_cli.protocol.sse import SSEEvent
from glider_cli.protocol.structured import schema_of

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
        response_schema=schema_of("openai_responses", body),
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


def build_response(resp: ir.Response, *, model: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    for part in resp.parts:
        if isinstance(part, ir.Text) and part.text:
            if output and output[-1]["type"] == "message":
                output[-1]["content"][0]["text"] += part.text
            else:
                output.append(message_item(ir.new_id("msg_"), part.text))
        elif isinstance(part, ir.ToolCall):
            output.append(call_item(ir.new_id("fc_"), part))
    resp_id = resp.id if resp.id.startswith("resp_") else ir.new_id("resp_")
    return envelope(resp_id, model, int(time.time()), final_status(resp.stop_reason), output, resp.usage)


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
