"""The `cursor:` section: defaults, given values, and bad values refused naming file, line and key;
`glider serve --cursor-port` starts the proxy (banner) without any `cursor:` section."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from glider_cli.config.cursor import DEFAULT_HOSTS
from glider_cli.config.load import load_config
from glider_cli.errors import ConfigError

BAD = [
    ("port: 70000", "cursor.port", "TCP port"),
    ("port: fast", "cursor.port", "must be an integer"),
    ("hosts: api2.cursor.sh", "cursor.hosts", "a list of strings"),
    ('resolve: {api2.cursor.sh: "nowhere"}', "cursor.resolve.api2.cursor.sh", "not address:port"),
    ("upstream_ca: x.pem", "cursor.upstream_ca", "did you mean 'upstream_ca_file'"),
    ("max_steps: 0", "cursor.max_steps", "at least 1"),
    ("max_steps: 500", "cursor.max_steps", "at most 200"),
    ("turn_deadline_seconds: 1", "cursor.turn_deadline_seconds", "between 5 and 3600"),
    ("turn_deadline_seconds: soon", "cursor.turn_deadline_seconds", "must be a number"),
    ("stream_wait_seconds: 0.5", "cursor.stream_wait_seconds", "between 1 and 3600"),
    ("stream_wait_seconds: later", "cursor.stream_wait_seconds", "must be a number"),
    ("shell_timeout_seconds: 0", "cursor.shell_timeout_seconds", "between 1 and 3600"),
    ("shell_timeout_seconds: long", "cursor.shell_timeout_seconds", "must be a number"),
]


def test_defaults_and_values(tmp_path: Path) -> None:
    cursor = load_config(profile="default").settings.cursor
    assert cursor.port is None and cursor.hosts == DEFAULT_HOSTS
    assert cursor.max_steps == 25 and cursor.turn_deadline_seconds == 600
    assert cursor.stream_wait_seconds == 60 and cursor.shell_timeout_seconds == 120
    path = tmp_path / "c.yaml"
    path.write_text(
        "cursor:\n  port: 8899\n  hosts: [API2.cursor.sh]\n"
        '  resolve: {api2.cursor.sh: "127.0.0.1:8443"}\n  upstream_ca_file: /tmp/ca.pem\n'
        "  max_steps: 8\n  turn_deadline_seconds: 90\n  stream_wait_seconds: 2.5\n"
        "  shell_timeout_seconds: 30\n"
    )
    cursor = load_config(config=str(path)).settings.cursor
    assert cursor.port == 8899 and cursor.hosts == ("api2.cursor.sh",)
    assert cursor.resolve == {"api2.cursor.sh": ("127.0.0.1", 8443)}
    assert cursor.upstream_ca_file == "/tmp/ca.pem"
    assert cursor.max_steps == 8 and cursor.turn_deadline_seconds == 90
    assert cursor.stream_wait_seconds == 2.5 and cursor.shell_timeout_seconds == 30


@pytest.mark.parametrize(("line", "key", "fragment"), BAD)
def test_bad_values_name_file_line_and_key(tmp_path: Path, line: str, key: str, fragment: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"extends: default\ncursor:\n  port: 8899\n  {line}\n")
    if line.startswith("port:"):
        path.write_text(f"extends: default\ncursor:\n  hosts: [a.b]\n  {line}\n")
    with pytest.raises(ConfigError) as exc:
        load_config(config=str(path))
    message = str(exc.value)
    assert f"{path}:4" in message and f"'{key}'" in message and fragment in message


@pytest.mark.live
def test_serve_cursor_port_flag_starts_the_proxy(tmp_path: Path) -> None:
    env = {**os.environ, "GLIDER_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "glider_cli",
            "serve",
            "--port",
            "0",
            "--cursor-port",
            "0",
            "--profile",
            "default",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        end = time.monotonic() + 60
        line = ""
        while time.monotonic() < end:
            line = proc.stderr.readline()
            if "Cursor proxy" in line or not line:
                break
        assert "Cursor proxy: HTTPS_PROXY=http://127.0.0.1:" in line
        assert str(tmp_path / "home" / "cursor" / "ca.pem") in line
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.mark.live
def test_a_cursor_change_needs_a_restart(tmp_path: Path) -> None:
    import httpx

    sys.path.insert(0, str(Path(__file__).parent.parent / "server"))
    from glider_harness import GliderServer

    server = GliderServer("extends: default\ncursor: {port: 0}\n", tmp_path, reload_interval=None)
    with server:
        server.path.write_text("extends: default\ncursor: {port: 0, hosts: [api2.cursor.sh]}\n")
        done = httpx.post(server.url + "/api/router/reload").json()
        assert done["restart_needed"] == ["cursor"]
        # What runs is what started: the proxy still decrypts the hosts it was started with.
        assert "*.api5.cursor.sh" in httpx.get(server.url + "/healthz").json()["cursor"]["hosts"]
