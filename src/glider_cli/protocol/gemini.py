"""Gemini `generateContent` <-> the neutral shape (`ir`): client requests, replies, SSE streams.

Glider serves Gemini clients (Gemini CLI, the google-genai SDKs); a Gemini reply body is also read
(`parse_response`), for re-telling a whole reply as a stream. Request bodies are the framed ones of
`protocol.gemini_request` (the client's JSON plus `model` and `stream` from the URL path).

Inbound (parse_request): `systemInstruction` -> system; `contents` roles `user`/`model` -> user/assistant;
parts `text`, `inlineData`/`fileData` images, `functionCall` (args as JSON text) and `functionResponse`
(a tool result: `response.output` or `response.content` as text, `response.error` as an error result,
any other response as its JSON). Thought parts and `thoughtSignature` are dropped (only Google can read
them). A call keeps the client's `id` (Gemini CLI echoes the id a reply gave, so a backend gets its own
ids back); a call without one gets the id `gemini_request.link_calls` makes from its name and order,
and a result without one the id of the call it answers. Tools: `functionDeclarations` with
`parametersJsonSchema` (JSON Schema) or `parameters` (the API's OpenAPI subset, upper-case types, which
are lower-cased); other tools (`googleSearch`, `codeExecution`) no other backend can run. `toolConfig`
modes AUTO/ANY/NONE -> auto/required (or the one allowed name)/none. `generationConfig`: temperature,
topP, maxOutputTokens, stopSequences, and JSON mode (`responseMimeType: application/json` with
`responseJsonSchema` or `responseSchema`) as `ir.Request.response_schema`, so a local model answers
Gemini CLI's router classifier with JSON (it retries five times on anything else).

Replies: one candidate; text parts, `functionCall` parts carrying the backend's call id as `id`;
finishReason STOP (end_turn, tool_use, stop_sequence), MAX_TOKENS, SAFETY (refusal); `usageMetadata`
prompt/candidates/total (+ cachedContentTokenCount). Reasoning from another backend is not written (a
thought part Gemini did not sign must not reach Google in a later turn). `modelVersion` is the model
the caller passes (see `proxy.dispatch`: the client's own).

Streams (StreamEncoder): one `data:` event per text delta, each a whole GenerateContentResponse; a
tool call is written whole once its arguments are complete (Gemini never streams partial arguments);
the last event carries finishReason and usageMetadata; an error is `data: {"error": {code, message,
status}}`. Without `alt=sse` (`sse=False`) the same objects form one streamed JSON array.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from glider_cli.protocol import ir
from glider_cli.protocol.encoder_base import StreamEncoderBase
from glider_cli.protocol.gemini_request import contents_of, get, link_calls, parts_of, session_key
from glider_cli.protocol.sse import encode_sse

STOP_TO_FINISH = {
    "end_turn": "STOP",
    "tool_use": "STOP",
    "stop_sequence": "STOP",
    "max_tokens": "MAX_TOKENS",
    "refusal": "SAFETY",
    "pause_turn": "STOP",
}
FINISH_TO_STOP = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
}
STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def status_name(code: int) -> str:
    return STATUS.get(code, "INTERNAL" if code >= 500 else "INVALID_ARGUMENT")


def error_json(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status_name(code)}}


# ---------------------------------------------------------------- requests


def json_schema(schema: Any) -> Any:
    """The API's OpenAPI-style schema (`type: "OBJECT"`) as JSON Schema: type names lower-cased."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {k: json_schema(v) for k, v in value.items()}
        else:
            out[key] = json_schema(value) if isinstance(value, Mapping | list) else value
    return out


def _result_text(response: Any) -> tuple[str, bool]:
    if isinstance(response, Mapping):
        for key in ("output", "content", "result"):
            if isinstance(response.get(key), str) and len(response) == 1:
                return response[key], False
        if isinstance(response.get("error"), str) and len(response) == 1:
            return response["error"], True
    return ir.json_text(response if response is not None else {}), False


def _image(part: Mapping[str, Any]) -> ir.Image | None:
    inline = get(part, "inlineData")
    if isinstance(inline, Mapping):
        mime = str(get(inline, "mimeType") or "")
        return (
            ir.Image(media_type=mime, data=str(inline.get("data") or ""))
            if mime.startswith("image/")
            else None
        )
    file = get(part, "fileData")
    if isinstance(file, Mapping) and str(get(file, "mimeType") or "").startswith("image/"):
        return ir.Image(url=str(get(file, "fileUri") or ""))
    return None


