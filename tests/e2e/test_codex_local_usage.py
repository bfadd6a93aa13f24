"""Real Codex through `glider serve` to the real llama.cpp server (SmolLM2-135M): llama-cpp-python sends no
usage in a stream, so the Responses stream Glider translates reports Glider's own estimate, marked as one,
and Codex does not print `tokens used 0` (issue 24 §11).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fake_upstream import FakeUpstream
from glider_cli.cli import app

# What Codex says when the reply stopped at the output limit.
CUT = "Incomplete response returned, reason: max_output_tokens"

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.fake_serves(models=["gpt-5"])]


def _config(local_url: str, cloud_url: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{local_url}/v1', model: smollm2,"
        " context_window: 8192, max_tokens: 400, tools: false}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{cloud_url}'}}\n"
        "routing:\n  local_backend: llama\n"
    )


def test_codex_reports_the_estimate_not_zero_tokens(
    llama_relay: Any, fake: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import npm_cli
    from server.glider_harness import GliderServer

    codex, why = npm_cli.find_or_install("codex", "@openai/codex", "Codex")
    if codex is None:
        pytest.skip(why)
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    cfg = _config(llama_relay.url, fake.url)
    with GliderServer(cfg, tmp_path, environ={"GLIDER_HOME": str(tmp_path / "glider-home")}) as g:
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.delenv("CODEX_HOME", raising=False)
        assert CliRunner().invoke(app, ["setup", "codex", "--url", g.url]).exit_code == 0
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
        # The real model samples its reply: now and then it talks until the backend's `max_tokens` and
        # Codex, told the reply was cut (`incomplete`, `max_output_tokens`), fails that turn, rightly,
        # with no usage to check. Such a run says nothing about usage: the test asks again, up to
        # three times, and any other failure fails it at once.
        for _ in range(3):
            proc = subprocess.run(
                [codex, "exec", "--skip-git-repo-check", "--json", "say hi /local"],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if proc.returncode == 0 or CUT not in proc.stdout:
                break
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    chats = [r for r in llama_relay.requests if r.path == "/v1/chat/completions"]
    assert chats and all(r.body.get("stream") for r in chats), "the real model was asked, streaming"
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    done = [e for e in events if e.get("type") == "turn.completed"]
    assert done, proc.stdout[-3000:]
    usage = done[-1]["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0, usage
    assert not re.search(r"tokens used\s*\n?\s*0\b", proc.stderr)
