"""Ollama native chat (`POST /api/chat`) <-> the neutral shape: outbound requests, replies, NDJSON.

Outbound (build_request): one leading system message (all system text merged, as for OpenAI Chat);
message `content` is always a string; base64 images go in the message's `images` list (URL images
are dropped: Ollama only takes inline data); tool calls carry `arguments` as an object and no id;
tool results are `role:"tool"` messages with `tool_name` (looked up from the call id) since Ollama
has no call ids. Sampling goes in `options` (temperature, top_p, num_predict, stop). `stream` is
always explicit, because Ollama streams by default. A JSON reply (`response_schema`) is asked for with
`format` (the schema, or "json").

Replies: Ollama gives no tool call ids, so each call gets a fresh `call_` id (unique per reply, so
ids never collide across turns of a conversation). `message.thinking` is read as thinking.
done_reason maps stop->end_turn, length->max_tokens; any tool call makes it tool_use. Usage is
prompt_eval_count / eval_count. A line `{"error": ...}` is a mid-stream failure.
"""

from __future__ import annotations

from typing import Any

from glider_cli.protocol import ir
from glider_cli.protocol.openai_chat import tool_result_text, tools_json

DONE_TO_STOP = {"stop": "end_turn", "length": "max_tokens"}


def build_request(req: ir.Request, *, num_ctx: int | None = None) -> dict[str, Any]:
    names: dict[str, str] = {}
    messages: list[dict[str, Any]] = []
    if req.system:
        messages.append({"role": "system", "content": "\n\n".join(req.system)})
    for msg in req.messages:
        if msg.role == "assistant":
            calls = []
            for p in msg.parts:
                if isinstance(p, ir.ToolCall):
                    names[p.id] = p.name
                    calls.append({"function": {"name": p.name, "arguments": p.arguments_obj()}})
            out: dict[str, Any] = {"role": "assistant", "content": msg.text()}
            if calls:
                out["tool_calls"] = calls
            if calls or out["content"]:
                messages.append(out)
            continue
        for p in msg.parts:
            if isinstance(p, ir.ToolResult):
                messages.append(
                    {"role": "tool", "tool_name": names.get(p.call_id, ""), "content": tool_result_text(p)}
                )
        texts = [p.text for p in msg.parts if isinstance(p, ir.Text)]
        images = [p.data for p in msg.parts if isinstance(p, ir.Image) and p.data]
        if texts or images:
            user: dict[str, Any] = {"role": "user", "content": "".join(texts)}
            if images:
                user["images"] = images
            messages.append(user)
    body: dict[str, Any] = {"model": req.model, "messages": messages, "stream": req.stream}
    if req.response_schema is not None:
        body["format"] = req.response_schema or "json"
    if req.tools and req.tool_choice != "none":
        body["tools"] = tools_json(req.tools)
    options: dict[str, Any] = {}
    if req.temperature is not None:
        options["temperature"] = req.temperature
    if req.top_p is not None:
        options["top_p"] = req.top_p
    if req.max_tokens is not None:
        options["num_predict"] = req.max_tokens
    if req.stop:
        options["stop"] = req.stop
    if num_ctx is not None:
        options["num_ctx"] = num_ctx
    if options:
        body["options"] = options
    return body


def parse_usage(data: dict[str, Any]) -> ir.Usage:
    return ir.Usage(ir.as_int(data.get("prompt_eval_count")), ir.as_int(data.get("eval_count")))


def _calls(message: dict[str, Any]) -> list[ir.ToolCall]:
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            continue
        args = fn.get("arguments")
        text = args if isinstance(args, str) else ir.json_text(args or {})
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else ir.new_id("call_")
        out.append(ir.ToolCall(str(call_id), str(fn.get("name", "")), text))
    return out


def _stop(data: dict[str, Any], saw_tools: bool) -> str:
    if saw_tools:
        return "tool_use"
    return DONE_TO_STOP.get(str(data.get("done_reason") or "stop"), "end_turn")


def parse_response(body: dict[str, Any]) -> ir.Response:
    message = body.get("message") or {}
    parts: list[ir.Part] = []
    if isinstance(message.get("thinking"), str) and message["thinking"]:
        parts.append(ir.Thinking(message["thinking"]))
    if isinstance(message.get("content"), str) and message["content"]:
        parts.append(ir.Text(message["content"]))
    calls = _calls(message)
    parts.extend(calls)
    return ir.Response("", str(body.get("model", "")), parts, _stop(body, bool(calls)), parse_usage(body))


class StreamDecoder:
    """Ollama NDJSON objects -> ir stream events; the `done: true` line finishes."""

    def __init__(self) -> None:
        self._started = False
        self._tools = 0
        self._done = False

    def decode(self, data: dict[str, Any]) -> list[ir.StreamEvent]:
        if self._done:
            return []
        if "error" in data:
            self._done = True
            return [ir.Failure(str(data["error"]), "api_error")]
        out: list[ir.StreamEvent] = []
        if not self._started:
            self._started = True
            out.append(ir.Start("", str(data.get("model", ""))))
        message = data.get("message") or {}
        if isinstance(message.get("thinking"), str) and message["thinking"]:
            out.append(ir.ThinkingDelta(text=message["thinking"]))
        if isinstance(message.get("content"), str) and message["content"]:
            out.append(ir.TextDelta(message["content"]))
        for call in _calls(message):
            out.append(ir.ToolStart(self._tools, call.id, call.name))
            out.append(ir.ToolArgs(self._tools, call.arguments))
            self._tools += 1
        if data.get("done"):
            self._done = True
            out.append(ir.Finish(_stop(data, self._tools > 0), parse_usage(data)))
        return out
