"""The real agent CLIs see `glider mcp` once `glider setup <client> --mcp` registered it: Claude Code's and
Gemini CLI's `mcp list` start it and report it connected; Codex's lists it enabled with Glider's command
(its `mcp list` starts no server). Each client runs with HOME a tmp dir, in a recorded workspace."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_store import Recorded

import npm_cli

pytestmark = [pytest.mark.live, pytest.mark.slow]


def client(binary: str, package: str) -> str:
    found, why = npm_cli.find_or_install(binary, package, binary)
    if found is None:
        pytest.skip(why)
    return found


def run(argv: list[str], env: dict[str, str], cwd: Path, *, stderr: bool = True) -> str:
    proc = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + (proc.stderr if stderr else "")


def setup(rec: Recorded, env: dict[str, str], *args: str) -> None:
    run([sys.executable, "-m", "glider_cli", "setup", *args], env, rec.alpha)


def user_env(rec: Recorded, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "user"
    home.mkdir()
    env = {**rec.env, "HOME": str(home)}
    for var in ("CODEX_HOME", "GEMINI_CLI_HOME", "CLAUDE_CONFIG_DIR"):
        env.pop(var, None)
    return env


def test_claude_code_lists_glider_connected(recorded: Recorded, tmp_path: Path) -> None:
    claude = client("claude", "@anthropic-ai/claude-code")
    env = user_env(recorded, tmp_path)
    setup(recorded, env, "claude-code", "--mcp")
    out = run([claude, "mcp", "list"], env, recorded.alpha)
    line = next(x for x in out.splitlines() if x.startswith("glider:"))
    assert "-m glider_cli mcp --home" in line and re.search(r"Connected\s*$", line), out


def test_gemini_cli_lists_glider_connected(recorded: Recorded, tmp_path: Path) -> None:
    gemini = client("gemini", "@google/gemini-cli")
    env = user_env(recorded, tmp_path)
    setup(recorded, env, "gemini", "--project")  # Gemini CLI starts no server in a folder it does not trust
    setup(recorded, env, "gemini", "--mcp")
    out = run([gemini, "mcp", "list"], env, recorded.alpha)
    line = next(x for x in out.splitlines() if "glider:" in x)
    assert "-m glider_cli mcp --home" in line and line.rstrip().endswith("Connected"), out


def test_codex_lists_glider_enabled(recorded: Recorded, tmp_path: Path) -> None:
    codex = client("codex", "@openai/codex")
    env = user_env(recorded, tmp_path)
    setup(recorded, env, "codex", "--mcp")
    servers = json.loads(run([codex, "mcp", "list", "--json"], env, recorded.alpha, stderr=False))
    (glider,) = [s for s in servers if s["name"] == "glider"]
    assert glider["enabled"] is True
    assert glider["transport"]["command"] == sys.executable
    assert glider["transport"]["args"] == ["-m", "glider_cli", "mcp", "--home", str(recorded.home)]
