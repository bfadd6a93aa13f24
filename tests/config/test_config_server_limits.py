"""`server.header_timeout`, `server.body_timeout`, `server.max_connections_per_client`,
`server.max_connections` and `server.cap_loopback_clients`: their defaults, and a bad value refused
by the loader and `glider lint` with the file, the line and the key named."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from glider_cli.cli import app
from glider_cli.config.load import load_config
from glider_cli.errors import ConfigError

BAD = [
    ("header_timeout: 0", "server.header_timeout", "above 0, got 0"),
    ("header_timeout: -2", "server.header_timeout", "must not be negative"),
    ("header_timeout: .inf", "server.header_timeout", "above 0, got inf"),
    ("body_timeout: 0", "server.body_timeout", "above 0, got 0"),
    ("body_timeout: soon", "server.body_timeout", "must be a number"),
    ("max_connections_per_client: 0", "server.max_connections_per_client", "at least 1, got 0"),
    ("max_connections_per_client: 2.5", "server.max_connections_per_client", "must be an integer"),
    ("max_connections: -1", "server.max_connections", "at least 1, got -1"),
    ("max_connection: 9", "server.max_connection", "did you mean 'max_connections'"),
    ("cap_loopback_clients: 3", "server.cap_loopback_clients", "true or false"),
]


def _write(tmp_path: Path, server_line: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(f"extends: default\nserver:\n  port: 8787\n  {server_line}\n", encoding="utf-8")
    return path


def test_defaults_and_given_values(tmp_path: Path) -> None:
    server = load_config(profile="default").settings.server
    assert (server.header_timeout, server.body_timeout) == (10.0, 30.0)
    assert (server.max_connections_per_client, server.max_connections) == (64, 512)
    assert server.cap_loopback_clients is False
    path = tmp_path / "c.yaml"
    path.write_text(
        "server: {header_timeout: 2.5, body_timeout: 60, max_connections_per_client: 8,"
        " max_connections: 100, cap_loopback_clients: true}\n"
    )
    server = load_config(config=str(path)).settings.server
    assert (server.header_timeout, server.body_timeout) == (2.5, 60.0)
    assert (server.max_connections_per_client, server.max_connections) == (8, 100)
    assert server.cap_loopback_clients is True


@pytest.mark.parametrize(("line", "key", "fragment"), BAD)
def test_a_bad_value_is_refused_naming_file_line_and_key(
    tmp_path: Path, line: str, key: str, fragment: str
) -> None:
    path = _write(tmp_path, line)
    with pytest.raises(ConfigError) as exc:
        load_config(config=str(path))
    message = str(exc.value)
    assert f"{path}:4" in message and f"'{key}'" in message and fragment in message


@pytest.mark.parametrize(("line", "key", "fragment"), BAD[::3])
def test_glider_lint_fails_on_a_bad_value(tmp_path: Path, line: str, key: str, fragment: str) -> None:
    path = _write(tmp_path, line)
    result = CliRunner().invoke(app, ["lint", "--config", str(path)])
    assert result.exit_code == 1
    assert key in result.output and fragment in result.output and str(path) in result.output
