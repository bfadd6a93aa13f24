"""`glider setup <client> --mcp`: where each client keeps its MCP servers, --dry-run, --undo of only
that, and nothing the user wrote overwritten (HOME, CODEX_HOME, GEMINI_CLI_HOME and GLIDER_HOME in
tmp_path)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from glider_cli.cli import app
from glider_cli.errors import ConfigError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "user"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for var in ("CODEX_HOME", "GEMINI_CLI_HOME", "CURSOR_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    return h


def run(*args: str) -> dict[str, Any]:
    r = CliRunner().invoke(app, ["setup", *args, "--json"])
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def command(glider_home: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "glider_cli", "mcp", "--home", str(glider_home)]}


WHERE = {
    "claude-code": (".claude.json", {"type": "stdio", "env": {}}),
    "gemini": (".gemini/settings.json", {}),
    "cursor": (".cursor/mcp.json", {}),
}


@pytest.mark.parametrize("client", sorted(WHERE))
def test_json_clients_get_mcp_servers_glider_and_undo_takes_only_it_back(
    client: str, home: Path, glider_env: Path
) -> None:
    rel, extra = WHERE[client]
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}))
    out = run(client, "--mcp")
    assert out["client"] == f"{client} --mcp"
    data = json.loads(path.read_text())
    assert data["mcpServers"]["glider"] == {**extra, **command(glider_env)}
    assert data["mcpServers"]["other"] == {"command": "x"} and data["theme"] == "dark"
    run(client, "--mcp", "--undo")
    assert json.loads(path.read_text()) == {"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}


def test_codex_gets_an_mcp_servers_table_and_keeps_the_rest(home: Path, glider_env: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
    run("codex", "--mcp")
    data = tomllib.loads(path.read_text())
    assert data["mcp_servers"]["glider"] == command(glider_env)
    assert data["mcp_servers"]["docs"] == {"command": "docs-mcp"} and data["model"] == "gpt-5"
    assert "glider setup codex --mcp --undo" in path.read_text()
    run("codex", "--mcp", "--undo")
    assert path.read_text() == 'model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'


def test_mcp_and_the_other_keys_are_undone_apart(home: Path) -> None:
    run("claude-code")
    run("claude-code", "--mcp")
    run("claude-code", "--mcp", "--undo")
    assert not (home / ".claude.json").exists()  # setup made it for the server alone
    assert (home / ".claude" / "settings.json").exists()  # the base URL stays until `--undo`
    run("claude-code", "--undo")
    assert not (home / ".claude" / "settings.json").exists()


def test_project_scope_writes_the_projects_file(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, glider_env: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    run("claude-code", "--mcp", "--project")
    run("cursor", "--mcp", "--project")
    run("gemini", "--mcp", "--project")
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["glider"]["args"][-1] == str(
        glider_env
    )
    assert "glider" in json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert "glider" in json.loads((project / ".gemini" / "settings.json").read_text())["mcpServers"]
    assert not (home / ".claude.json").exists()


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini", "cursor"])
def test_dry_run_writes_nothing(client: str, home: Path, glider_env: Path) -> None:
    before = snapshot(home)
    out = run(client, "--mcp", "--dry-run")
    assert out["applied"] is False and out["changes"]
    assert snapshot(home) == before and not (glider_env / "setup.json").exists()


def test_a_glider_server_the_user_registered_is_left_alone(home: Path) -> None:
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"glider": {"command": "mine"}}}))
    out = run("cursor", "--mcp")
    assert not out["changes"] and "not overwritten" in out["skipped"][0]["why"]
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('[mcp_servers.glider]\ncommand = "mine"\n')
    out = run("codex", "--mcp")
    assert not out["changes"] and "already there" in out["skipped"][0]["why"]


def test_cursor_agent_is_pointed_at_cursors_file(home: Path) -> None:
    r = CliRunner().invoke(app, ["setup", "cursor-agent", "--mcp"])
    assert isinstance(r.exception, ConfigError)  # `main` prints it as `Error: …`, exit 1
    assert "glider setup cursor --mcp" in r.exception.message
    assert not (home / ".cursor").exists()
