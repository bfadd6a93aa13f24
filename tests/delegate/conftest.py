"""Fixtures for the delegate tests: fake vendor CLIs on PATH, and a git workspace."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixtures.fake_agents.install import install_fake_agents, path_with


@dataclass
class FakeAgents:
    bin_dir: Path
    log_dir: Path
    environ: dict[str, str]

    def mode(self, mode: str, **extra: str) -> dict[str, str]:
        env = dict(self.environ, FAKE_AGENT_MODE=mode)
        env.update(extra)
        return env


@pytest.fixture
def fake_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAgents]:
    bin_dir = install_fake_agents(tmp_path / "fake-bin")
    log_dir = tmp_path / "fake-log"
    monkeypatch.setenv("PATH", path_with(bin_dir))
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log_dir))
    yield FakeAgents(bin_dir, log_dir, dict(os.environ))


@pytest.fixture
def git_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", "init", "-q", str(ws)], check=True, env=env)
    (ws / "main.go").write_text("package main\n", encoding="utf-8")
    (ws / "AGENTS.md").write_text(
        "# Project rules\nUSER-AGENTS-MARKER: run go vet before finishing.\n", encoding="utf-8"
    )
    subprocess.run(["git", "-C", str(ws), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(ws), "commit", "-q", "-m", "init"], check=True, env=env)
    (ws / "notes.txt").write_text("dirty before the run\n", encoding="utf-8")
    return ws
