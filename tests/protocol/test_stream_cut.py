"""A Chat stream that ends with `[DONE]` before any finish_reason was cut short by the server
(llama-cpp-python does so when the next request interrupts it): a failure naming the cause, not a reply."""

from __future__ import annotations

import json

from glider_cli.protocol.translate_stream import StreamTranslator


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"id": "c1", "model": "m", "choices": [choice]}).encode() + b"\n\n"


def _run(*chunks: bytes) -> tuple[StreamTranslator, bytes]:
    t = StreamTranslator("anthropic", "openai_chat", model="claude-x")
    out = b"".join(b"".join(t.feed(c)) for c in chunks) + b"".join(t.finish())
    return t, out


def test_done_without_a_finish_reason_is_a_cut_stream() -> None:
    t, out = _run(_chunk({"role": "assistant", "content": "Once upon"}), b"data: [DONE]\n\n")
    assert t.failure is not None and t.failure.startswith("stream cut")
    assert "--interrupt_requests false" in t.failure
    assert b"event: error" in out and b"stream cut" in out and b"message_stop" not in out


def test_a_finished_stream_is_a_reply() -> None:
    t, out = _run(_chunk({"content": "Hi"}), _chunk({}, "stop"), b"data: [DONE]\n\n")
    assert t.failure is None and t.complete and b"message_stop" in out and b"event: error" not in out
