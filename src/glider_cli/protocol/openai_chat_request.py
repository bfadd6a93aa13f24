"""OpenAI Chat Completions request bodies <-> `ir.Request` (the request half of `openai_chat`).

Inbound (parse_request): `system` and `developer` messages (anywhere) go to `Request.system` in
order; user content parts `text`/`image_url`; assistant `tool_calls`; `tool` messages become tool
results. `max_completion_tokens` is preferred over `max_tokens`.

Outbound (build_request): all system text is merged into ONE leading system message, because many
local chat templates (Qwen, Llama via vLLM/llama.cpp) reject a system message that is not first.
Tool results become one `tool` message each, placed before any other content of that user turn;
a `tool` message carries text only, so images inside a tool result are dropped, and an error
result is prefixed "Error: " (there is no is_error field). Images go as `image_url` parts. A
streaming request asks for `stream_options.include_usage` so the usage can be tapped. Thinking
parts are not sent. A JSON reply (`response_schema`) is asked for with `response_format`
(`json_schema`, or `json_object` when there is no schema).

The small pieces shared with the reply side and with Ollama's builder (tool call, tool list and
tool result shapes) live here too. Every name is re-exported by `openai_chat`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from glider_cli.protocol import ir
from glider_cli.protocol.structured import schema_of


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
