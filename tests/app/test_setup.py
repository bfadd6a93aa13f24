"""`glider setup`: what it writes for each client, what it refuses to touch, and --undo (HOME, CODEX_HOME
and GLIDER_HOME in tmp_path)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glider_cli.app import setup, setup_plan
from glider_cli.cli import app

WORDS = ["local", "fast", "cloud", "heavy", "claude", "cursor-agent", "agy", "allow", "deny"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "user"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h


def run(*args: str) -> dict[str, object]:
    r = CliRunner().invoke(app, ["setup", *args, "--json"])
    assert r.exit_code == 0, r.output
    out: dict[str, object] = json.loads(r.stdout)
    return out


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_claude_code_commands_settings_and_undo(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "env": {"FOO": "1"}}))
    before = snapshot(home)
    run("claude-code", "--statusline", "--url", "http://127.0.0.1:9999")
    for word in WORDS:
        text = (home / ".claude" / "commands" / f"{word}.md").read_text()
        assert text.endswith(f"---\n$ARGUMENTS /{word}\n") and text.startswith("---\ndescription: Glider")
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["env"] == {
        "FOO": "1",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9999",
    }
    assert data["statusLine"]["type"] == "command"
    assert data["statusLine"]["command"].endswith("-m glider_cli.app.statusline --url http://127.0.0.1:9999")
    again = run("claude-code", "--statusline", "--url", "http://127.0.0.1:9999")
    assert again["changes"] == [] and again["skipped"] == []  # idempotent
    undone = run("claude-code", "--undo")
    assert len(undone["changes"]) == len(WORDS) + 2  # type: ignore[arg-type]
    # the settings keep every other key (the file is written back as indented JSON)
    assert json.loads(settings.read_text()) == json.loads(before.pop(".claude/settings.json"))
    assert {k: v for k, v in snapshot(home).items() if k != ".claude/settings.json"} == before
    assert not (home / ".claude" / "commands").exists()


def test_it_never_overwrites_what_it_did_not_write(home: Path) -> None:
    commands = home / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "local.md").write_text("my own /local command\n")
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://corp"}})
    )
    plan = run("claude-code")
    skipped = {Path(s["path"]).name: s["why"] for s in plan["skipped"]}  # type: ignore[union-attr,index]
    assert set(skipped) == {"local.md", "settings.json"}
    assert (commands / "local.md").read_text() == "my own /local command\n"
    assert (
        json.loads((home / ".claude" / "settings.json").read_text())["env"]["ANTHROPIC_BASE_URL"]
        == "https://corp"
    )
    # a command file changed after setup wrote it survives the undo
    (commands / "cloud.md").write_text("edited\n")
    run("claude-code", "--undo")
    assert sorted(p.name for p in commands.iterdir()) == ["cloud.md", "local.md"]


def test_dry_run_writes_nothing(home: Path, tmp_path: Path) -> None:
    plan = run("claude-code", "--dry-run")
    assert plan["applied"] is False and len(plan["changes"]) == len(WORDS) + 1  # type: ignore[arg-type]
    assert list(home.iterdir()) == [] and not (tmp_path / "glider-home" / "setup.json").exists()
    r = CliRunner().invoke(app, ["setup", "codex", "--dry-run"])
    assert r.exit_code == 0 and 'model_provider = "glider"' in r.stdout and not (home / ".codex").exists()


def test_project_commands_go_in_the_projects_claude_dir(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    monkeypatch.chdir(project)
    run("claude-code", "--project")
    assert (project / ".claude" / "commands" / "local.md").exists() and not (home / ".claude").exists()
    assert json.loads((project / ".claude" / "settings.json").read_text())["env"]["ANTHROPIC_BASE_URL"]


def test_codex_provider_block_keeps_the_rest_of_the_file(home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = 'model = "gpt-5"\n\n[analytics]\nenabled = false\n'
    config.write_text(original)
    run("codex")
    data = tomllib.loads(config.read_text())
    assert (
        data["model_provider"] == "glider"
        and data["model"] == "gpt-5"
        and data["analytics"] == {"enabled": False}
    )
    assert data["model_providers"]["glider"] == {
        "name": "Glider",
        "base_url": "http://127.0.0.1:8787/v1",
        "env_key": "OPENAI_API_KEY",
        "wire_api": "responses",
        "env_http_headers": {"x-glider-delegate-of": "GLIDER_DELEGATE_OF"},
    }
    run("codex", "--undo")
    assert config.read_text() == original


def test_codex_leaves_a_provider_it_did_not_choose(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    (codex_home / "config.toml").write_text('model_provider = "azure"\n')
    plan = run("codex")
    assert [Path(s["path"]).name for s in plan["skipped"]] == ["config.toml"]  # type: ignore[union-attr,index]
    data = tomllib.loads((codex_home / "config.toml").read_text())
    assert data["model_provider"] == "azure" and "glider" in data["model_providers"]


def test_gemini_env_file(home: Path) -> None:
    run("gemini", "--url", "http://127.0.0.1:8788")
    env = (home / ".gemini" / ".env").read_text()
    assert "\nGOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8788\n" in env
    run("gemini", "--undo")
    assert not (home / ".gemini").exists()
    (home / ".gemini").mkdir()
    (home / ".gemini" / ".env").write_text("GOOGLE_GEMINI_BASE_URL=https://mine\n")
    plan = run("gemini")
    assert [c["path"] for c in plan["changes"]] == [str(home / ".gemini" / "settings.json")]  # type: ignore[index,union-attr]
    assert (home / ".gemini" / ".env").read_text() == "GOOGLE_GEMINI_BASE_URL=https://mine\n"


def test_gemini_selects_api_key_auth_and_trusts_the_project_folder(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "my.project"  # a dot in the folder: a key of its own, not a dotted path
    work.mkdir()
    monkeypatch.chdir(work)
    gemini = home / ".gemini"
    gemini.mkdir()
    # As setup writes JSON (indent 2), so that undo gives back the same bytes.
    (gemini / "trustedFolders.json").write_text(json.dumps({"/elsewhere": "DO_NOT_TRUST"}, indent=2) + "\n")
    (gemini / "settings.json").write_text(json.dumps({"ui": {"theme": "Dracula"}}, indent=2) + "\n")
    before = snapshot(home)
    dry = run("gemini", "--project", "--dry-run")
    assert snapshot(home) == before and len(dry["changes"]) == 3  # type: ignore[arg-type]
    run("gemini", "--project")
    settings = json.loads((gemini / "settings.json").read_text())
    assert settings == {"ui": {"theme": "Dracula"}, "security": {"auth": {"selectedType": "gemini-api-key"}}}
    trusted = json.loads((gemini / "trustedFolders.json").read_text())
    assert trusted == {"/elsewhere": "DO_NOT_TRUST", str(work.resolve()): "TRUST_FOLDER"}
    run("gemini", "--undo")
    assert snapshot(home) == before


def test_gemini_keeps_another_auth_type_and_a_trust_rule_it_did_not_write(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    gemini = home / ".gemini"
    gemini.mkdir()
    (gemini / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "oauth-personal"}}})
    )
    (gemini / "trustedFolders.json").write_text(json.dumps({str(tmp_path.resolve()): "DO_NOT_TRUST"}))
    before = snapshot(home)
    plan = run("gemini", "--project")
    why = {Path(s["path"]).name: s["why"] for s in plan["skipped"]}  # type: ignore[union-attr,index]
    assert '"oauth-personal"' in why["settings.json"] and '"DO_NOT_TRUST"' in why["trustedFolders.json"]
    assert {k: v for k, v in snapshot(home).items() if not k.endswith(".env")} == before


def test_gemini_without_project_trusts_nothing_and_says_how(home: Path) -> None:
    plan = run("gemini")
    assert not (home / ".gemini" / "trustedFolders.json").exists()
    assert any("glider setup gemini --project" in n for n in plan["notes"])  # type: ignore[union-attr]
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"folderTrust": {"enabled": False}}})
    )
    run("gemini", "--undo")
    plan = run("gemini", "--project")
    assert not (home / ".gemini" / "trustedFolders.json").exists()
    assert not any("--project" in n for n in plan["notes"])  # type: ignore[union-attr]


def test_an_unknown_client_is_an_error(home: Path) -> None:
    r = CliRunner().invoke(app, ["setup", "vscode"])
    assert r.exit_code == 1 or "unknown client" in str(r.exception)
    with pytest.raises(Exception, match="unknown client"):
        setup.plan("vscode", setup_plan.Options(home=home), setup_plan.Manifest(home / "m.json"))


def test_a_dry_run_shows_json_values_for_json_files(home: Path) -> None:
    """Issue 39, point 8d: `--dry-run` printed Python values (`True`, `'override'`) for keys it would
    set in JSON files."""
    r = CliRunner().invoke(app, ["setup", "claude-code", "--dry-run"])
    assert r.exit_code == 0, r.output
    assert 'env.ANTHROPIC_BASE_URL = "http://127.0.0.1:8787"' in r.stdout
    cursor = CliRunner().invoke(app, ["setup", "cursor", "--dry-run", "--http1"], env={"COLUMNS": "300"})
    assert cursor.exit_code == 0, cursor.output
    assert "cursor.general.disableHttp2 = true" in cursor.stdout
    assert 'http.proxySupport = "override"' in cursor.stdout
    assert "True" not in cursor.stdout and "'" not in cursor.stdout


def test_the_cursor_note_is_true_whether_the_proxy_runs_or_not(home: Path) -> None:
    """It told a person whose `glider serve --cursor-port` was running to start it with --cursor-port."""
    notes = "\n".join(run("cursor-agent", "--dry-run")["notes"])  # type: ignore[arg-type]
    assert "Start Glider with" not in notes
    assert (
        "Glider's Cursor proxy at http://127.0.0.1:8789: `glider serve --cursor-port 8789` runs it, if it"
        in notes
    )
