"""What a delegate changed reaches every place it is shown: the reply in the front CLI, the dashboard
(the overview's episodes, the continuity record on the Context page, in a real Chromium) and
`glider context turn` / `egress` — a live Glider running a fake `claude` that edits a git workspace."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from glider_harness import GliderServer, backends_yaml
from typer.testing import CliRunner
from ui_tab import Tab

from fixtures.fake_agents.install import install_fake_agents, path_with
from glider_cli.cli import app

pytestmark = [pytest.mark.live, pytest.mark.slow]

HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def test_a_delegates_diff_in_the_reply_the_dashboard_and_the_cli(tmp_path: Path, tab: Tab) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "parser.go").write_text("package parser\n")
    home = tmp_path / "home"
    edits = {"parser.go": "package parser\n\nfunc Parse() {}\n"}
    env = {
        **os.environ,
        "PATH": path_with(install_fake_agents(tmp_path / "fake-bin")),
        "FAKE_AGENT_LOG": str(tmp_path / "fake-log"),
        "FAKE_AGENT_MODE": "edit",
        "FAKE_AGENT_EDITS": json.dumps(edits),
        "FAKE_AGENT_REPLY": "added Parse",
        "GLIDER_HOME": str(home),
    }
    body = {"model": "m", "max_tokens": 32, "messages": [{"role": "user", "content": "add Parse /claude"}]}
    with GliderServer(backends_yaml("http://127.0.0.1:9"), tmp_path, environ=env, record=False) as g:
        r = httpx.post(
            g.url + "/v1/messages", json=body, headers={**HEADERS, "x-glider-workspace": str(ws)}, timeout=60
        )
        text = r.json()["content"][0]["text"]
        assert text.startswith("added Parse\n\nChanged in the workspace (git): 1 file, +2 −0")
        assert "+func Parse() {}" in text
        tab.page.goto(g.url + "/ui/")
        tab.page.wait_for_selector("#episodes td:has-text('changed 1 file +2 −0')")
        tab.page.goto(g.url + "/ui/context")
        tab.page.fill("#workspace", str(ws))
        tab.page.click("#show-record")
        outcome = tab.page.locator("#continuity-result pre.delegate-outcome")
        outcome.wait_for()
        assert "+func Parse() {}" in outcome.inner_text()
        tab.shot("context-delegate-diff")
        tab.page.goto("about:blank")
    assert tab.errors == []
    events = [
        json.loads(x) for f in (home / "context").glob("events-*.jsonl") for x in f.read_text().splitlines()
    ]
    (run,) = [e for e in events if e["type"] == "DelegateRun"]
    cli_env = {"GLIDER_HOME": str(home), "COLUMNS": "250"}
    turn = CliRunner().invoke(app, ["context", "turn", run["turn_id"]], env=cli_env).stdout
    assert (
        "changed 1 file +2 −0" in turn and "modified parser.go  +2 −0" in turn and "+func Parse() {}" in turn
    )
    egress = CliRunner().invoke(app, ["context", "egress"], env=cli_env).stdout
    assert "changed 1 file +2 −0" in egress
