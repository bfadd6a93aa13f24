"""The proxy's small in-memory state: usage read from reply bytes, the count_tokens calibration;
and, live, that SSE is flushed event by event and that count_tokens estimates follow reported usage."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from fake_upstream import FakeUpstream
from glider_cli.protocol.token_counts import usage_from_bytes
from glider_cli.turns.calibration import UsageCalibrator


def test_usage_from_every_protocol() -> None:
    a = usage_from_bytes(
        b'data: {"usage":{"input_tokens":12,"output_tokens":1}}\n\ndata: {"usage":{"output_tokens":30}}\n\n'
    )
    assert (a.input_tokens, a.output_tokens) == (12, 30)
    c = usage_from_bytes(b'{"usage": {"prompt_tokens": 7, "completion_tokens": 3}}')
    assert (c.input_tokens, c.output_tokens) == (7, 3)
    o = usage_from_bytes(b'{"done":true,"prompt_eval_count":40,"eval_count":9}\n')
    assert (o.input_tokens, o.output_tokens) == (40, 9)
    none = usage_from_bytes(b'data: {"type":"content_block_delta","delta":{"text":"hi"}}\n\n')
    assert (none.input_tokens, none.output_tokens) == (None, None)


def test_calibrator_moves_towards_reported_usage_and_is_clamped() -> None:
    cal = UsageCalibrator(alpha=0.5)
    assert cal.estimate("b", 100) == 100
    cal.record("b", 100, 200)
    assert cal.estimate("b", 100) == 200
    cal.record("b", 100, 100)
    assert cal.estimate("b", 100) == 150
    cal.record("x", 10, 10_000)  # one absurd reply cannot multiply estimates by more than 4
    assert cal.estimate("x", 10) == 40
    cal.record("y", 0, 50)
    cal.record("y", 10, None)
    assert cal.ratio("y") == 1.0


@pytest.mark.live
def test_sse_is_flushed_event_by_event(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["m"], ollama_models=["qwen-local"]) as fake,
        GliderServer(backends_yaml(fake.url), tmp_path) as g,
    ):
        fake.set_reply(text="one two three four five six", event_delay=0.2)
        body = {
            "model": "m",
            "max_tokens": 8,
            "stream": True,
            "messages": [{"role": "user", "content": "/cloud"}],
        }
        with httpx.stream("POST", g.url + "/v1/messages", json=body, timeout=30) as r:
            assert "content-length" not in r.headers
            chunks = r.iter_raw()
            first = next(chunks)
            assert b"message_start" in first and b"message_stop" not in first
            rest = b"".join(chunks)
        assert b"message_stop" in rest


@pytest.mark.live
def test_count_tokens_estimate_is_corrected_by_usage_seen(tmp_path: Path) -> None:
    with (
        FakeUpstream(models=["m"], ollama_models=["qwen-local"]) as fake,
        GliderServer(backends_yaml(fake.url), tmp_path) as g,
    ):
        text = "count these words please /local " * 40
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        first = httpx.post(g.url + "/v1/messages/count_tokens", json=body).json()["input_tokens"]
        # the local backend then reports far more input tokens than bytes/4 suggested
        fake.set_reply(usage=(first * 3, 5))
        r = httpx.post(g.url + "/v1/messages", json={**body, "max_tokens": 8})
        assert r.status_code == 200
        g.wait_for("FulfilledLocal")
        second = httpx.post(g.url + "/v1/messages/count_tokens", json=body).json()["input_tokens"]
        assert second > first
