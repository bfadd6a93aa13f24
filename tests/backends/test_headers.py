"""Header policy: hop-by-hop and encodings dropped, betas kept, auth replaced except for origin."""

from __future__ import annotations

from glider_cli.backends.headers import response_headers, upstream_headers
from glider_cli.backends.registry import BackendRegistry
from glider_cli.config.settings import BackendSettings

CLIENT = [
    ("Host", "127.0.0.1:8787"),
    ("Connection", "keep-alive"),
    ("Content-Length", "50331"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
    ("x-api-key", "sk-client"),
    ("Authorization", "Bearer sk-client"),
    ("anthropic-version", "2023-06-01"),
    ("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"),
    ("X-Claude-Code-Session-Id", "abc"),
    ("User-Agent", "claude-cli/2.1.332"),
    ("X-Stainless-Retry-Count", "0"),
]


def _backends() -> BackendRegistry:
    return BackendRegistry(
        {
            "origin": BackendSettings(name="origin", type="origin", side="cloud"),
            "claude": BackendSettings(name="claude", type="anthropic", side="cloud", api_key_env="AK"),
            "ollama": BackendSettings(name="ollama", type="ollama", side="local", headers={"X-Extra": "1"}),
        },
        {"AK": "sk-glider"},
    )


def test_origin_keeps_client_auth_and_every_header() -> None:
    h = upstream_headers(CLIENT, _backends().get("origin"), passthrough=True)
    assert h["x-api-key"] == "sk-client"
    assert h["authorization"] == "Bearer sk-client"
    assert h["anthropic-beta"] == "claude-code-20250219,interleaved-thinking-2025-05-14"
    assert h["x-claude-code-session-id"] == "abc"
    assert h["x-stainless-retry-count"] == "0"
    assert h["accept-encoding"] == "identity"
    for gone in ("host", "connection", "content-length"):
        assert gone not in h


def test_other_backends_get_their_own_key_only() -> None:
    h = upstream_headers(CLIENT, _backends().get("claude"), passthrough=True)
    assert h["x-api-key"] == "sk-glider"
    assert "authorization" not in h
    assert h["anthropic-version"] == "2023-06-01"


def test_translated_request_carries_content_headers_and_config_headers() -> None:
    h = upstream_headers(CLIENT, _backends().get("ollama"), passthrough=False)
    assert "x-api-key" not in h and "authorization" not in h
    assert "anthropic-beta" not in h
    assert h["x-extra"] == "1"
    assert h["user-agent"] == "claude-cli/2.1.332"
    assert h["content-type"] == "application/json"


def test_translated_to_anthropic_adds_version() -> None:
    h = upstream_headers([("authorization", "Bearer x")], _backends().get("claude"), passthrough=False)
    assert h["anthropic-version"] == "2023-06-01"
    assert h["x-api-key"] == "sk-glider"


def test_response_headers_drop_framing_and_encoding() -> None:
    out = response_headers(
        [
            (b"Content-Type", b"text/event-stream"),
            (b"Content-Length", b"10"),
            (b"Content-Encoding", b"gzip"),
            (b"Transfer-Encoding", b"chunked"),
            (b"request-id", b"req_1"),
        ]
    )
    assert out == [(b"content-type", b"text/event-stream"), (b"request-id", b"req_1")]


def test_response_headers_drop_date_and_server_and_keep_repeats_lowercased() -> None:
    upstream = [
        (b"Content-Type", b"application/json"),
        (b"Content-Length", b"12"),
        (b"Transfer-Encoding", b"chunked"),
        (b"Content-Encoding", b"gzip"),
        (b"Date", b"x"),
        (b"Server", b"y"),
        (b"Request-Id", b"req_1"),
        (b"anthropic-ratelimit-requests-remaining", b"99"),
        (b"Set-Cookie", b"a=1"),
        (b"Set-Cookie", b"b=2"),
    ]
    assert response_headers(upstream) == [
        (b"content-type", b"application/json"),
        (b"request-id", b"req_1"),
        (b"anthropic-ratelimit-requests-remaining", b"99"),
        (b"set-cookie", b"a=1"),
        (b"set-cookie", b"b=2"),
    ]
