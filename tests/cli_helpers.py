"""Run a glider command in process and read its `--json` output (shared by the CLI tests)."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from glider_cli.cli import app


def invoke_json(*args: str) -> Any:
    """`glider ARGS` through CliRunner: it must exit 0, and its stdout is parsed as JSON."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
