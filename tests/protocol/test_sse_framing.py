"""SSE / NDJSON decoders give the same events however the bytes are cut."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from glider_cli.protocol.sse import NDJSONDecoder, SSEDecoder, SSEEvent, encode_done, encode_sse

STREAM = (
    b": keep-alive comment\n\n"
    b'event: message_start\ndata: {"a": 1}\n\n'
    b'event: content_block_delta\r\ndata: {"text": "h\xc3\xa9llo"}\r\n\r\n'
    b"data: line one\ndata: line two\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent("message_start", '{"a": 1}'),
    SSEEvent("content_block_delta", '{"text": "héllo"}'),
    SSEEvent(None, "line one\nline two"),
    SSEEvent(None, "[DONE]"),
]


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


def test_sse_whole() -> None:
    dec = SSEDecoder()
    assert dec.feed(STREAM) + dec.flush() == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=30))
def test_sse_any_split(cuts: list[int]) -> None:
    dec = SSEDecoder()
    events = []
    for piece in _cut(STREAM, cuts):
        events += dec.feed(piece)
    assert events + dec.flush() == EXPECTED


def test_sse_flush_returns_unterminated_event() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"event: x\ndata: {}") == []
    assert dec.flush() == [SSEEvent("x", "{}")]


def test_sse_lone_cr_line_endings() -> None:
    dec = SSEDecoder()
    # a CR at the very end may be half of a CRLF, so the last blank line waits for more bytes or flush
    assert dec.feed(b"data: a\r\rdata: b\r\r") == [SSEEvent(None, "a")]
    assert dec.flush() == [SSEEvent(None, "b")]


def test_encoders_round_trip() -> None:
    dec = SSEDecoder()
    out = dec.feed(encode_sse("ping", {"type": "ping"}) + encode_done())
    assert out == [SSEEvent("ping", '{"type":"ping"}'), SSEEvent(None, "[DONE]")]


NDJSON = b'{"message": {"content": "h\xc3\xa9"}, "done": false}\n\n{"done": true}\nnot json\n{"tail": 1}'


@given(st.lists(st.integers(min_value=0, max_value=1000), max_size=20))
def test_ndjson_any_split(cuts: list[int]) -> None:
    dec = NDJSONDecoder()
    out = []
    for piece in _cut(NDJSON, cuts):
        out += dec.feed(piece)
    out += dec.flush()
    assert out == [
        {"message": {"content": "hé"}, "done": False},
        {"done": True},
        {"error": "not json"},
        {"tail": 1},
    ]


def test_json_object_skips_what_is_not_an_object() -> None:
    assert SSEEvent("message_start", '{"a": 1}').json_object() == {"a": 1}
    assert SSEEvent(None, "[DONE]").json_object() is None
    assert SSEEvent(None, "[1, 2]").json_object() is None
    assert SSEEvent(None, "").json_object() is None
