"""Structured output (a reply that is JSON, to a JSON Schema) in each client's words and each local server's.

Clients ask for it in their own protocol:

    anthropic          `output_config.format: {type: json_schema, schema}` (Claude Code's title request)
    openai_chat        `response_format: {type: json_schema, json_schema: {schema}}` or `{type: json_object}`
    openai_responses   `text.format: {type: json_schema, schema}` or `{type: json_object}`
    gemini             `generationConfig.responseMimeType: application/json` with `responseJsonSchema` /
                       `responseSchema` (read by `protocol.gemini`)

`schema_of(protocol, body)` is the schema asked for (`{}`: any JSON object), None for free text; the
request parsers put it in `ir.Request.response_schema`, and each backend's builder writes it in the
OpenAI standard (`response_format: json_schema`) or Ollama's `format`.

Local servers differ in what they accept on the OpenAI wire (`Dialect`, found by the capability probe,
`backends.probe`):

    "json_schema"          the OpenAI form as it is: vLLM (its structured outputs), llama.cpp's own server
    "json_object_schema"   llama-cpp-python's server: `response_format: {type: json_object, schema}`; it
                           answers `json_schema` with an error (HTTP 500)
    "none"                 the server cannot constrain its output (the config's `structured_output: false`)

`for_dialect(body, dialect)` rewrites an OpenAI Chat body for the server's dialect (a copy; the same
body when there is nothing to change). Pure; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Dialect = Literal["json_schema", "json_object_schema", "none"]
DIALECTS: tuple[str, ...] = ("json_schema", "json_object_schema", "none")


def _from_format(fmt: Any) -> dict[str, Any] | None:
    """A `{type: json_schema, schema | json_schema: {schema}}` or `{type: json_object}` format."""
    if not isinstance(fmt, Mapping):
        return None
    kind = fmt.get("type")
    if kind == "json_object":
        schema = fmt.get("schema")
        return dict(schema) if isinstance(schema, Mapping) else {}
    if kind != "json_schema":
        return None
    inner = fmt.get("json_schema")
    schema = inner.get("schema") if isinstance(inner, Mapping) else fmt.get("schema")
    return dict(schema) if isinstance(schema, Mapping) else {}


def schema_of(protocol: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema the request asks its reply to follow (`{}`: any JSON), or None for free text."""
    if protocol == "anthropic":
        oc = body.get("output_config")
        return _from_format(oc.get("format")) if isinstance(oc, Mapping) else None
    if protocol == "openai_chat":
        return _from_format(body.get("response_format"))
    if protocol == "openai_responses":
        text = body.get("text")
        return _from_format(text.get("format")) if isinstance(text, Mapping) else None
    if protocol == "gemini":
        from glider_cli.protocol.gemini_request import get

        config = get(body, "generationConfig")
        if not isinstance(config, Mapping) or get(config, "responseMimeType") != "application/json":
            return None
        schema = get(config, "responseJsonSchema") or get(config, "responseSchema")
        return dict(schema) if isinstance(schema, Mapping) else {}
    return None


def asks_for_schema(protocol: str, body: Mapping[str, Any]) -> bool:
    return schema_of(protocol, body) is not None


def for_dialect(body: dict[str, Any], dialect: str | None) -> dict[str, Any]:
    """An OpenAI Chat body with its `response_format` in the words of a server of `dialect`."""
    fmt = body.get("response_format")
    if dialect != "json_object_schema" or not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return body
    schema = _from_format(fmt)
    out: dict[str, Any] = {"type": "json_object"}
    if schema:
        out["schema"] = schema
    return {**body, "response_format": out}
