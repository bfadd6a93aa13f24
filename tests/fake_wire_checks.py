"""What the real services refuse, for the fake upstream (fake_upstream.py): it must be as strict as they are
where Glider can get it wrong, or a bug like "the local model's name sent to the cloud" passes every test.

    model       Anthropic (POST /v1/messages, /count_tokens) 404 not_found_error "model: X";
                OpenAI (/v1/chat/completions, /v1/responses) 404 code model_not_found;
                Ollama (/api/chat) 404 {"error": "model 'X' not found"} for a model it has not pulled
                (a name without a tag means `:latest`, as in Ollama).
    tool ids    Anthropic: a tool_use id must match ^[a-zA-Z0-9_-]+$, a tool_result must answer a tool_use of
                the message just before it, and a tool_use must be answered by the next message.
                OpenAI Chat: a `tool` message must answer a call of the assistant message before it, every
                call must be answered before the next message, a call id is at most 40 characters.
                Responses: a function_call_output needs its function_call in `input` (unless the request
                continues a stored response with previous_response_id).
    listing     GET /v1/models (Anthropic's shape when `anthropic-version` was sent, else OpenAI's) and
                Ollama's GET /api/tags list exactly the served models. Ollama's POST /api/show (served
                when the fake is made with `ollama_show=True`) answers a pulled model with its details,
                `model_info` (`<arch>.context_length`: the fake's window) and `capabilities`, a model
                it has not pulled with 404 {"error": "model 'X' not found"}, no model with 400.
    context     a body over the configured window (tokens = body bytes / 4, the fake's own count) gets the
                service's 400: Anthropic "prompt is too long", OpenAI code context_length_exceeded, Ollama
                "the input length exceeds the context length".

Deliberately independent of `glider_cli.protocol`. Messages are the real services' wording (as captured in
their public docs and issue threads), so the error Glider relays is the one a client would see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_ANTHROPIC_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
OPENAI_CALL_ID_MAX = 40

Refusal = tuple[int, dict[str, Any]]


def ollama_name(name: str) -> str:
    """`qwen` and `qwen:latest` are the same pulled model to Ollama."""
    return name if ":" in name else name + ":latest"


@dataclass(frozen=True)
class Served:
    """What a fake serves: model names on the cloud-shaped endpoints (Anthropic and OpenAI), the models
    Ollama has pulled, and the context window in tokens (None: unlimited)."""

    models: frozenset[str]
    ollama_models: frozenset[str]
    context_window: int | None = None

    @classmethod
    def of(
        cls, models: Iterable[str], ollama_models: Iterable[str], context_window: int | None = None
    ) -> Served:
        return cls(frozenset(models), frozenset(ollama_name(m) for m in ollama_models), context_window)


def _anthropic(status: int, kind: str, message: str) -> Refusal:
    return status, {"type": "error", "error": {"type": kind, "message": message}}


def _openai(status: int, message: str, code: str | None, param: str | None = None) -> Refusal:
    return status, {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


def _model(protocol: str, model: str, served: Served) -> Refusal | None:
    if protocol == "ollama":
        if ollama_name(model) not in served.ollama_models:
            return 404, {"error": f"model '{model}' not found"}
        return None
    if model in served.models:
        return None
    if protocol == "anthropic":
        return _anthropic(404, "not_found_error", f"model: {model}")
    message = f"The model `{model}` does not exist or you do not have access to it."
    return _openai(404, message, "model_not_found")


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _anthropic_tools(body: dict[str, Any]) -> Refusal | None:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for i, message in enumerate(messages):
        uses = [b for b in _blocks(message) if b.get("type") == "tool_use"]
        for j, block in enumerate(_blocks(message)):
            if block.get("type") == "tool_use" and not _ANTHROPIC_TOOL_ID.match(str(block.get("id") or "")):
                where = f"messages.{i}.content.{j}.tool_use.id"
                return _anthropic(
                    400, "invalid_request_error", f"{where}: String should match pattern '^[a-zA-Z0-9_-]+$'"
                )
            if block.get("type") == "tool_result":
                before = _blocks(messages[i - 1]) if i else []
                ids = {b.get("id") for b in before if b.get("type") == "tool_use"}
                if block.get("tool_use_id") not in ids:
                    return _anthropic(
                        400,
                        "invalid_request_error",
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message.",
                    )
        if uses and i + 1 < len(messages):
            answered = {
                b.get("tool_use_id") for b in _blocks(messages[i + 1]) if b.get("type") == "tool_result"
            }
            missing = [str(b.get("id")) for b in uses if b.get("id") not in answered]
            if missing:
                return _anthropic(
                    400,
                    "invalid_request_error",
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message.",
                )
    return None


def _chat_tools(body: dict[str, Any]) -> Refusal | None:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    pending: set[str] = set()
    pending_at = -1
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return _openai(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    None,
                    f"messages.[{i}].role",
                )
            pending.discard(str(message.get("tool_call_id")))
            continue
        if pending:
            return _openai(
                400,
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{', '.join(sorted(pending))}",
                None,
                f"messages.[{pending_at}].role",
            )
        calls = message.get("tool_calls") if role == "assistant" else None
        for k, call in enumerate(calls if isinstance(calls, list) else []):
            cid = str(call.get("id") or "") if isinstance(call, dict) else ""
            if len(cid) > OPENAI_CALL_ID_MAX:
                return _openai(
                    400,
                    f"Invalid 'messages[{i}].tool_calls[{k}].id': string too long. Expected a string with "
                    f"maximum length {OPENAI_CALL_ID_MAX}, but got a string with length {len(cid)} instead.",
                    "string_above_max_length",
                    f"messages[{i}].tool_calls[{k}].id",
                )
            pending.add(cid)
            pending_at = i
    return None


def _responses_tools(body: dict[str, Any]) -> Refusal | None:
    items = body.get("input")
    if not isinstance(items, list) or body.get("previous_response_id"):
        return None
    calls: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            calls.add(str(item.get("call_id")))
        elif item.get("type") == "function_call_output" and str(item.get("call_id")) not in calls:
            message = f"No tool call found for function call output with call_id {item.get('call_id')}."
            return _openai(400, message, None, "input")
    return None


def _tool_names(protocol: str, body: dict[str, Any]) -> Refusal | None:
    """A function tool's definition must name it (each service answers 400 without its name)."""
    tools = body.get("tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        if not isinstance(tool, dict):
            continue
        if protocol == "anthropic" and "type" not in tool and not isinstance(tool.get("name"), str):
            return _anthropic(400, "invalid_request_error", f"tools.{i}.custom.name: Field required")
        named = isinstance(tool.get("name"), str)
        if protocol == "openai_responses" and tool.get("type") == "function" and not named:
            return _openai(
                400, f"Missing required parameter: 'tools[{i}].name'.", "missing_required_parameter"
            )
        if protocol == "openai_chat" and tool.get("type", "function") == "function":
            fn = tool.get("function")
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                return _openai(
                    400,
                    f"Missing required parameter: 'tools[{i}].function.name'.",
                    "missing_required_parameter",
                )
    return None


_TOOL_CHECKS = {
    "anthropic": _anthropic_tools,
    "openai_chat": _chat_tools,
    "openai_responses": _responses_tools,
}


def _context(protocol: str, size: int, window: int | None) -> Refusal | None:
    tokens = -(-size // 4)
    if window is None or tokens <= window:
        return None
    if protocol == "anthropic":
        return _anthropic(
            400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {window} maximum"
        )
    if protocol == "ollama":
        return 400, {"error": "the input length exceeds the context length"}
    message = (
        f"This model's maximum context length is {window} tokens. However, your messages resulted in "
        f"{tokens} tokens. Please reduce the length of the messages."
    )
    return _openai(400, message, "context_length_exceeded", "messages")


def refusal(
    protocol: str, body: dict[str, Any], size: int, served: Served, *, context: bool = True
) -> Refusal | None:
    """The status and error body the real service answers this request with, or None when it serves it.
    `context=False` for token counting, which measures a prompt of any length."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        if protocol == "anthropic":
            return _anthropic(400, "invalid_request_error", "model: Field required")
        if protocol == "ollama":
            return 400, {"error": "model is required"}
        return _openai(400, "you must provide a model parameter", None, None)
    found = _model(protocol, model, served)
    if found is not None:
        return found
    check = _TOOL_CHECKS.get(protocol)
    found = _tool_names(protocol, body) or (check(body) if check is not None else None)
    if found is not None or not context:
        return found
    return _context(protocol, size, served.context_window)


def models_body(served: Served, *, anthropic: bool) -> dict[str, Any]:
    names = sorted(served.models)
    if anthropic:
        data = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"} for m in names
        ]
        first, last = (names[0], names[-1]) if names else (None, None)
        return {"data": data, "has_more": False, "first_id": first, "last_id": last}
    listed = [{"id": m, "object": "model", "created": 1767225600, "owned_by": "fake"} for m in names]
    return {"object": "list", "data": listed}


def tags_body(served: Served) -> dict[str, Any]:
    details = {"format": "gguf", "family": "fake", "parameter_size": "1B", "quantization_level": "Q4_0"}
    return {
        "models": [
            {
                "name": m,
                "model": m,
                "modified_at": "2026-01-01T00:00:00Z",
                "size": 1000,
                "digest": "0" * 64,
                "details": details,
            }
            for m in sorted(served.ollama_models)
        ]
    }


def show_body(served: Served, body: Any) -> Refusal:
    """Ollama's answer to POST /api/show: the status and its body (`model`, or the older `name`)."""
    model = (body.get("model") or body.get("name")) if isinstance(body, dict) else None
    if not isinstance(model, str) or not model:
        return 400, {"error": "model is required"}
    if ollama_name(model) not in served.ollama_models:
        return 404, {"error": f"model '{model}' not found"}
    info: dict[str, Any] = {"general.architecture": "fake", "general.parameter_count": 1_000_000_000}
    if served.context_window is not None:  # None: unlimited, so no length to report
        info["fake.context_length"] = served.context_window
    details = {"format": "gguf", "family": "fake", "parameter_size": "1B", "quantization_level": "Q4_0"}
    return 200, {
        "modelfile": f"FROM {ollama_name(model)}\n",
        "parameters": "",
        "template": "{{ .Prompt }}",
        "details": {"parent_model": "", "families": ["fake"], **details},
        "model_info": info,
        "capabilities": ["completion", "tools"],
        "modified_at": "2026-01-01T00:00:00Z",
    }
