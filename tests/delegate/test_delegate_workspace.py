"""Finding the workspace from what real clients send (captured fixtures), a header, and git roots."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from glider_cli.delegate import workspace
from glider_cli.domain import ChatRequest, Message

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def _texts(obj: object) -> list[str]:
    out: list[str] = []
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            out += _texts(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _texts(v)
    return out


def _fixture_texts(name: str, cwd: Path) -> list[str]:
    raw = (FIXTURES / name).read_text().replace("<CWD>", str(cwd))
    body = json.loads(raw)["requests"][0]["body"]
    return _texts(body)


def test_claude_code_environment_block(tmp_path: Path) -> None:
    texts = _fixture_texts("claude-code-01-first-turn.json", tmp_path)
    assert workspace.from_texts(texts) == str(tmp_path)


def test_codex_environment_context(tmp_path: Path) -> None:
    texts = _fixture_texts("codex-exec-01-tool-followup.json", tmp_path)
    assert workspace.from_texts(texts) == str(tmp_path)


def test_header_wins_and_relative_paths_do_not_count(tmp_path: Path) -> None:
    assert workspace.from_texts(["Primary working directory: /a"], {"X-Glider-Workspace": "/b"}) == "/b"
    assert workspace.from_texts(["Primary working directory: relative/dir"]) is None
    assert workspace.from_texts(["nothing here"]) is None


def test_from_request_normalises_to_the_git_root(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    sub = tmp_path / "pkg" / "inner"
    sub.mkdir(parents=True)
    req = ChatRequest(
        protocol="anthropic",
        model="m",
        stream=True,
        messages=(
            Message("user", "hi"),
            Message("system", f"# Environment\n - Primary working directory: {sub}"),
        ),
    )
    assert workspace.from_request(req) == tmp_path.resolve()
    plain = tmp_path.parent / "not-a-repo-dir"
    plain.mkdir()
    assert workspace.normalise(plain) == plain.resolve()


def test_client_name_from_headers() -> None:
    assert workspace.client_name({"User-Agent": "claude-cli/2.1.332 (external, sdk-cli)"}) == "claude-code"
    assert workspace.client_name({"originator": "codex_exec", "user-agent": "codex_exec/0.171.0"}) == "codex"
    assert workspace.client_name({"user-agent": "OpenAI/Python 3.57.0"}) == "openai-sdk"
    assert workspace.client_name({}) == "client"


def _parsed(name: str, protocol: str, cwd: Path) -> ChatRequest:
    from glider_cli.protocol.parse import parse_request

    req = json.loads((FIXTURES / name).read_text().replace("<CWD>", str(cwd)))["requests"][0]
    headers = req.get("headers", [])
    return parse_request(protocol, req["body"], dict(headers) if isinstance(headers, list) else headers)


def test_from_parsed_real_requests(tmp_path: Path) -> None:
    claude = _parsed("claude-code-01-first-turn.json", "anthropic", tmp_path)
    assert workspace.from_request(claude) == tmp_path.resolve()
    assert workspace.client_name(claude.headers) == "claude-code"
    codex = _parsed("codex-exec-01-tool-followup.json", "openai_responses", tmp_path)
    assert workspace.from_request(codex) == tmp_path.resolve()
    assert workspace.client_name(codex.headers) == "codex"


def test_shell_front_from_markers_then_ancestors(tmp_path: Path) -> None:
    from glider_cli.delegate.workspace import shell_front

    proc = tmp_path / "proc"
    tree = {
        10: ("bash", 9, "bash"),
        9: ("node", 8, "/usr/bin/node\0/usr/lib/gemini/index.js"),
        8: ("init", 1, "init"),
    }
    for pid, (comm, ppid, argv) in tree.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(f"{pid} ({comm}) S {ppid} 0 0")
        (proc / str(pid) / "cmdline").write_bytes(argv.encode() + b"\0")
    assert shell_front({"CLAUDECODE": "1"}, pid=10, proc=proc) == "claude-code"
    assert shell_front({"CODEX_SANDBOX_NETWORK_DISABLED": "1"}, pid=10, proc=proc) == "codex"
    assert shell_front({}, pid=10, proc=proc) == "glider-cli"  # index.js is not "gemini"
    (proc / "9" / "cmdline").write_bytes(b"/usr/bin/node\0/usr/local/bin/gemini\0")
    assert shell_front({}, pid=10, proc=proc) == "gemini-cli"
    assert shell_front({}, pid=999, proc=proc) == "glider-cli"
