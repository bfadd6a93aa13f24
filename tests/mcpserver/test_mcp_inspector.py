"""The MCP Inspector's CLI (npm @modelcontextprotocol/inspector, `--cli`), a real MCP client, lists the
tools of `glider mcp` and calls each against the store a real `glider serve` session wrote; and the same
over `glider serve`'s /mcp."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_store import Recorded, config_for

import npm_cli
from fake_upstream import FakeUpstream
from serve_process import ServeProcess

pytestmark = [pytest.mark.live, pytest.mark.slow]
INSPECTOR = "@modelcontextprotocol/inspector@0.15"


@pytest.fixture(scope="module")
def inspector() -> str:
    # 0.15 is the newest line that runs on Node 20 (2.x needs Node >= 22.19 and has another CLI).
    found, why = npm_cli.find_or_install("mcp-inspector-cli", INSPECTOR, "the MCP Inspector")
    if found is None:
        pytest.skip(why)
    return found


def run(inspector: str, rec: Recorded, target: list[str], *args: str, cwd: Path | None = None) -> Any:
    proc = subprocess.run(
        [inspector, "--cli", *target, *args],
        env=rec.env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def stdio(rec: Recorded) -> list[str]:
    return [sys.executable, "-m", "glider_cli", "mcp", "--home", str(rec.home), "-c", str(rec.cfg)]


def test_the_inspector_lists_the_tools(inspector: str, recorded: Recorded) -> None:
    listed = run(inspector, recorded, stdio(recorded), "--method", "tools/list", cwd=recorded.alpha)
    names = [t["name"] for t in listed["tools"]]
    assert names == ["context_query", "continuity", "recent_turns", "route_explain"]
    for t in listed["tools"]:
        assert t["inputSchema"]["type"] == "object" and t["description"]


@pytest.mark.parametrize(
    ("tool", "args", "check"),
    [
        ("context_query", ["query=* kind=file lexer OR zebra"], lambda s: [r["name"] for r in s["results"]]),
        ("continuity", ["task=fix the tokenizer"], lambda s: s["title"]),
        ("recent_turns", ["limit=5"], lambda s: [t["rule"] for t in s["turns"]]),
        ("route_explain", ["message=/local summarise this"], lambda s: (s["target"], s["rule"])),
    ],
)
def test_the_inspector_calls_each_tool(
    inspector: str, recorded: Recorded, tool: str, args: list[str], check: Any
) -> None:
    expected = {
        "context_query": ["lexer.py"],
        "continuity": "Earlier in the calling session",
        "recent_turns": ["explicit_cloud", "explicit_local"],
        "route_explain": ("local", "explicit_local"),
    }[tool]
    out = run(
        inspector,
        recorded,
        stdio(recorded),
        "--method",
        "tools/call",
        "--tool-name",
        tool,
        *(x for a in args for x in ("--tool-arg", a)),
        cwd=recorded.alpha,
    )
    assert out["isError"] is False, out
    assert check(out["structuredContent"]) == expected
    assert out["content"][0]["type"] == "text" and out["content"][0]["text"]


def test_the_inspector_reads_a_tool_error(inspector: str, recorded: Recorded) -> None:
    out = run(
        inspector,
        recorded,
        stdio(recorded),
        "--method",
        "tools/call",
        "--tool-name",
        "context_query",
        "--tool-arg",
        "query=* path=lexer.py",
        cwd=recorded.alpha,
    )
    assert out["isError"] is True and "path" in out["content"][0]["text"]


def test_the_inspector_over_streamable_http(inspector: str, recorded: Recorded, tmp_path: Path) -> None:
    with FakeUpstream(models=("claude-x",)) as fake:
        cfg = config_for(fake, tmp_path / "glider.yaml")
        with ServeProcess("-c", str(cfg), env=recorded.env) as served:
            url = [served.url + "/mcp", "--transport", "http"]
            listed = run(inspector, recorded, url, "--method", "tools/list")
            assert len(listed["tools"]) == 4
            out = run(
                inspector,
                recorded,
                url,
                "--method",
                "tools/call",
                "--tool-name",
                "context_query",
                "--tool-arg",
                "query=* kind=file parser",
                f"workspace={recorded.alpha}",
            )
    assert out["isError"] is False, out
    assert [r["name"] for r in out["structuredContent"]["results"]] == ["parser.py"]
