"""When an upstream's answer sends the request to the fallback, and a response already read.

- `retryable(status)`: 408, 409, 429 and every 5xx move to the fallback backend (any side).
- `local_fallback_cause(status, body)`: a *local* backend's 404 (Ollama's "model not found", a vLLM
  served-model-name typo) or a 400/413 whose body says the context is too long (llama.cpp, vLLM,
  Ollama wordings) also does; any other local 4xx is the client's own error and is relayed.
- `BufferedResponse`: an upstream response whose body was read to decide that, relayed as is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from glider_cli.backends.client import UpstreamResponse

RETRY_STATUSES = frozenset({408, 409, 429})


def retryable(status: int) -> bool:
    return status in RETRY_STATUSES or status >= 500


# What a local server says when the request does not fit its context (llama.cpp, vLLM, Ollama).
_CONTEXT_WORDS = (
    b"context_length_exceeded",
    b"context length",
    b"context window",
    b"maximum context",
    b"too many tokens",
    b"exceeds the",
    b"too long",
)


def local_fallback_cause(status: int, body: bytes) -> str | None:
    """Why a local backend's 4xx should go to the fallback: the model is not there (404: Ollama's
    "model not found", a vLLM served-model-name typo) or the request does not fit its context (400)."""
    if status == 404:
        return "model not found"
    if status in (400, 413) and any(w in body.lower() for w in _CONTEXT_WORDS):
        return "context too long"
    return None


class BufferedResponse:
    """An upstream response whose body was read already (to see whether it is a fallback cause)."""

    def __init__(self, resp: UpstreamResponse, data: bytes) -> None:
        self.status = resp.status
        self.headers = resp.headers
        self.raw_headers = resp.raw_headers
        self._data = data

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        if self._data:
            yield self._data

    async def read(self) -> bytes:
        return self._data

    async def aclose(self) -> None:
        return None
