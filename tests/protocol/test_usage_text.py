"""`protocol.token_counts.Usage.text_bytes`: the bytes of a reply's text, never its framing, whatever the
protocol and wherever the chunks are cut (the basis of an output estimate, issue 39 §3)."""

from __future__ import annotations

import json

from glider_cli.protocol.token_counts import Usage


def _chat_stream(text: str) -> bytes:
    chunks = [text[i : i + 5] for i in range(0, len(text), 5)]
    events = [{"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]} for c in chunks]
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def test_a_chat_stream_cut_anywhere_counts_its_text_only() -> None:
    text = 'say "hi"\nthen go — ok'
    raw = _chat_stream(text)
    for size in (1, 7, 64, len(raw)):
        u = Usage()
        for i in range(0, len(raw), size):
            u.feed(raw[i : i + size])
        # An escape is one byte; a non-ASCII character counts as its \\u escape's 5 (an estimate).
        assert u.text_bytes == len(text) + 4, size
    assert len(raw) > 8 * len(text)  # what the old estimate counted


def test_a_responses_stream_counts_its_deltas_not_the_text_it_repeats_at_the_end() -> None:
    raw = (
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hello"}\n\n'
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":" you"}\n\n'
        b'event: response.output_text.done\ndata: {"type":"response.output_text.done","text":"Hello you"}\n\n'
        b'event: response.completed\ndata: {"response":{"output":[{"content":[{"text":"Hello you"}]}]}}\n\n'
    )
    u = Usage()
    u.feed(raw)
    assert u.text_bytes == 9


def test_whole_bodies_without_newlines_count_their_text_and_arguments() -> None:
    body = {
        "content": [
            {"type": "text", "text": "abc"},
            {"type": "tool_use", "id": "t", "name": "Read", "input": {"path": "x"}},
        ]
    }
    u = Usage()
    u.feed(json.dumps(body).encode())
    assert u.text_bytes == 3
    chat = {"choices": [{"message": {"content": "hi", "tool_calls": [{"function": {"arguments": "{}"}}]}}]}
    u = Usage()
    u.feed(json.dumps(chat).encode())
    assert u.text_bytes == 4
