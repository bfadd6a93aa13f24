"""Tables on a pipe or in a file are printed whole, not cut to Rich's 80-column default, and stderr points
at `--json` (issue 24 §11). `glider doctor` runs as a real subprocess with stdout a pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fake_upstream import closed_port_url


def test_a_table_on_a_pipe_is_printed_whole(tmp_path: Path) -> None:
    url = closed_port_url() + "/v1"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "extends: default\nbackends:\n"
        f"  llama: {{type: openai, side: local, base_url: '{url}', model: SmolLM2-135M-Instruct-Q4_1}}\n"
        "routing:\n  local_backend: llama\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_TERMINAL")}
    env["GLIDER_HOME"] = str(tmp_path / "home")
    proc = subprocess.run(
        [sys.executable, "-m", "glider_cli", "doctor", "-c", str(cfg)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr  # the backends are down: that is not what this test is about
    assert "…" not in proc.stdout, proc.stdout
    row = next(line for line in proc.stdout.splitlines() if "llama" in line and "openai" in line)
    assert url in row and "SmolLM2-135M-Instruct-Q4_1" in row and "connection refused" in row
    assert max(len(line) for line in proc.stdout.splitlines()) > 80
    assert "--json" in proc.stderr
