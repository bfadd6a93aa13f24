"""A delegated turn while it runs: the head at once, keep-alives, a client that leaves stops the run, the
vendor's own failure reason reaches the user. Real glider serve, real (fake) agent processes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import pytest
from glider_harness import GliderServer, backends_yaml

from fixtures.fake_agents.install import install_fake_agents, path_with, runs

# The reply ends with what the run changed in the workspace (delegate.changes): nothing here.
DONE = "delegate says done\n\nChanged in the workspace (git): no changes"

pytestmark = pytest.mark.live


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, Path]]:
    bin_dir = install_fake_agents(tmp_path / "fake-bin")
    ws = tmp_path / "project"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    env = {
        **os.environ,
        "PATH": path_with(bin_dir),
        "FAKE_AGENT_LOG": str(tmp_path / "fake-log"),
        "FAKE_AGENT_REPLY": "delegate says done",
        "GLIDER_HOME": str(tmp_path / "home"),
    }
    yield env, ws, tmp_path / "fake-log"


def _body(text: str, stream: bool) -> dict[str, object]:
    return {"model": "m", "max_tokens": 32, "stream": stream, "messages": [{"role": "user", "content": text}]}


def test_a_slow_delegate_streams_its_head_at_once_and_keeps_alive(
    setup: tuple[dict[str, str], Path, Path], tmp_path: Path
) -> None:
    env, ws, _ = setup
    env = {**env, "FAKE_AGENT_SLEEP": "5"}
    headers = {"x-glider-workspace": str(ws), "anthropic-version": "2023-06-01", "x-api-key": "k"}
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env) as g:
        t0 = time.monotonic()
        seen: list[tuple[float, str]] = []
        # A client that gives up after 3 s without a byte, as SDKs with a short read timeout do.
        timeout = httpx.Timeout(30, read=3.0)
        with httpx.stream(
            "POST",
            g.url + "/v1/messages",
            json=_body("fix it /cursor-agent", True),
            headers=headers,
            timeout=timeout,
        ) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("event: "):
                    seen.append((time.monotonic() - t0, line[7:]))
        kinds = [k for _, k in seen]
        assert kinds[0] == "message_start" and seen[0][0] < 2.0  # before the run could have ended
        assert kinds.count("ping") >= 2 and kinds[-1] == "message_stop"
        assert time.monotonic() - t0 >= 5
        # The SDK reads the same stream: pings are skipped, the text is the delegate's.
        client = anthropic.Anthropic(
            base_url=g.url,
            api_key="k",
            max_retries=0,
            timeout=3.0,
            default_headers={"x-glider-workspace": str(ws)},
        )
        with client.messages.stream(
            model="m", max_tokens=32, messages=[{"role": "user", "content": "and again /cursor-agent"}]
        ) as s:
            assert "".join(s.text_stream) == DONE
        # A whole (non-streaming) reply is kept alive with whitespace before its JSON.
        msg = client.messages.create(
            model="m", max_tokens=32, messages=[{"role": "user", "content": "once more /cursor-agent"}]
        )
        assert msg.content[0].type == "text" and msg.content[0].text == DONE
        # OpenAI clients get SSE comments as keep-alives and their own chunks around them.
        oa = {
            "model": "m",
            "stream": True,
            "messages": [{"role": "user", "content": "openai too /cursor-agent"}],
        }
        with httpx.stream(
            "POST", g.url + "/v1/chat/completions", json=oa, headers=headers, timeout=timeout
        ) as r:
            lines = list(r.iter_lines())
        assert ": keep-alive" in lines and lines[-1] in ("data: [DONE]", "")
        text = "".join(
            (json.loads(x[6:])["choices"][0]["delta"].get("content") or "")
            for x in lines
            if x.startswith("data: {") and json.loads(x[6:])["choices"]
        )
        assert text == DONE


def test_a_client_that_leaves_stops_the_delegate(
    setup: tuple[dict[str, str], Path, Path], tmp_path: Path
) -> None:
    env, ws, log = setup
    env = {**env, "FAKE_AGENT_MODE": "hang"}
    headers = {"x-glider-workspace": str(ws), "anthropic-version": "2023-06-01", "x-api-key": "k"}
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env) as g:
        with httpx.stream(
            "POST", g.url + "/v1/messages", json=_body("hang on /agy", True), headers=headers, timeout=30
        ) as r:
            # Keep the line iterator: a dropped one is closed at once, and with it the response (the
            # client would leave right after the head, racing the agent's start).
            lines = r.iter_lines()
            assert next(lines) == "event: message_start"
            end = time.monotonic() + 30
            while not runs(log) and time.monotonic() < end:
                time.sleep(0.05)
            assert runs(log), "the fake agent did not start within 30 s"
            # The client is still here: the run goes on (the agent hangs) until it leaves.
            time.sleep(0.5)
            assert not g.wait_for("DelegateRun", 1, timeout=0)
        # The client is gone: the run is stopped (its process group), and the outcome says why.
        pid = int(runs(log)[0]["pid"])
        done = g.wait_for("DelegateRun", 1, timeout=15)
        assert done and done[0]["ok"] is False and "went away" in done[0]["summary"]
        assert done[0]["duration_s"] < 30
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the fake agent {pid} is still running")


def test_the_vendors_own_reason_reaches_the_user(
    setup: tuple[dict[str, str], Path, Path], tmp_path: Path
) -> None:
    env, ws, _ = setup
    env = {**env, "FAKE_AGENT_MODE": "logged-out"}
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env) as g:
        client = anthropic.Anthropic(
            base_url=g.url, api_key="k", max_retries=0, default_headers={"x-glider-workspace": str(ws)}
        )
        msg = client.messages.create(
            model="m", max_tokens=32, messages=[{"role": "user", "content": "fix it /claude"}]
        )
        text = msg.content[0].text  # type: ignore[union-attr]
        assert text.startswith("[claude failed]") and "Not logged in · Please run /login" in text
