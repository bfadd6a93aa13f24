"""The Gemini API side of the fake upstream (see fake_upstream.py), written by hand from Google's
documentation and what Gemini CLI was seen to send and accept (shared/CLIENTS.md §3).

Deliberately independent of `glider_cli.protocol`. As strict as the real API where it matters to
Glider: an unknown top-level field, a part with no data field or two of them, a role other than
user/model, a functionResponse whose name no functionCall of the model content before it has, a model
that is not `gemini-*` (404 NOT_FOUND) or a missing key (`x-goog-api-key` or `?key=`) is an error in
Google's shape `{"error": {"code", "message", "status"}}`.

Replies: "hello from fake gemini <model>"; a functionCall when the last user text has
`GLIDER_TOOL:<name>` for a declared function (and no functionResponse is in that content); JSON
matching `responseJsonSchema`/`responseSchema` when `responseMimeType` is application/json (what
Gemini CLI's router classifier asks for). Streams are SSE (`alt=sse`) with `\\r\\n\\r\\n` separators, as
Google sends them: text in two chunks, the last with finishReason and usageMetadata. The finishReason
is `STOP`, or `MAX_TOKENS` for a text reply that stopped at the output-token limit (`at_limit`).
"""

from __future__ import annotations

import json
from typing import Any

TOOL_MARKER = "GLIDER_TOOL:"
TOP_LEVEL = {
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "generationConfig",
    "safetySettings",
    "cachedContent",
    "labels",
    "model",
}
PART_DATA = {
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
}
PART_EXTRA = {"thought", "thoughtSignature", "videoMetadata", "partMetadata"}
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}


class GeminiError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

    def body(self) -> dict[str, Any]:
        return error_body(self.code, str(self))


def error_body(code: int, message: str) -> dict[str, Any]:
    status = STATUS.get(code, "INTERNAL" if code >= 500 else "INVALID_ARGUMENT")
    return {"error": {"code": code, "message": message, "status": status}}


def check(model: str, body: Any, headers: dict[str, str], query: dict[str, str]) -> None:
    """Raise GeminiError for what the real API would refuse."""
    if not (headers.get("x-goog-api-key") or query.get("key")):
        raise GeminiError(401, "Method doesn't allow unregistered callers. Please use an API key.")
    if not model.startswith("gemini-"):
        raise GeminiError(404, f"models/{model} is not found for API version v1beta")
    if not isinstance(body, dict):
        raise GeminiError(400, "Invalid JSON payload received.")
    unknown = set(body) - TOP_LEVEL
    if unknown:
        raise GeminiError(400, f'Invalid JSON payload received. Unknown name "{sorted(unknown)[0]}"')
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise GeminiError(400, "* GenerateContentRequest.contents: contents is not specified")
    called: list[str] = []
    for i, content in enumerate(contents):
        if not isinstance(content, dict):
            raise GeminiError(400, f"Invalid value at 'contents[{i}]': not a Content object")
        if content.get("role", "user") not in ("user", "model"):
            raise GeminiError(400, f"contents[{i}].role must be user or model")
        parts = content.get("parts")
        if not isinstance(parts, list) or not parts:
            raise GeminiError(400, f"contents[{i}].parts must not be empty")
        names: list[str] = []
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                raise GeminiError(400, f"Invalid value at 'contents[{i}].parts[{j}]': not a Part object")
            present = {k for k, v in part.items() if v is not None}  # protobuf JSON: null is unset
            data = present & PART_DATA
            if len(data) != 1 or present - PART_DATA - PART_EXTRA:
                raise GeminiError(
                    400, f"contents[{i}].parts[{j}] must hold exactly one data field: {sorted(part)}"
                )
            for key in ("functionCall", "functionResponse"):
                if key in data and not (
                    isinstance(part[key], dict) and isinstance(part[key].get("name"), str)
                ):
                    raise GeminiError(400, f"Invalid value at 'contents[{i}].parts[{j}].{key}'")
            if "functionCall" in data:
                names.append(part["functionCall"]["name"])
            if "functionResponse" in data and part["functionResponse"]["name"] not in called:
                raise GeminiError(
                    400, f"contents[{i}].parts[{j}]: a functionResponse must answer a functionCall"
                )
        called = names


def _schema_instance(schema: dict[str, Any]) -> Any:
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _schema_instance(v) for k, v in props.items()}
    if kind == "integer":
        return 10
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return True
    if kind == "array":
        return [_schema_instance(schema.get("items") or {"type": "string"})]
    return "simple"


def json_answer(schema: dict[str, Any] | None) -> str:
    """A JSON text that satisfies `schema` (the upper-case types of the API's schemas included)."""
    return json.dumps(_schema_instance(schema or {"type": "object"}))


def _declared(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or []:
            out[decl["name"]] = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
    return out


def reply_parts(model: str, body: dict[str, Any], text: str | None) -> list[dict[str, Any]]:
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        return [{"text": json_answer(config.get("responseJsonSchema") or config.get("responseSchema"))}]
    last = body["contents"][-1]
    answered = any("functionResponse" in p for p in last["parts"])
    said = " ".join(p.get("text", "") for p in last["parts"] if last.get("role", "user") == "user")
    declared = _declared(body)
    if TOOL_MARKER in said and not answered:
        wanted = said.split(TOOL_MARKER, 1)[1].split()
        if wanted and wanted[0] in declared:
            props = declared[wanted[0]].get("properties") or {}
            key = "command" if "command" in props else next(iter(props), "command")
            return [{"functionCall": {"name": wanted[0], "args": {key: "echo glider-tool-ok"}}}]
    return [{"text": text if text is not None else f"hello from fake gemini {model}"}]


def _response(
    model: str, parts: list[dict[str, Any]], finish: str | None, usage: tuple[int, int]
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": usage[0] + usage[1],
        },
        "modelVersion": model,
        "responseId": "fake-gemini-response",
    }


def _finish(parts: list[dict[str, Any]], at_limit: bool) -> str:
    """`MAX_TOKENS` for a reply that stopped at the output-token limit (a function call wins), else `STOP`."""
    called = any("functionCall" in p for p in parts)
    return "MAX_TOKENS" if at_limit and not called else "STOP"


def gemini_json(
    model: str, body: dict[str, Any], text: str | None, usage: tuple[int, int], *, at_limit: bool = False
) -> dict[str, Any]:
    parts = reply_parts(model, body, text)
    return _response(model, parts, _finish(parts, at_limit), usage)


def gemini_events(
    model: str, body: dict[str, Any], text: str | None, usage: tuple[int, int], *, at_limit: bool = False
) -> list[bytes]:
    parts = reply_parts(model, body, text)
    finish = _finish(parts, at_limit)
    chunks: list[dict[str, Any]]
    if "text" in parts[0] and " " in parts[0]["text"]:
        head, tail = parts[0]["text"].split(" ", 1)
        chunks = [
            _response(model, [{"text": head + " "}], None, (usage[0], 1)),
            _response(model, [{"text": tail}], finish, usage),
        ]
    else:
        chunks = [_response(model, parts, finish, usage)]
    return [b"data: " + json.dumps(c, separators=(",", ":")).encode() + b"\r\n\r\n" for c in chunks]
