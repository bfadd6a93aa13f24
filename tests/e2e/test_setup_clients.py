"""`glider setup` against the real CLIs: after it, each client reaches Glider with nothing else set.

Claude Code: `claude -p "/local say hi"` (a leading slash word, which Claude Code would refuse as an
unknown command without the installed slash commands) is routed local, and the installed statusline
command prints that route for Claude Code's session id. Gemini CLI finds Glider through the
`~/.gemini/.env` setup wrote; Codex through the `model_provider` block. Each runs with HOME a tmp dir,
a live Glider (the real event writer) and the fake upstream behind it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import claude_code
import gemini_cli
from fake_upstream import FakeUpstream
from glider_cli.cli import app

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.fake_serves(models=["claude-sonnet-4-5", "gpt-5.5", "gpt-5"], ollama_models=["qwen-local"]),
]


@pytest.fixture(scope="module")
def glider(fake: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from server.glider_harness import GliderServer, backends_yaml

    tmp = tmp_path_factory.mktemp("glider-setup")
    with GliderServer(
        backends_yaml(fake.url), tmp, record=False, environ={"GLIDER_HOME": str(tmp / "home")}
    ) as g:
        g.glider_home = tmp / "home"
        yield g


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def setup(home: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home))
    r = CliRunner().invoke(app, ["setup", *args])
    assert r.exit_code == 0, r.output


def continuity_turns(glider: Any, work: Path) -> list[Any]:
    """The workspace's continuity `turn` entries, once the server's writer has them (it writes off the
    request path)."""
    from glider_cli import paths
    from glider_cli.delegate import continuity

    where = paths.resolve({"GLIDER_HOME": str(glider.glider_home)})
    deadline = time.monotonic() + 20
    while True:
        found = [e for e in continuity.read(where, work.resolve()).entries if e.kind == "turn"]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def workdir(tmp: Path) -> Path:
    work = tmp / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    return work


def test_claude_code_slash_word_and_statusline(
    claude_bin: str, glider: Any, fake: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    setup(home, "claude-code", "--statusline", "--url", glider.url, monkeypatch=monkeypatch)
    env = claude_code.env(glider.url, home)
    del env["ANTHROPIC_BASE_URL"]  # settings.json says where Glider is
    work = workdir(tmp_path)
    proc = subprocess.run(
        [claude_bin, "-p", "/local say hi", "--output-format", "json"],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["is_error"] is False and result["result"] == "hello from fake ollama qwen-local"
    sent = [r for r in fake.requests if r.path == "/api/chat"]
    assert len(sent) == 1 and "<command-name>/local</command-name>" in sent[0].raw.decode()
    # What was typed, not Claude Code's <command-message>/<command-name>/<command-args> wrapper and the
    # command file's expansion (issue 24 §11): in the episode and in the workspace's continuity record.
    episodes = httpx.get(glider.url + "/api/context/episodes", timeout=30).json()
    asked = [e["asked"] for e in episodes]
    assert "/local say hi" in asked and not any("<command-" in a for a in asked), asked
    assert [e.text for e in continuity_turns(glider, work)] == ["/local say hi"]
    command = json.loads((home / ".claude" / "settings.json").read_text())["statusLine"]["command"]
    shown = subprocess.run(
        command,
        shell=True,
        input=json.dumps({"session_id": result["session_id"]}),
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "HOME": str(home)},
    )
    assert shown.stdout.strip() == "glider local · explicit_local · qwen-local", shown.stderr


def test_gemini_cli_finds_glider_through_its_env_file(
    glider: Any, fake: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gemini, why = gemini_cli.find_or_install()
    if gemini is None:
        pytest.skip(why)
    home = gemini_cli.home(tmp_path / "home")
    setup(home, "gemini", "--url", glider.url, monkeypatch=monkeypatch)
    env = gemini_cli.env(glider.url, home)
    del env["GOOGLE_GEMINI_BASE_URL"]
    proc = subprocess.run(
        [gemini, "-p", "say hi /local", "--output-format", "json"],
        cwd=workdir(tmp_path),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads(proc.stdout)["response"] == "hello from fake ollama qwen-local"
    assert [r.path for r in fake.requests] == ["/api/chat", "/api/chat"]


def test_gemini_cli_runs_headless_after_setup_alone(
    glider: Any, fake: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No settings.json of the test's own: setup selects API-key auth and trusts the folder (issue 24 §9)."""
    gemini, why = gemini_cli.find_or_install()
    if gemini is None:
        pytest.skip(why)
    home = tmp_path / "home"
    home.mkdir()
    work = workdir(tmp_path)
    monkeypatch.chdir(work)
    setup(home, "gemini", "--project", "--url", glider.url, monkeypatch=monkeypatch)
    env = gemini_cli.env(glider.url, home)
    del env["GOOGLE_GEMINI_BASE_URL"]
    proc = subprocess.run(
        [gemini, "-p", "say hi /local", "--output-format", "json"],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads(proc.stdout)["response"] == "hello from fake ollama qwen-local", proc.stdout[-2000:]


def test_codex_uses_the_glider_provider(
    glider: Any, fake: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import npm_cli

    codex, why = npm_cli.find_or_install("codex", "@openai/codex", "Codex")
    if codex is None:
        pytest.skip(why)
    home = tmp_path / "home"
    home.mkdir()
    setup(home, "codex", "--url", glider.url, monkeypatch=monkeypatch)
    config = home / ".codex" / "config.toml"
    config.write_text(config.read_text() + "\n[analytics]\nenabled = false\n[feedback]\nenabled = false\n")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "OPENAI_API_KEY": "sk-test",
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        [codex, "exec", "--skip-git-repo-check", "say hi /local"],
        cwd=workdir(tmp_path),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "hello from fake ollama" in proc.stdout
    assert [r.path for r in fake.requests] == ["/api/chat"]
