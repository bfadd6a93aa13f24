"""What an outcome event records for usage accounting (turns.calibration.accounting through Turns.close): the
rule and the requested model always; estimates, named in `estimated`, only where the backend reported
nothing and something was billed."""

from __future__ import annotations

from typing import Any

from glider_cli.config.load import load_config
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router
from glider_cli.turns.lifecycle import Served, Turns

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "/local " + "word " * 400}],
}


def _close(**served: Any) -> dict[str, Any]:
    config = load_config(profile="default")
    ids = iter(range(100))
    turns = Turns(
        Router(config),
        config.settings.sticky,
        config.settings.tool_followup,
        clock=lambda: 0.0,
        new_id=lambda: f"t{next(ids)}",
    )
    chat = parse_request("anthropic", BODY, {})
    opened = turns.open(chat, BODY)
    events = turns.close(opened, Served("ollama", "local", "qwen", **served))
    kind, data, _ = events[0]
    assert kind == "FulfilledLocal"
    assert (data["rule"], data["requested_model"]) == ("explicit_local", "claude-sonnet-4-5")
    data["_request_tokens"] = chat.estimated_tokens
    return dict(data)


def test_reported_counts_are_kept_as_they_are() -> None:
    d = _close(
        status=200, input_tokens=700, output_tokens=20, text_bytes=4000, cache={"cache_read_tokens": 5}
    )
    assert (d["input_tokens"], d["output_tokens"], d["cache_read_tokens"]) == (700, 20, 5)
    assert "estimated" not in d


def test_nothing_reported_is_estimated_and_marked() -> None:
    d = _close(status=200, text_bytes=401)
    assert d["estimated"] == ["input_tokens", "output_tokens"]
    assert d["input_tokens"] == d["_request_tokens"] and d["output_tokens"] == 101


def test_the_input_is_estimated_from_the_request_the_backend_was_sent_not_the_client_s() -> None:
    # A local backend gets a pack: 120 tokens of it, not the client's whole request (issue 39 §3).
    d = _close(status=200, sent_tokens=120, text_bytes=70)
    assert d["input_tokens"] == 120 and d["input_tokens"] < d["_request_tokens"]
    assert d["output_tokens"] == 18 and d["estimated"] == ["input_tokens", "output_tokens"]
    # What a cloud request for the same turn would have read: the basis of the savings, kept apart.
    assert d["client_input_tokens"] == d["_request_tokens"]


def test_a_request_the_client_left_saved_nothing() -> None:
    d = _close(status=0, complete=False, disconnected=True, answered=False, sent_tokens=616)
    assert d["client_input_tokens"] == 0 and d["input_tokens"] == 616


def test_an_error_status_estimates_nothing() -> None:
    d = _close(status=503, complete=False, text_bytes=300)
    assert d["input_tokens"] is None and d["output_tokens"] is None and "estimated" not in d


def test_a_client_that_left_before_any_reply_has_its_input_estimated() -> None:
    d = _close(status=0, complete=False, disconnected=True, answered=False)
    assert d["estimated"] == ["input_tokens"] and d["output_tokens"] == 0


def test_a_cut_stream_s_output_is_estimated_when_more_than_it_reported() -> None:
    d = _close(status=200, input_tokens=900, output_tokens=1, complete=False, text_bytes=2000)
    assert d["input_tokens"] == 900 and d["output_tokens"] == 500 and d["estimated"] == ["output_tokens"]
    d = _close(status=200, input_tokens=900, output_tokens=800, complete=False, text_bytes=2000)
    assert d["output_tokens"] == 800 and "estimated" not in d
