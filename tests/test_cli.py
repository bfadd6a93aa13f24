from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from glider_cli.cli import app

runner = CliRunner()


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "paths" in result.output


def test_paths_honours_glider_home(glider_env: Path) -> None:
    result = runner.invoke(app, ["paths", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["home"] == str(glider_env)
    assert data["context"] == str(glider_env / "context")


def test_home_option_overrides(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--home", str(tmp_path / "h"), "paths", "--json"])
    assert result.exit_code == 0
    assert json.loads(result.output)["home"] == str(tmp_path / "h")


def test_unknown_command_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "no-such-command"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "No such command" in proc.stderr
    assert "Traceback" not in proc.stderr
