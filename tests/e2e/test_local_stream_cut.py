"""A stream the local server cuts is recorded as cut, not 200: the real llama.cpp server (llama-cpp-python,
started as the tests start it, with its `interrupt_requests` default on) ends a running stream with
`[DONE]` and no finish_reason when the next request arrives. The client gets the protocol's error event
naming the cause; the outcome event says `cut`, and so does `glider serve`'s line for it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.test_local_model import _config, _serve
from fake_upstream import FakeUpstream
from glider_cli.commands.serve import request_line

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.fake_serves(models=["claude-x"])]

HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def _body(text: str, max_tokens: int, *, stream: bool) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "max_tokens": max_tokens,
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
    }


def test_a_stream_cut_by_the_next_request_is_recorded_as_cut(
    llama: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.reset()
    lines: list[str] = []

    def observe(seen: Any, served: Any) -> None:
        lines.append(request_line(seen, served))

    with _serve(tmp_path, _config(llama.url, fake.url, max_tokens=600), observer=observe) as g:
        streaming = threading.Event()
        frames: list[str] = []

        def long_story() -> None:
            body = _body("/local Write a very long story about a dragon and a parser.", 600, stream=True)
            with httpx.stream("POST", g.url + "/v1/messages", json=body, headers=HEADERS, timeout=120) as r:
                for line in r.iter_lines():
                    frames.append(line)
                    if line == "event: content_block_delta":
                        streaming.set()
            streaming.set()

        t = threading.Thread(target=long_story)
        t.start()
        assert streaming.wait(120), frames[-20:]
        second = httpx.post(
            g.url + "/v1/messages", json=_body("/local say hi", 8, stream=False), headers=HEADERS
        )
        t.join(120)
        assert second.status_code == 200, second.text
        outcomes = g.wait_for("FulfilledLocal", 2)
        failed = g.wait_for("UpstreamFailed")
    assert "event: error" in frames and any("stream cut" in f for f in frames), frames[-10:]
    cut = [o for o in outcomes if o.get("outcome") == "cut"]
    assert len(cut) == 1 and cut[0]["status"] == 200 and cut[0]["complete"] is False, outcomes
    assert failed and failed[0]["stage"] == "mid_stream" and "interrupt_requests" in failed[0]["error"]
    assert any(" 200 cut " in line for line in lines), lines


def test_a_chat_stream_relayed_as_it_is_is_recorded_as_cut_too(
    llama: Any, fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.reset()
    with _serve(tmp_path, _config(llama.url, fake.url, max_tokens=600)) as g:
        streaming = threading.Event()
        lines: list[str] = []

        def long_story() -> None:
            body = {
                "model": "claude-x",
                "stream": True,
                "max_tokens": 600,
                "messages": [{"role": "user", "content": "/local Write a very long story about a dragon."}],
            }
            with httpx.stream("POST", g.url + "/v1/chat/completions", json=body, timeout=120) as r:
                for line in r.iter_lines():
                    lines.append(line)
                    if '"content"' in line:
                        streaming.set()
            streaming.set()

        t = threading.Thread(target=long_story)
        t.start()
        assert streaming.wait(120), lines[-20:]
        second = httpx.post(
            g.url + "/v1/messages", json=_body("/local say hi", 8, stream=False), headers=HEADERS
        )
        t.join(120)
        assert second.status_code == 200, second.text
        outcomes = g.wait_for("FulfilledLocal", 2)
    assert "data: [DONE]" in lines and not any('"finish_reason":"' in x.replace(" ", "") for x in lines), (
        lines[-5:]
    )
    cut = [o for o in outcomes if o.get("outcome") == "cut"]
    assert len(cut) == 1 and cut[0]["complete"] is False, outcomes
