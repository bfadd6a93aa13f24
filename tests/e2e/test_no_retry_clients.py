"""With no cloud reachable (its host name does not resolve) and the local server gone, Glider's own error
tells the client not to retry: the real Claude Code CLI gives up in seconds (it retried for ~177 s on a
plain 502), and the Anthropic and OpenAI SDKs, which retry a 502 twice by default, send it once."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import anthropic
import openai
import pytest

import claude_code
from fake_upstream import closed_port_url
from server.glider_harness import GliderServer

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _config() -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{closed_port_url()}', model: qwen-local}}\n"
        "  origin: {type: origin, side: cloud, base_url: 'http://no-such-host.invalid'}\n"
    )


@pytest.mark.claude_code
def test_claude_code_gives_up_at_once_when_no_backend_can_be_reached(claude_bin: str, tmp_path: Path) -> None:
    with GliderServer(_config(), tmp_path) as g:
        home, work = tmp_path / "cc-home", tmp_path / "work"
        home.mkdir()
        work.mkdir()
        start = time.monotonic()
        proc = subprocess.run(
            [claude_bin, "-p", "explain this repository", "--output-format", "json"],
            cwd=work,
            env=claude_code.env(g.url, home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
        )
        took = time.monotonic() - start
        asked = len([t for t in g.types() if t == "RouteDecided"])
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 or json.loads(proc.stdout).get("is_error") is True, out[-2000:]
    assert "Glider (the router, not the model provider)" in out, out[-2000:]
    assert "host name does not resolve" in out, out[-2000:]
    # Claude Code retries a 5xx up to 10 times with backoff (~3 minutes); told not to, it stops.
    assert took < 60, (took, asked)
    assert asked <= 4, asked


def test_the_sdks_do_not_retry_glider_errors_a_retry_cannot_fix(tmp_path: Path) -> None:
    with GliderServer(_config(), tmp_path) as g:
        client = anthropic.Anthropic(base_url=g.url, api_key="sk-test", max_retries=3)
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(
                model="claude-x", max_tokens=8, messages=[{"role": "user", "content": "/cloud hi"}]
            )
        assert caught.value.status_code == 502 and "not worth retrying" in str(caught.value)
        oai = openai.OpenAI(base_url=g.url + "/v1", api_key="sk-test", max_retries=3)
        with pytest.raises(openai.APIStatusError) as caught_oai:
            oai.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "/cloud hi"}])
        assert caught_oai.value.status_code == 502
        decided = [t for t in g.types() if t == "RouteDecided"]
    assert len(decided) == 2, decided  # one request each: no retries


def test_gemini_cli_gives_up_at_once_on_a_glider_error_a_retry_cannot_fix(tmp_path: Path) -> None:
    import gemini_cli

    gemini, why = gemini_cli.find_or_install()
    if gemini is None:
        pytest.skip(why)
    with GliderServer(_config(), tmp_path) as g:
        home, work = gemini_cli.home(tmp_path / "g-home"), tmp_path / "work"
        work.mkdir()
        start = time.monotonic()
        proc = subprocess.run(
            [gemini, "-p", "say hi /cloud", "--output-format", "json"],
            cwd=work,
            env=gemini_cli.env(g.url, home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
        )
        took = time.monotonic() - start
        asked = len([t for t in g.types() if t == "RouteDecided"])
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert "Glider (the router, not the model provider)" in out and "does not resolve" in out, out[-2000:]
    # Gemini CLI retries a 5xx with backoff; Glider's 400 ends it at the first answer of each request.
    assert took < 60 and asked <= 3, (took, asked)


def test_codex_gives_up_at_once_on_a_glider_error_a_retry_cannot_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import npm_cli
    from e2e.test_setup_clients import setup, workdir

    codex, why = npm_cli.find_or_install("codex", "@openai/codex", "Codex")
    if codex is None:
        pytest.skip(why)
    with GliderServer(_config(), tmp_path) as g:
        home = tmp_path / "home"
        home.mkdir()
        setup(home, "codex", "--url", g.url, monkeypatch=monkeypatch)
        config = home / ".codex" / "config.toml"
        config.write_text(
            config.read_text() + "\n[analytics]\nenabled = false\n[feedback]\nenabled = false\n"
        )
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "OPENAI_API_KEY": "sk-test",
            "NO_COLOR": "1",
        }
        start = time.monotonic()
        proc = subprocess.run(
            [codex, "exec", "--skip-git-repo-check", "say hi /cloud"],
            cwd=workdir(tmp_path),
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
        )
        took = time.monotonic() - start
        asked = len([t for t in g.types() if t == "RouteDecided"])
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert "Glider (the router, not the model provider)" in out, out[-2000:]
    assert took < 20 and asked <= 2, (took, asked)