def _messages(contents: list[Any]) -> list[ir.Message]:
    links = link_calls(contents, session_key(contents))
    own: dict[str, str] = {}  # linked id -> the id the call carries
    messages: list[ir.Message] = []
    for ci, content in enumerate(contents):
        if not isinstance(content, Mapping):
            continue
        parts: list[ir.Part] = []
        for pi, part in enumerate(parts_of(content)):
            call = get(part, "functionCall")
            resp = get(part, "functionResponse")
            if isinstance(call, Mapping):
                cid = str(call.get("id") or "") or links[(ci, pi)]
                own[links[(ci, pi)]] = cid
                args = call.get("args")
                parts.append(ir.ToolCall(cid, str(call.get("name") or ""), ir.json_text(args or {})))
            elif isinstance(resp, Mapping):
                linked = own.get(links[(ci, pi)], links[(ci, pi)])
                rid = str(resp.get("id") or "")
                text, error = _result_text(resp.get("response"))
                parts.append(ir.ToolResult(rid if rid in own.values() else linked, [ir.Text(text)], error))
            elif isinstance(part.get("text"), str) and not part.get("thought"):
                parts.append(ir.Text(part["text"]))
            elif (img := _image(part)) is not None:
                parts.append(img)
        role = "assistant" if content.get("role") == "model" else "user"
        messages.append(ir.Message(role, parts))
    return messages


def _tools(body: Mapping[str, Any]) -> list[ir.Tool]:
    out: list[ir.Tool] = []
    for tool in body.get("tools") or []:
        decls = get(tool, "functionDeclarations") if isinstance(tool, Mapping) else None
        for d in decls if isinstance(decls, list) else []:
            if not isinstance(d, Mapping) or not d.get("name"):
                continue
            schema = get(d, "parametersJsonSchema")
            if schema is None:
                schema = json_schema(d.get("parameters"))
            params = schema if isinstance(schema, dict) else {"type": "object", "properties": {}}
            out.append(ir.Tool(str(d["name"]), str(d.get("description") or ""), params))
    return out


def _choice(body: Mapping[str, Any]) -> str | None:
    config = get(body, "toolConfig")
    fcc = get(config, "functionCallingConfig") if isinstance(config, Mapping) else None
    if not isinstance(fcc, Mapping):
        return None
    mode = str(fcc.get("mode") or "").upper()
    allowed = get(fcc, "allowedFunctionNames")
    if mode == "ANY":
        return str(allowed[0]) if isinstance(allowed, list) and len(allowed) == 1 else "required"
    return {"AUTO": "auto", "VALIDATED": "auto", "NONE": "none"}.get(mode)


def parse_request(body: dict[str, Any]) -> ir.Request:
    system: list[str] = []
    instruction = get(body, "systemInstruction")
    if isinstance(instruction, str):
        system.append(instruction)
    for part in parts_of(instruction):
        if isinstance(part.get("text"), str) and part["text"]:
            system.append(part["text"])
    config = get(body, "generationConfig")
    config = config if isinstance(config, Mapping) else {}
    stop = get(config, "stopSequences")
    max_tokens = get(config, "maxOutputTokens")
    response_schema: dict[str, Any] | None = None
    if get(config, "responseMimeType") == "application/json":
        schema = get(config, "responseJsonSchema")
        if schema is None:
            schema = get(config, "responseSchema")
        response_schema = json_schema(schema) if isinstance(schema, Mapping) else {}
    return ir.Request(
        model=str(body.get("model") or ""),
        messages=_messages(contents_of(body)),
        system=system,
        tools=_tools(body),
        tool_choice=_choice(body),
        max_tokens=max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) else None,
        temperature=ir.as_float(config.get("temperature")),
        top_p=ir.as_float(get(config, "topP")),
        stop=[str(s) for s in stop] if isinstance(stop, list) else [],
        stream=bool(body.get("stream")),
        response_schema=response_schema,
    )


# ---------------------------------------------------------------- replies


def usage_json(usage: ir.Usage) -> dict[str, int]:
    prompt = usage.total_input
    out = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": prompt + usage.output_tokens,
    }
    if usage.cache_read_tokens:
        out["cachedContentTokenCount"] = usage.cache_read_tokens
    return out


