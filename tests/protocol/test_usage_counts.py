"""Token counts read out of each protocol's reply bytes (protocol.token_counts), cache tokens included: what
an outcome event records, whatever shape the backend answered in."""

from __future__ import annotations

import pytest

from glider_cli.protocol.token_counts import Usage, usage_from_bytes

CASES = [
    (  # Anthropic stream: message_start's input and cache counts, message_delta's cumulative output
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":12,'
        b'"cache_creation_input_tokens":400,"cache_read_input_tokens":9000,"output_tokens":1}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":77}}\n\n',
        (12, 77, 9000, 400, False),
    ),
    (  # OpenAI Chat: prompt_tokens counts its cached tokens
        b'{"usage":{"prompt_tokens":5000,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4096}}}',
        (5000, 7, 4096, None, True),
    ),
    (  # OpenAI Responses: input_tokens counts its cached tokens
        b'{"usage":{"input_tokens":300,"input_tokens_details":{"cached_tokens":128},"output_tokens":9}}',
        (300, 9, 128, None, True),
    ),
    (  # Gemini: promptTokenCount counts cachedContentTokenCount
        b'{"usageMetadata":{"promptTokenCount":800,"candidatesTokenCount":20,"cachedContentTokenCount":512}}',
        (800, 20, 512, None, True),
    ),
    (b'{"done":true,"prompt_eval_count":33,"eval_count":4}', (33, 4, None, None, False)),  # Ollama
    (
        b'{"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}}',
        (5, 1, 0, None, True),
    ),
]


@pytest.mark.parametrize(("data", "want"), CASES)
def test_counts_of_every_protocol(data: bytes, want: tuple[object, ...]) -> None:
    u = usage_from_bytes(data)
    assert (
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.cache_in_input,
    ) == want
    assert u.bytes == len(data)


def test_fed_in_chunks_and_recorded() -> None:
    u = Usage()
    data = CASES[0][0]
    for i in range(0, len(data), 7):
        u.feed(data[i : i + 7])
    u2 = usage_from_bytes(data)
    assert u2.record() == {"cache_read_tokens": 9000, "cache_write_tokens": 400}
    assert usage_from_bytes(CASES[1][0]).record() == {"cache_read_tokens": 4096, "cache_in_input": True}
    assert usage_from_bytes(CASES[5][0]).record() == {"cache_read_tokens": 0}
    assert u.bytes == len(data)


@pytest.mark.parametrize(
    ("data", "want"),
    [
        (b'data: {"choices":[{"delta":{},"finish_reason":"length"}]}\n\n', True),
        (b'data: {"choices":[{"delta":{},"finish_reason": "stop"}]}\n\n', False),
        (b'{"model":"m","done":true,"done_reason":"length","eval_count":3}', True),
        (b'event: message_delta\ndata: {"delta":{"stop_reason":"max_tokens"},"usage":{}}\n\n', True),
        (b'event: message_delta\ndata: {"delta":{"stop_reason":"end_turn"},"usage":{}}\n\n', False),
        (b'{"candidates":[{"finishReason":"MAX_TOKENS"}],"usageMetadata":{"candidatesTokenCount":4}}', True),
        (b'{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}', True),
        # The words inside a reply's text are escaped JSON: never a stop.
        (b'data: {"choices":[{"delta":{"content":"\\"finish_reason\\": \\"length\\""}}]}\n\n', False),
        (b'data: {"choices":[{"delta":{"content":"max_tokens\\" length"},"finish_reason":null}]}\n\n', False),
    ],
)
def test_a_reply_that_stopped_at_its_token_limit_is_seen(data: bytes, want: bool) -> None:
    assert usage_from_bytes(data, limit=True).at_limit is want
    assert usage_from_bytes(data).at_limit is False  # looked for only when asked (a local reply)
    u = Usage(limit=True)
    for line in data.split(b"\n"):  # fed event by event, as a stream arrives
        u.feed(line + b"\n")
    assert u.at_limit is want


def test_a_key_cut_at_a_chunk_boundary_is_not_counted() -> None:
    """A count is read only with its whole quoted key in the same bytes (as one pattern over them has it):
    a chunk that starts inside a key, or after its opening quote, counts nothing of it."""
    u = Usage()
    u.feed(b'{"usage":{"')
    u.feed(b'input_tokens":21,"output_tokens":9}}')
    assert (u.input_tokens, u.output_tokens) == (None, 9)
    u.feed(b'tokens":50, "x_output_tokens": 70, "cached_tokens" : 3')
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_in_input) == (None, 9, 3, True)


def test_only_whole_usage_keys_count_with_any_spacing() -> None:
    """A key that only ends like a usage key counts nothing; spaces around the colon do not matter; the
    largest value of a key wins, whichever pattern finds it."""
    u = usage_from_bytes(
        b'{"my_input_tokens":500,"x_eval_count":600,"amount":7,"count":8,"total_tokens":900,'
        b'"input_tokens" :\n 12, "eval_count":\t3,"output_tokens": 2,"completion_tokens":5,'
        b'"cache_creation_input_tokens" : 40,"cachedContentTokenCount":6,"cached_tokens":4}'
    )
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (12, 5, 6, 40)
    assert u.cache_in_input is True
    assert usage_from_bytes(b'{"text":"\\"input_tokens\\": 5","output_tokens":1}').input_tokens is None


def test_a_key_or_value_cut_between_chunks() -> None:
    """Each chunk is read on its own: a key split across two chunks is not counted (the next chunk does
    not start with its opening quote), a value cut short counts the digits its chunk has."""
    u = Usage()
    u.feed(b'{"usage":{"input_tok')
    u.feed(b'ens":21,"output_tokens":1')
    u.feed(b'9}, "eval_')
    u.feed(b'count":4, "promptTokenCount" : 30}')
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == (30, 1, None)
    assert u.cache_in_input is False
