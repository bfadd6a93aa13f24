"""The JSON type of every field Glider reads of an inbound request, checked before anything reads it.

Contract:
- `check_types(protocol, body)` walks a request body (`anthropic`, `openai_chat`,
  `openai_responses`, or a framed `gemini` body: `protocol.gemini_request.frame`) against the
  shape of its protocol and raises `errors.RequestError` (400) naming the first field whose value
  has the wrong JSON type: `messages[0].content[1].type must be a string, got object`. The parsers
  (`protocol.parse`, `protocol.gemini_request`), the request kinds, the turn families, the pack and
  the translators then read only values of the type they expect, so odd input is the protocol's
  400, never a 500.
- What is checked: every field of the shapes below, at every depth, when it is present and not
  null (null counts as absent, as the parsers treat it). A block or item is told by its `type`
  (which must be a string); a block or item type the table does not know is checked only for the
  fields every one of them shares (`type`, `text`). Unknown fields are never checked nor refused.
- Gemini fields are accepted in both JSON spellings (`functionCall` / `function_call`).
- One pass, linear in the body's size, nothing copied (`Spec.ok`); a body it refuses is walked
  again by `Spec.check`, which spells out the path of the first wrong field for the error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from glider_cli.errors import RequestError
from glider_cli.protocol.type_specs import (
    BOOL,
    NUM,
    OBJ,
    STR,
    Bad,
    Either,
    ListOf,
    Obj,
    Spec,
    Tagged,
    json_type,
)


def _list_or(spec: Spec) -> Spec:
    return Either(STR, ListOf(spec))


_CACHE = {"cache_control": OBJ}
_TEXT = Obj({"text": STR, "citations": ListOf(OBJ), **_CACHE})

# Anthropic Messages -------------------------------------------------------------------------
_A_SOURCE = Obj({"type": STR, "media_type": STR, "data": STR, "url": STR, "file_id": STR})
_A_INNER = Tagged(
    {"text": _TEXT, "image": Obj({"source": _A_SOURCE}), "document": Obj({"source": OBJ, "title": STR})},
    Obj({"text": STR, **_CACHE}),
    strings=True,
)
_A_BLOCK = Tagged(
    {
        "text": _TEXT,
        "image": Obj({"source": _A_SOURCE, **_CACHE}),
        "document": Obj({"source": OBJ, "title": STR, "context": STR, **_CACHE}),
        "tool_use": Obj({"id": STR, "name": STR, "input": OBJ, **_CACHE}),
        "server_tool_use": Obj({"id": STR, "name": STR, "input": OBJ}),
        "tool_result": Obj({"tool_use_id": STR, "content": _list_or(_A_INNER), "is_error": BOOL, **_CACHE}),
        "thinking": Obj({"thinking": STR, "signature": STR}),
        "redacted_thinking": Obj({"data": STR}),
    },
    Obj({"text": STR, "thinking": STR, **_CACHE}),
    strings=True,
)
_A_TOOL = Obj(
    {"name": STR, "description": STR, "input_schema": OBJ, "type": STR, "defer_loading": BOOL, **_CACHE}
)
ANTHROPIC = Obj(
    {
        "model": STR,
        "max_tokens": NUM,
        "messages": ListOf(Obj({"role": STR, "content": _list_or(_A_BLOCK)})),
        "system": _list_or(_A_BLOCK),
        "tools": ListOf(_A_TOOL),
        "tool_choice": Obj({"type": STR, "name": STR, "disable_parallel_tool_use": BOOL}),
        "metadata": Obj({"user_id": STR}),
        "stream": BOOL,
        "temperature": NUM,
        "top_p": NUM,
        "top_k": NUM,
        "stop_sequences": ListOf(STR),
        "thinking": Obj({"type": STR, "budget_tokens": NUM}),
        "output_config": Obj({"format": Obj({"type": STR, "schema": OBJ}), "effort": STR}),
    }
)

# OpenAI Chat Completions --------------------------------------------------------------------
_C_PART = Tagged(
    {
        "text": Obj({"text": STR}),
        "image_url": Obj({"image_url": Either(STR, Obj({"url": STR, "detail": STR}))}),
        "refusal": Obj({"refusal": STR}),
        "input_audio": Obj({"input_audio": OBJ}),
        "file": Obj({"file": OBJ}),
    },
    Obj({"text": STR}),
    strings=True,
)
_C_FUNCTION = Obj({"name": STR, "arguments": STR})
_C_MESSAGE = Obj(
    {
        "role": STR,
        "content": _list_or(_C_PART),
        "name": STR,
        "tool_calls": ListOf(Obj({"id": STR, "type": STR, "function": _C_FUNCTION})),
        "tool_call_id": STR,
        "refusal": STR,
        "reasoning_content": STR,
    }
)
_C_TOOL = Obj(
    {
        "type": STR,
        "function": Obj({"name": STR, "description": STR, "parameters": OBJ, "strict": BOOL}),
        "custom": OBJ,
    }
)
_SCHEMA_FORMAT = Obj({"type": STR, "name": STR, "schema": OBJ, "strict": BOOL, "description": STR})
OPENAI_CHAT = Obj(
    {
        "model": STR,
        "messages": ListOf(_C_MESSAGE),
        "tools": ListOf(_C_TOOL),
        "tool_choice": Either(STR, Obj({"type": STR, "function": Obj({"name": STR})})),
        "stream": BOOL,
        "stream_options": Obj({"include_usage": BOOL}),
        "max_tokens": NUM,
        "max_completion_tokens": NUM,
        "temperature": NUM,
        "top_p": NUM,
        "n": NUM,
        "stop": _list_or(STR),
        "response_format": Obj({"type": STR, "json_schema": _SCHEMA_FORMAT}),
        "metadata": OBJ,
        "user": STR,
        "parallel_tool_calls": BOOL,
        "reasoning_effort": STR,
    }
)

# OpenAI Responses ---------------------------------------------------------------------------
_R_PART = Tagged(
    {
        "input_text": Obj({"text": STR}),
        "output_text": Obj({"text": STR, "annotations": ListOf(OBJ)}),
        "input_image": Obj({"image_url": STR, "file_id": STR, "detail": STR}),
        "input_file": Obj({"file_id": STR, "file_data": STR, "filename": STR}),
        "refusal": Obj({"refusal": STR}),
    },
    Obj({"text": STR}),
    strings=True,
)
_R_TOOL = Obj({"type": STR, "name": STR, "description": STR, "parameters": OBJ, "strict": BOOL})
_R_MESSAGE = Obj({"role": STR, "content": _list_or(_R_PART), "id": STR, "status": STR})
_R_ITEM = Tagged(
    {
        "message": _R_MESSAGE,
        "function_call": Obj({"call_id": STR, "name": STR, "arguments": STR, "id": STR}),
        "function_call_output": Obj({"call_id": STR, "output": _list_or(_R_PART)}),
        "custom_tool_call": Obj({"call_id": STR, "name": STR, "input": STR}),
        "custom_tool_call_output": Obj({"call_id": STR, "output": _list_or(_R_PART)}),
        "reasoning": Obj({"summary": ListOf(_R_PART), "encrypted_content": STR, "id": STR}),
        "additional_tools": Obj({"tools": ListOf(_R_TOOL)}),
    },
    Obj({"text": STR}),
    untyped=_R_MESSAGE,
)
OPENAI_RESPONSES = Obj(
    {
        "model": STR,
        "input": _list_or(_R_ITEM),
        "instructions": STR,
        "tools": ListOf(_R_TOOL),
        "tool_choice": Either(STR, Obj({"type": STR, "name": STR})),
        "stream": BOOL,
        "max_output_tokens": NUM,
        "temperature": NUM,
        "top_p": NUM,
        "text": Obj({"format": _SCHEMA_FORMAT, "verbosity": STR}),
        "reasoning": Obj({"effort": STR, "summary": STR}),
        "metadata": OBJ,
        "store": BOOL,
        "previous_response_id": STR,
        "include": ListOf(STR),
        "parallel_tool_calls": BOOL,
        "prompt_cache_key": STR,
        "user": STR,
    }
)

# Gemini generateContent (framed: `model`, `stream`, `alt` from the URL) ----------------------
_G_PART = Obj(
    {
        "text": STR,
        "thought": BOOL,
        "thoughtSignature": STR,
        "functionCall": Obj({"name": STR, "args": OBJ, "id": STR}, snake=True),
        "functionResponse": Obj({"name": STR, "response": OBJ, "id": STR}, snake=True),
        "inlineData": Obj({"mimeType": STR, "data": STR}, snake=True),
        "fileData": Obj({"mimeType": STR, "fileUri": STR}, snake=True),
    },
    snake=True,
)
_G_CONTENT = Obj({"role": STR, "parts": ListOf(_G_PART)})
_G_DECLARATION = Obj(
    {"name": STR, "description": STR, "parameters": OBJ, "parametersJsonSchema": OBJ}, snake=True
)
GEMINI = Obj(
    {
        "model": STR,
        "stream": BOOL,
        "alt": STR,
        "contents": Either(ListOf(_G_CONTENT), _G_CONTENT),  # the API takes one Content as a list
        "systemInstruction": Either(STR, _G_CONTENT),
        "tools": ListOf(Obj({"functionDeclarations": ListOf(_G_DECLARATION)}, snake=True)),
        "toolConfig": Obj(
            {"functionCallingConfig": Obj({"mode": STR, "allowedFunctionNames": ListOf(STR)}, snake=True)},
            snake=True,
        ),
        "generationConfig": Obj(
            {
                "temperature": NUM,
                "topP": NUM,
                "topK": NUM,
                "maxOutputTokens": NUM,
                "candidateCount": NUM,
                "stopSequences": ListOf(STR),
                "responseMimeType": STR,
                "responseSchema": OBJ,
                "thinkingConfig": OBJ,
            },
            snake=True,
        ),
    },
    snake=True,
)

SHAPES: dict[str, Obj] = {
    "anthropic": ANTHROPIC,
    "openai_chat": OPENAI_CHAT,
    "openai_responses": OPENAI_RESPONSES,
    "gemini": GEMINI,
}


def _spell(path: list[str | int]) -> str:
    if len(path) == 1:
        return repr(path[0])  # a top-level field: 'model', as the parsers name it
    out = ""
    for step in reversed(path):
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


# Each shape's fast pass, bound once.
_FIELDS_OK = {protocol: shape.fields_ok for protocol, shape in SHAPES.items()}


def check_types(protocol: str, body: Mapping[str, Any]) -> None:
    """Raise RequestError (400) naming the first field of `body` whose JSON type is wrong."""
    fields_ok = _FIELDS_OK.get(protocol)
    if fields_ok is None:
        return
    try:
        if fields_ok(body):  # the fast pass; a body it refuses is walked again for the error
            return
    except RecursionError:
        pass
    shape = SHAPES[protocol]
    try:
        shape.fields_of(body)
    except Bad as bad:
        where = _spell(bad.path) or "request body"
        raise RequestError(f"{where} must be {bad.must}, got {json_type(bad.value)}") from None
    except RecursionError:
        raise RequestError("request body is nested too deeply") from None
