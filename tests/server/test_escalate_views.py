"""Escalations as the views show them (issue 42, point 4), from a home a live Glider recorded with its
real EventWriter: the terminal line, the dashboard's request records, `glider context turns`, `glider
context usage` (the local attempts' tokens spent, each turn regretted for its rule) and `glider route
suggest` (the rule whose local answers kept failing is offered to the cloud)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from fake_upstream import FakeUpstream, ToolReply
from glider_cli.commands.serve import request_line
from server.glider_harness import GliderServer
from server.test_escalate_reply import PROMPT, config, post

GLIDER = Path(sys.executable).with_name("glider")


def _glider(home: Path, *args: str) -> Any:
    env = {**os.environ, "GLIDER_HOME": str(home)}
    proc = subprocess.run([str(GLIDER), *args], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _events(home: Path, type_: str) -> list[dict[str, Any]]:
    out = []
    for f in sorted((home / "context").glob("events-*.jsonl")):
        out += [e for e in map(json.loads, f.read_text().splitlines()) if e["type"] == type_]
    return out


def test_escalations_in_the_terminal_the_dashboard_turns_usage_and_suggest(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines: list[str] = []
    with (
        FakeUpstream(models=["smol"]) as local,
        FakeUpstream(models=["claude-x"]) as cloud,
        GliderServer(
            config(local.url, cloud.url),
            tmp_path,
            record=False,
            observer=lambda seen, served: lines.append(request_line(seen, served)),
        ) as g,
    ):
        local.set_reply(text="", tool=ToolReply("Delete", {"file_path": "x"}))
        for i in range(5):
            r = post(g, "anthropic", f"{PROMPT} number {i}", True)
            assert r.status_code == 200 and "escalated=bad_tool_name" in r.headers["x-glider-route"]
        records = httpx.get(g.url + "/api/events/requests").json()["requests"]
    assert len(lines) == 5 and all("(escalated from llama: bad_tool_name)" in line for line in lines), lines
    assert [(r["rule"], r["side"], r["answered_by"], r["escalated"]) for r in records] == [
        ("small_local", "local", "origin", "bad_tool_name")
    ] * 5

    regrets = _events(home, "LocalRegret")
    assert [(e["data"]["kind"], e["data"]["rule"], e["data"]["evidence"]) for e in regrets] == [
        ("escalated", "small_local", "bad_tool_name")
    ] * 5

    turns = _glider(home, "context", "turns", "--json")
    assert len(turns) == 5
    assert all(t["outcome"].endswith("after escalation llama -> origin (bad_tool_name)") for t in turns)

    usage = _glider(home, "context", "usage", "--by", "rule", "--json")
    (row,) = [r for r in usage["rows"] if r["key"] == "small_local"]
    # Each turn: the local attempt (spent, saving nothing) and the cloud's answer.
    assert (row["local_calls"], row["cloud_calls"], row["regrets"]) == (5, 5, 5)
    assert row["savings"] == 0

    out = _glider(home, "route", "suggest", "--config", str(g.path), "--days", "2", "--json")
    (s,) = out["suggestions"]
    assert (s["rule"], s["kind"]) == ("small_local", "to_cloud")
    assert s["evidence"]["local_turns"] == 5 and s["evidence"]["regrets"] == 5
    assert s["effect"]["moved_to_cloud"] == 5 and s["effect"]["regrets_moved"] == 5
