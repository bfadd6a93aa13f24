"""A stopped delegate stops entirely: `glider delegate` given SIGINT, SIGTERM or SIGHUP, or killed, and
`glider serve` whose client leaves. Real processes: glider, the fake agent CLI (mode `tree`: it and a
grandchild that left for a session of its own and ignores SIGTERM write a file every 50 ms)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from fixtures.fake_agents.install import runs
from glider_cli.paths import resolve
from process_tree import all_gone, still_written, tickers
from serve_process import ServeProcess

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _env(fake_agents: Any, ticks: Path) -> dict[str, str]:
    env = fake_agents.mode("tree", FAKE_AGENT_TICKS=str(ticks))
    for marker in ("CLAUDECODE", "CODEX_THREAD_ID", "CODEX_SANDBOX", "GEMINI_CLI"):
        env.pop(marker, None)  # these tests may run inside an agent's shell
    return env


def _run_dirs() -> list[Path]:
    root = resolve().run
    return sorted(root.iterdir()) if root.exists() else []


def _events(kind: str) -> list[dict[str, Any]]:
    return [
        e["data"]
        for f in sorted(resolve().context.glob("events-*.jsonl"))
        for e in map(json.loads, f.read_text().splitlines())
        if e["type"] == kind
    ]


def _start(fake_agents: Any, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    ticks = tmp_path / "ticks.txt"
    cmd = [sys.executable, "-m", "glider_cli", "delegate", "--claude", "--workspace", str(ws), "keep at it"]
    proc = subprocess.Popen(
        cmd, env=_env(fake_agents, ticks), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, ticks


@pytest.mark.parametrize(
    ("sig", "code", "said"),
    [
        (signal.SIGINT, 130, "Ctrl-C (SIGINT)"),
        (signal.SIGTERM, 143, "Glider was told to terminate (SIGTERM)"),
        (signal.SIGHUP, 129, "the terminal was closed (SIGHUP)"),
    ],
)
def test_a_signal_stops_the_whole_delegate_and_says_so(
    fake_agents: Any, tmp_path: Path, sig: signal.Signals, code: int, said: str
) -> None:
    proc, ticks = _start(fake_agents, tmp_path)
    try:
        pids = tickers(ticks, 2)
        (rec,) = runs(fake_agents.log_dir)
        agent = int(rec["pid"])  # type: ignore[call-overload]
        (run_dir,) = [d for d in _run_dirs() if not d.name.startswith("claude-changes")]
        assert oct(run_dir.stat().st_mode & 0o777) == "0o700"
        proc.send_signal(sig)
        time.sleep(0.2)
        proc.send_signal(sig)  # again, while it stops the run: the stop still finishes
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert all_gone(pids) == set()  # the agent and the grandchild that left its process group
    assert not still_written(ticks)
    assert _run_dirs() == []
    assert f"glider delegate: {said}: stopped claude (pid {agent}) and 1 process it started" in err
    assert f"its run directory {run_dir} was removed" in err
    assert out == ""
    (run,) = _events("DelegateRun")
    assert run["ok"] is False and run["stopped"] == {
        "by": sig.name,
        "pid": agent,
        "processes": 2,
        "run_dir_removed": True,
    }


def test_glider_killed_outright_leaves_nothing_running(fake_agents: Any, tmp_path: Path) -> None:
    """SIGKILL cannot be caught: the guard sees Glider gone and ends the run, and removes its directories."""
    proc, ticks = _start(fake_agents, tmp_path)
    try:
        pids = tickers(ticks, 2)
        assert _run_dirs()
        proc.kill()
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all_gone(pids) == set()
    assert not still_written(ticks)
    end = time.monotonic() + 20
    while _run_dirs() and time.monotonic() < end:
        time.sleep(0.05)
    assert _run_dirs() == []


def _serve_config(tmp_path: Path) -> tuple[Path, dict[str, str], dict[str, Any]]:
    """A config no backend of which answers (only the delegate does), the headers and a /claude turn."""
    ws = tmp_path / "project"
    ws.mkdir()
    cfg = tmp_path / "glider.yaml"
    cfg.write_text(
        "extends: default\nbackends:\n"
        "  ollama: {type: ollama, side: local, base_url: 'http://127.0.0.1:9', model: qwen-local}\n"
        "  origin: {type: origin, side: cloud, base_url: 'http://127.0.0.1:9'}\n"
    )
    headers = {"x-glider-workspace": str(ws), "anthropic-version": "2023-06-01", "x-api-key": "k"}
    body = {
        "model": "m",
        "max_tokens": 32,
        "stream": True,
        "messages": [{"role": "user", "content": "keep at it /claude"}],
    }
    return cfg, headers, body


def test_serve_whose_client_leaves_stops_the_whole_delegate(fake_agents: Any, tmp_path: Path) -> None:
    ticks = tmp_path / "ticks.txt"
    cfg, headers, body = _serve_config(tmp_path)
    with ServeProcess("--config", str(cfg), env=_env(fake_agents, ticks)) as served:
        with httpx.stream("POST", served.url + "/v1/messages", json=body, headers=headers, timeout=60) as r:
            lines = r.iter_lines()  # kept: a dropped iterator closes the response at once
            assert next(lines) == "event: message_start"
            pids = tickers(ticks, 2)
            (run_dir,) = [d for d in _run_dirs() if not d.name.startswith("claude-changes")]
        # The client left: the agent, the grandchild that left its process group, the run directory.
        assert all_gone(pids) == set()
        assert not still_written(ticks)
        end = time.monotonic() + 30
        while not _events("DelegateRun") and time.monotonic() < end:
            time.sleep(0.1)
        (run,) = _events("DelegateRun")
        assert _run_dirs() == [] and not run_dir.exists()
        assert run["ok"] is False and "went away" in run["summary"]
        assert run["stopped"]["by"] == "client_left" and run["stopped"]["processes"] == 2
        assert run["stopped"]["run_dir_removed"] is True


def test_serve_stopped_while_a_delegate_runs_leaves_nothing_running(fake_agents: Any, tmp_path: Path) -> None:
    """Ctrl-C on `glider serve` while its client still waits: the server stops within its grace and the
    delegate's whole tree with it; nothing keeps writing, no run directory is left."""
    ticks = tmp_path / "ticks.txt"
    cfg, headers, body = _serve_config(tmp_path)
    served = ServeProcess("--config", str(cfg), env=_env(fake_agents, ticks))
    with (
        served,
        httpx.stream("POST", served.url + "/v1/messages", json=body, headers=headers, timeout=60) as r,
    ):
        lines = r.iter_lines()
        assert next(lines) == "event: message_start"
        pids = tickers(ticks, 2)
        served.proc.send_signal(signal.SIGINT)
        served.proc.wait(timeout=60)
    assert all_gone(pids) == set()
    assert not still_written(ticks)
    assert _run_dirs() == []


