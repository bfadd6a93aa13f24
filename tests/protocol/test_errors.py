"""protocol.error_bodies as the proxy uses it (error bytes, an upstream's message), and the stream error
frames: one spelling per protocol, whether the stream was translated or passed through."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fake_wire import Reply, anthropic_events, chat_events, plan_reply
from fake_wire_responses import responses_events
from glider_cli.errors import BackendError, ConfigError
from glider_cli.protocol.error_bodies import error_body, error_bytes, upstream_text
from glider_cli.protocol.sse import SSEDecoder
from glider_cli.protocol.translate import response_bytes_to, upstream_path
from glider_cli.protocol.translate_stream import StreamTranslator, stream_error

CLIENTS = ("anthropic", "openai_chat", "openai_responses")


def test_error_bytes_are_the_error_body() -> None:
    for proto in (*CLIENTS, "ollama"):
        for status in (400, 404, 429, 500, 529):
            assert orjson.loads(error_bytes(proto, status, "m")) == error_body(proto, status, "m")
    assert orjson.loads(error_bytes("openai_chat", 500, "m", type="overloaded_error"))["error"]["code"] == (
        "overloaded_error"
    )


def test_upstream_text_reads_any_protocols_message_and_falls_back_on_an_empty_body() -> None:
    assert upstream_text(b'{"type":"error","error":{"type":"x","message":"busy"}}', "f") == "busy"
    assert upstream_text(b'{"error":{"message":"slow down","type":"rate_limit"}}', "f") == "slow down"
    assert upstream_text(b'{"error":"model not found"}', "f") == "model not found"
    assert upstream_text(b"<html>bad gateway</html>", "f") == "<html>bad gateway</html>"
    assert upstream_text(b"", "upstream answered 503") == "upstream answered 503"


def test_a_reply_that_is_not_a_json_object_names_its_backend() -> None:
    with pytest.raises(BackendError, match="backend gpu-box sent a reply that is not JSON"):
        response_bytes_to("anthropic", "ollama", b"<html>", model="m", backend="gpu-box")
    with pytest.raises(BackendError, match="backend gpu-box sent a reply that is not a JSON object"):
        response_bytes_to("anthropic", "ollama", b"[1]", model="m", backend="gpu-box")
    ollama = {"model": "q", "message": {"role": "assistant", "content": "hi"}, "done": True}
    reply = response_bytes_to("anthropic", "ollama", orjson.dumps(ollama), model="m", backend="b")
    assert reply["content"] == [{"type": "text", "text": "hi"}] and reply["model"] == "m"


def test_upstream_paths() -> None:
    assert upstream_path("ollama") == "/api/chat"
    assert upstream_path("openai") == upstream_path("openai_chat") == "/v1/chat/completions"
    assert upstream_path("anthropic") == "/v1/messages"
    with pytest.raises(ConfigError):
        upstream_path("gemini")


def _opening(proto: str) -> bytes:
    """The first few frames of a real-looking upstream stream in `proto`."""
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    plan = plan_reply(proto, body, Reply(text="one two three"))
    if proto == "anthropic":
        return b"".join(anthropic_events(plan)[:3])
    if proto == "openai_chat":
        return b"".join(chat_events(plan, include_usage=False)[:2])
    return b"".join(responses_events(plan)[:3])


def _last_event(data: bytes) -> tuple[str | None, dict[str, Any]]:
    ev = SSEDecoder().feed(data)[-1]
    obj = ev.json_object()
    assert obj is not None
    return ev.event, obj


def _normal(obj: Any) -> Any:
    """Ids, timestamps and sequence numbers are each stream's own."""
    if isinstance(obj, dict):
        return {
            k: "_" if k in ("id", "created_at", "sequence_number") else _normal(v) for k, v in obj.items()
        }
    return obj


@pytest.mark.parametrize("proto", CLIENTS)
def test_a_passthrough_stream_ends_with_the_frame_a_translated_one_ends_with(proto: str) -> None:
    opening = _opening(proto)
    passthrough = StreamTranslator(proto, proto, model="m")
    assert passthrough.feed(opening) == [opening]
    name_p, data_p = _last_event(b"".join(passthrough.error("boom")))
    name_s, data_s = _last_event(stream_error(proto, "boom", model="m"))  # the proxy's passthrough relay
    translated = StreamTranslator(proto, "ollama", model="m")
    first = translated.feed(b'{"model":"q","message":{"role":"assistant","content":"hi"},"done":false}\n')
    assert first  # the client stream has started
    name_t, data_t = _last_event(b"".join(translated.error("boom")))
    assert name_p == name_s == name_t
    assert _normal(data_p) == _normal(data_s)
    if proto == "anthropic":
        assert name_t == "error" and data_t == data_s == error_body(
            "anthropic", 500, "boom", type="api_error"
        )
    elif proto == "openai_chat":
        assert name_t is None and data_t == data_s == error_body("openai_chat", 500, "boom")
    else:
        assert name_t == data_t["type"] == data_s["type"] == "response.failed"
        for data in (data_t, data_s):
            assert data["response"]["status"] == "failed"
            assert data["response"]["error"] == {"code": "server_error", "message": "boom"}
        assert set(data_t) == set(data_s) and set(data_t["response"]) == set(data_s["response"])


def test_stream_error_keeps_the_upstreams_error_type() -> None:
    _, data = _last_event(stream_error("anthropic", "busy", type="overloaded_error"))
    assert data["error"]["type"] == "overloaded_error"
    _, data = _last_event(stream_error("openai_chat", "busy", type="overloaded_error"))
    assert data["error"]["type"] == data["error"]["code"] == "overloaded_error"
    _, data = _last_event(stream_error("openai_responses", "slow", type="rate_limit_exceeded"))
    assert data["response"]["error"]["code"] == "rate_limit_exceeded"
    with pytest.raises(ConfigError):
        stream_error("ollama", "x")
