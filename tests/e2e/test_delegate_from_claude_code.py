"""The spec's continuity scenario with the real Claude Code as the front CLI.

One Claude Code session in one workspace, three turns through a live Glider: turn 1 carries no flag (a
local answer), turn 2 sends `/cursor-agent`, turn 3 sends `/agy`. The delegates are the fake vendor CLIs
(tests/fixtures/fake_agents); each records the AGENTS.md it was given. Turn 2's delegate must see turn 1
(recorded though it had no flag) and turn 3's must see cursor-agent's outcome, recorded under the identity
of the front CLI; Claude Code prints each delegate's reply as the assistant's answer.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import claude_code
from fake_upstream import FakeUpstream
from fixtures.fake_agents.install import install_fake_agents, path_with, runs
from glider_cli.delegate import continuity
from glider_cli.paths import resolve

pytestmark = [pytest.mark.live, pytest.mark.claude_code, pytest.mark.slow]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Any, Path, Path, dict[str, str]]]:
    from server.glider_harness import GliderServer, backends_yaml

    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    bin_dir = install_fake_agents(tmp_path / "fake-bin")
    log = tmp_path / "agent-log"
    env = {
        **os.environ,
        "PATH": path_with(bin_dir),
        "FAKE_AGENT_LOG": str(log),
        "GLIDER_HOME": str(tmp_path / "glider-home"),
    }
    with (
        FakeUpstream(models=[claude_code.MODEL], ollama_models=["qwen-local"]) as fake,
        GliderServer(backends_yaml(fake.url), tmp_path, environ=env) as g,
    ):
        yield g, work, log, env


def _ask(claude: str, url: str, home: Path, work: Path, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [claude, "-p", *args, "--output-format", "json"],
        cwd=work,
        env=claude_code.env(url, home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    assert out.get("is_error") is False, out
    return out


def test_two_delegates_share_one_continuity_record(
    claude_bin: str, setup: tuple[Any, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    glider, work, log, env = setup
    home = tmp_path / "claude-home"
    home.mkdir()

    first = _ask(claude_bin, glider.url, home, work, "the PARSER-TEST fails on empty input /local")
    assert "hello from fake ollama" in first["result"]

    second = _ask(
        claude_bin, glider.url, home, work, "--resume", first["session_id"], "please fix it /cursor-agent"
    )
    # Each reply ends with what the run changed in the workspace (delegate.changes): nothing here.
    assert second["result"] == "fake cursor-agent did it\n\nChanged in the workspace (git): no changes"

    third = _ask(claude_bin, glider.url, home, work, "--resume", first["session_id"], "review that fix /agy")
    assert third["result"] == "fake agy did it\n\nChanged in the workspace (git): no changes"

    cursor, agy = runs(log)
    assert cursor["vendor"] == "cursor-agent" and agy["vendor"] == "agy"
    # turn 1 had no flag and still reached the first delegate, under the calling-session heading
    assert "Earlier in the calling session" in str(cursor["context"])
    assert "PARSER-TEST" in str(cursor["context"])
    # the second delegate knows the first one ran, and what it said
    assert "fake cursor-agent did it" in str(agy["context"])
    # each ran in a private directory that is gone now; the workspace is untouched
    assert cursor["run_dir_mode"] == 0o700 and not Path(str(cursor["run_dir"])).exists()
    status = subprocess.run(
        ["git", "-C", str(work), "status", "--porcelain"], capture_output=True, text=True, check=True
    )
    assert status.stdout == ""

    record = continuity.read(resolve({"GLIDER_HOME": env["GLIDER_HOME"]}), work)
    delegates = [e for e in record.entries if e.kind == "delegate"]
    assert [d.ok for d in delegates] == [True, True]
    assert {d.source_cli for d in delegates} == {"claude-code"}


def test_a_claude_delegates_own_requests_are_the_runs_not_the_users(claude_bin: str, tmp_path: Path) -> None:
    """The delegate is the real Claude Code, set up (as `glider setup claude-code` does) to go through
    Glider: its requests come back and must be marked as the delegate run's, not recorded as the user's
    turns (issue 24 §11)."""
    from server.glider_harness import GliderServer, backends_yaml

    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    delegate_home = tmp_path / "delegate-home"
    (delegate_home / ".claude").mkdir(parents=True)
    env = {
        **claude_code.env("http://127.0.0.1:9", delegate_home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GLIDER_HOME": str(tmp_path / "glider-home"),
    }
    del env["ANTHROPIC_BASE_URL"]  # the delegate finds Glider through its settings.json
    config = backends_yaml("URL") + f"delegate:\n  claude: {{command: '{claude_bin}', timeout: 200}}\n"
    with FakeUpstream(models=[claude_code.MODEL], ollama_models=["qwen-local"]) as fake:
        config = config.replace("URL", fake.url)
        with GliderServer(config, tmp_path, environ=env, record=False) as glider:
            settings = {"env": {"ANTHROPIC_BASE_URL": glider.url}}
            (delegate_home / ".claude" / "settings.json").write_text(json.dumps(settings))
            home = tmp_path / "claude-home"
            home.mkdir()
            out = _ask(claude_bin, glider.url, home, work, "why does DELEGATE-MARKER fail /claude")
            said = f"hello from fake anthropic {claude_code.MODEL}"
            want = f"{said}\n\nChanged in the workspace (git): no changes"
            assert out["result"] == want
            assert any(
                "DELEGATE-MARKER" in json.dumps(q.body) for q in fake.requests if q.path == "/v1/messages"
            ), "the delegate's request came back through Glider to the cloud fake"
            opened = [
                e
                for e in httpx.get(glider.url + "/api/context/recent?limit=500", timeout=30).json()
                if e["type"] == "TurnOpened"
            ]
            episodes = httpx.get(glider.url + "/api/context/episodes", timeout=30).json()
    front = next(e for e in opened if "/claude" in str(e["data"].get("ask")))
    runs_own = [e for e in opened if e["data"].get("delegate_of")]
    assert runs_own and {e["data"]["delegate_of"] for e in runs_own} == {front["turn_id"]}
    asked = {e["turn_id"]: e["asked"] for e in episodes}
    assert asked[front["turn_id"]] == "why does DELEGATE-MARKER fail /claude"
    for e in runs_own:
        assert asked[e["turn_id"]].startswith(f"[delegate run of turn {front['turn_id'][:12]}] "), asked
    # The workspace's record has the user's turn and the delegate's outcome, not the delegate's prompt.
    record = continuity.read(resolve({"GLIDER_HOME": env["GLIDER_HOME"]}), work)
    assert [(e.kind, e.text) for e in record.entries if e.kind == "turn"] == [
        ("turn", "why does DELEGATE-MARKER fail /claude")
    ]
    assert [e.delegate for e in record.entries if e.kind == "delegate"] == ["claude"]