def test_closing_the_terminal_stops_the_whole_delegate(fake_agents: Any, tmp_path: Path) -> None:
    """`glider delegate` on a real terminal (a pty, its controlling terminal) that is closed: the kernel's
    SIGHUP stops the run, and the terminal being gone does not cut the stop or the record short."""
    import os
    import pty

    ws = tmp_path / "ws"
    ws.mkdir()
    ticks = tmp_path / "ticks.txt"
    leader, follower = pty.openpty()
    tty = os.ttyname(follower)
    os.close(follower)
    # A session of its own whose controlling terminal is the pty, then glider in its place.
    take_tty = (
        "import os, sys; os.setsid(); fd = os.open(sys.argv[1], os.O_RDWR); "
        "[os.dup2(fd, n) for n in (0, 1, 2)]; os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
    )
    cmd = [sys.executable, "-c", take_tty, tty, "-m", "glider_cli", "delegate", "--claude"]
    proc = subprocess.Popen([*cmd, "--workspace", str(ws), "keep at it"], env=_env(fake_agents, ticks))
    try:
        pids = tickers(ticks, 2)
        os.close(leader)  # the terminal window is closed
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 129
    assert all_gone(pids) == set()
    assert not still_written(ticks)
    assert _run_dirs() == []
    (run,) = _events("DelegateRun")
    assert run["stopped"]["by"] == "SIGHUP" and run["stopped"]["run_dir_removed"] is True
