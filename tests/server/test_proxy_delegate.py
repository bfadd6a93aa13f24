"""In-message delegation through a live Glider: `/cursor-agent` runs the (fake) agent CLI and its answer
comes back as an ordinary assistant reply in the client's protocol; every user turn is recorded."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import anthropic
import openai
import pytest
from glider_harness import GliderServer, backends_yaml

from fixtures.fake_agents.install import install_fake_agents, path_with
from glider_cli.delegate import continuity
from glider_cli.paths import resolve

# The reply ends with what the run changed in the workspace (delegate.changes): nothing here.
DONE = "delegate says done\n\nChanged in the workspace (git): no changes"

pytestmark = pytest.mark.live


def test_flagged_turn_is_answered_by_the_delegate_and_recorded(tmp_path: Path) -> None:
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
    headers = {"x-glider-workspace": str(ws)}
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env) as g:
        client = anthropic.Anthropic(base_url=g.url, api_key="k", max_retries=0, default_headers=headers)
        raw = client.messages.with_raw_response.create(
            model="m", max_tokens=32, messages=[{"role": "user", "content": "fix the parser /cursor-agent"}]
        )
        msg = raw.parse()
        assert msg.content[0].type == "text" and msg.content[0].text == DONE
        assert raw.headers["x-glider-route"] == "delegate; rule=delegate; backend=cursor-agent"
        with client.messages.stream(
            model="m", max_tokens=32, messages=[{"role": "user", "content": "and the lexer /cursor-agent"}]
        ) as stream:
            assert "".join(stream.text_stream) == DONE
        oa = openai.OpenAI(base_url=g.url + "/v1", api_key="k", max_retries=0, default_headers=headers)
        out = oa.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "tests too /cursor-agent"}]
        )
        assert out.choices[0].message.content == DONE
        assert g.wait_for("DelegateRun", 3)
        # Each run is recorded under the turn it answered (the turn RouteDecided names).
        runs = [turn for t, _, turn in g.events if t == "DelegateRun"]
        decided = [turn for t, d, turn in g.events if t == "RouteDecided" and d["delegate"]]
        assert all(runs) and sorted(runs) == sorted(decided)
    # every user turn was recorded in the workspace's continuity record, with the delegate outcomes
    record = continuity.read(resolve({"GLIDER_HOME": env["GLIDER_HOME"]}), ws)
    deadline = time.monotonic() + 10
    while len([e for e in record.entries if e.kind == "turn"]) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
        record = continuity.read(resolve({"GLIDER_HOME": env["GLIDER_HOME"]}), ws)
    texts = [e.text for e in record.entries]
    assert any("fix the parser" in t for t in texts)
    assert len([e for e in record.entries if e.kind == "turn"]) == 3


def test_flag_without_a_workspace_says_so(tmp_path: Path) -> None:
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path) as g:
        client = anthropic.Anthropic(base_url=g.url, api_key="k", max_retries=0)
        msg = client.messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": "go /agy"}]
        )
        assert msg.content[0].type == "text" and "needs a workspace" in msg.content[0].text
