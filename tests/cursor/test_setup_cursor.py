"""`glider setup cursor` / `cursor-agent`: the IDE's proxy keys, the CLI's environment, the HTTP/1.1
switches only with --http1, --dry-run, never overwriting, --undo (HOME and GLIDER_HOME in tmp_path)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glider_cli.cli import app


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "user"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("GLIDER_HOME", str(tmp_path / "glider-home"))
    monkeypatch.delenv("CURSOR_CONFIG_DIR", raising=False)
    return h


def run(*args: str) -> dict[str, object]:
    r = CliRunner().invoke(app, ["setup", *args, "--json"])
    assert r.exit_code == 0, r.output
    out: dict[str, object] = json.loads(r.stdout)
    return out


@pytest.mark.skipif(sys.platform != "linux", reason="the IDE's settings path asserted is Linux's")
def test_cursor_ide_settings_and_undo(home: Path, tmp_path: Path) -> None:
    settings = home / ".config" / "Cursor" / "User" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"editor.fontSize": 13, "http.proxySupport": "off"}))
    plan = run("cursor", "--cursor-proxy", "http://127.0.0.1:9911")
    data = json.loads(settings.read_text())
    assert data["http.proxy"] == "http://127.0.0.1:9911"
    assert "cursor.general.disableHttp2" not in data  # Glider routes HTTP/2: no switch by default
    assert data["http.proxySupport"] == "off"  # set by the person: not overwritten
    assert [Path(s["path"]).name for s in plan["skipped"]] == ["settings.json"]  # type: ignore[union-attr,index]
    notes = "\n".join(plan["notes"])  # type: ignore[arg-type]
    ca = str(tmp_path / "glider-home" / "cursor" / "ca.pem")
    assert f"NODE_EXTRA_CA_CERTS={ca}" in notes and "update-ca-certificates" in notes
    assert "--cursor-port 9911" in notes
    run("cursor", "--undo")
    assert json.loads(settings.read_text()) == {"editor.fontSize": 13, "http.proxySupport": "off"}
    run("cursor", "--http1")  # the switch, as an option
    assert json.loads(settings.read_text())["cursor.general.disableHttp2"] is True
    run("cursor", "--undo")
    assert json.loads(settings.read_text()) == {"editor.fontSize": 13, "http.proxySupport": "off"}


def test_cursor_agent_config_env_dry_run_and_undo(home: Path, tmp_path: Path) -> None:
    dry = run("cursor-agent", "--dry-run")
    assert dry["applied"] is False and not (home / ".cursor").exists()
    config = home / ".cursor" / "cli-config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"network": {"proxy": "x"}, "permissions": {"allow": []}}))
    plan = run("cursor-agent")
    assert json.loads(config.read_text())["network"] == {"proxy": "x"}  # HTTP/2 is routed: no switch
    assert plan["changes"] == []
    plan = run("cursor-agent", "--http1")
    assert json.loads(config.read_text())["network"] == {"proxy": "x", "useHttp1ForAgent": True}
    notes = "\n".join(plan["notes"])  # type: ignore[arg-type]
    assert "export HTTPS_PROXY=http://127.0.0.1:8789" in notes and "export NODE_USE_ENV_PROXY=1" in notes
    assert f"NODE_EXTRA_CA_CERTS={tmp_path / 'glider-home' / 'cursor' / 'ca.pem'}" in notes
    again = run("cursor-agent", "--http1")
    assert again["changes"] == [] and again["skipped"] == []
    run("cursor-agent", "--undo")
    assert json.loads(config.read_text()) == {"network": {"proxy": "x"}, "permissions": {"allow": []}}


def test_cursor_agent_never_overwrites(home: Path) -> None:
    config = home / ".cursor" / "cli-config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"network": {"useHttp1ForAgent": False}}))
    plan = run("cursor-agent", "--http1")
    assert plan["changes"] == [] and len(plan["skipped"]) == 1  # type: ignore[arg-type]
    assert json.loads(config.read_text()) == {"network": {"useHttp1ForAgent": False}}