def parse_usage(meta: Any) -> ir.Usage:
    if not isinstance(meta, Mapping):
        return ir.Usage()
    cached = ir.as_int(meta.get("cachedContentTokenCount"))
    output = ir.as_int(meta.get("candidatesTokenCount")) + ir.as_int(meta.get("thoughtsTokenCount"))
    return ir.Usage(max(0, ir.as_int(meta.get("promptTokenCount")) - cached), output, cached)


def _call_part(call: ir.ToolCall) -> dict[str, Any]:
    return {
        "functionCall": {"id": ir.safe_id(call.id, "call_"), "name": call.name, "args": call.arguments_obj()}
    }


def _chunk(parts: list[dict[str, Any]], model: str, rid: str, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": model, "responseId": rid}


def build_response(resp: ir.Response, *, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in resp.parts:
        if isinstance(part, ir.Text) and part.text:
            parts.append({"text": part.text})
        elif isinstance(part, ir.ToolCall):
            parts.append(_call_part(part))
    out = _chunk(parts, model, resp.id or ir.new_id("resp_"), STOP_TO_FINISH.get(resp.stop_reason, "STOP"))
    out["usageMetadata"] = usage_json(resp.usage)
    return out


def parse_response(body: dict[str, Any]) -> ir.Response:
    candidates = body.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates else {}
    first = first if isinstance(first, Mapping) else {}
    parts: list[ir.Part] = []
    for part in parts_of(first.get("content")):
        call = get(part, "functionCall")
        if isinstance(call, Mapping):
            cid = str(call.get("id") or "") or ir.new_id("call_")
            parts.append(ir.ToolCall(cid, str(call.get("name") or ""), ir.json_text(call.get("args") or {})))
        elif isinstance(part.get("text"), str):
            parts.append(ir.Thinking(part["text"]) if part.get("thought") else ir.Text(part["text"]))
    stop = FINISH_TO_STOP.get(str(get(first, "finishReason") or "STOP"), "end_turn")
    if any(isinstance(p, ir.ToolCall) for p in parts):
        stop = "tool_use"
    usage = parse_usage(get(body, "usageMetadata"))
    return ir.Response(
        str(get(body, "responseId") or ""), str(get(body, "modelVersion") or ""), parts, stop, usage
    )


# ---------------------------------------------------------------- streams


class StreamEncoder(StreamEncoderBase):
    """ir stream events -> Gemini streamGenerateContent events (SSE, or a JSON array with `sse=False`)."""

    def __init__(self, *, model: str, sse: bool = True, input_estimate: int | None = None) -> None:
        super().__init__(model=model, input_estimate=input_estimate)
        self.sse = sse
        self._id = ir.new_id("resp_")
        self._frames = 0
        self._tool: tuple[str, str] | None = None  # the open tool call's id and name
        self._tool_args: list[str] = []  # its arguments' JSON, as streamed

    def _frame(self, data: dict[str, Any], *, last: bool = False) -> bytes:
        if self.sse:
            return encode_sse(None, data)
        head = b"[" if self._frames == 0 else b",\r\n"
        self._frames += 1
        return head + orjson.dumps(data) + (b"]" if last else b"")

    def _pending(self) -> list[dict[str, Any]]:
        if self._tool is None:
            return []
        part = _call_part(ir.ToolCall(*self._tool, "".join(self._tool_args)))
        self._tool = None
        return [part]

    def _opening(self, ev: ir.Start | None) -> list[bytes]:
        if ev is not None and ev.id:
            self._id = ev.id
        return []

    def _content(self, ev: ir.StreamEvent) -> list[bytes]:
        if isinstance(ev, ir.ToolArgs):
            if self._tool is not None:
                self._tool_args.append(ev.json)
            return []
        parts = self._pending()
        if isinstance(ev, ir.ToolStart):
            self._tool, self._tool_args = (ev.id, ev.name), []
        elif isinstance(ev, ir.TextDelta) and ev.text:
            parts.append({"text": ev.text})
        return [self._frame(_chunk(parts, self.model, self._id))] if parts else []

    def _closing(self, ev: ir.Finish, usage: ir.Usage) -> list[bytes]:
        data = _chunk(self._pending(), self.model, self._id, STOP_TO_FINISH.get(ev.stop_reason, "STOP"))
        data["usageMetadata"] = self.marked(usage_json(usage))
        return [self._frame(data, last=True)]

    def _error_frames(self, message: str, type: str) -> list[bytes]:
        code = 429 if type in ("rate_limit_error", "rate_limit_exceeded") else 500
        return [self._frame(error_json(code, message), last=True)]
