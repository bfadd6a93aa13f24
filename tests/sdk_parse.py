"""Feed bytes we produced to the official SDKs through a MockTransport, so their parsers judge them.

The installed SDKs are built on `httpx2` (they reject plain httpx objects), hence its MockTransport.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai


def _client(body: bytes, streaming: bool) -> httpx2.Client:
    ctype = "text/event-stream" if streaming else "application/json"

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": ctype}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def anthropic_client(body: bytes, *, streaming: bool = True) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="sk-test", base_url="http://fake", max_retries=0, http_client=_client(body, streaming)
    )


def openai_client(body: bytes, *, streaming: bool = True) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test", base_url="http://fake/v1", max_retries=0, http_client=_client(body, streaming)
    )


def anthropic_final(events: list[bytes]) -> Any:
    """The Message the Anthropic SDK's stream helper assembles from our SSE bytes."""
    client = anthropic_client(b"".join(events))
    with client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]) as s:
        return s.get_final_message()


def chat_final(events: list[bytes]) -> Any:
    client = openai_client(b"".join(events))
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}]) as s:
        return s.get_final_completion()


def chat_chunks(events: list[bytes]) -> list[Any]:
    client = openai_client(b"".join(events))
    return list(
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
    )


def responses_final(events: list[bytes]) -> Any:
    client = openai_client(b"".join(events))
    with client.responses.stream(model="m", input="x") as s:
        return s.get_final_response()
