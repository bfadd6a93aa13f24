"""Structured output: read from each client's request, written for each local server's dialect."""

from __future__ import annotations

from typing import Any

import pytest

from glider_cli.protocol import translate
from glider_cli.protocol.structured import for_dialect, schema_of

TITLE = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
JS = {"type": "json_schema", "json_schema": {"schema": TITLE}}
GEMINI_JSON = {"responseMimeType": "application/json", "responseJsonSchema": TITLE}
MSGS = [{"role": "user", "content": "name this session"}]


@pytest.mark.parametrize(
    ("protocol", "body", "schema"),
    [
        ("anthropic", {"output_config": {"format": {"type": "json_schema", "schema": TITLE}}}, TITLE),
        ("anthropic", {"output_config": {"effort": "low"}}, None),
        ("openai_chat", {"response_format": JS}, TITLE),
        ("openai_chat", {"response_format": {"type": "json_object"}}, {}),
        ("openai_chat", {"response_format": {"type": "text"}}, None),
        ("openai_responses", {"text": {"format": {"type": "json_schema", "schema": TITLE}}}, TITLE),
        ("gemini", {"generationConfig": GEMINI_JSON}, TITLE),
        ("gemini", {"generation_config": {"response_mime_type": "application/json"}}, {}),
        ("gemini", {"generationConfig": {"responseMimeType": "text/plain"}}, None),
    ],
)  # fmt: skip
def test_schema_of_reads_each_clients_words(protocol: str, body: dict[str, Any], schema: Any) -> None:
    assert schema_of(protocol, body) == schema


def test_a_claude_code_title_request_asks_every_local_wire_for_json() -> None:
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 64,
        "messages": MSGS,
        "output_config": {"format": {"type": "json_schema", "schema": TITLE}},
    }
    ollama = translate.request_to("ollama", "anthropic", body, model="qwen")
    assert ollama["format"] == TITLE
    chat = translate.request_to("openai_chat", "anthropic", body, model="smollm2")
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": TITLE},
    }
    assert for_dialect(chat, "json_object_schema")["response_format"] == {
        "type": "json_object",
        "schema": TITLE,
    }
    assert for_dialect(chat, "json_schema") is chat and for_dialect(chat, None) is chat


def test_an_openai_clients_json_schema_reaches_ollama_as_format() -> None:
    body = {
        "model": "gpt-x",
        "messages": MSGS,
        "response_format": {"type": "json_schema", "json_schema": {"schema": TITLE}},
    }
    assert translate.request_to("ollama", "openai_chat", body, model="qwen")["format"] == TITLE
    plain = for_dialect({"messages": MSGS, "response_format": {"type": "json_object"}}, "json_object_schema")
    assert plain["response_format"] == {"type": "json_object"}
