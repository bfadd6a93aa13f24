"""The pack of a Gemini request (Gemini CLI's shape): the current turn, a short system part with the
environment lines of its `<session_context>`, episodes, and the tool diet."""

from __future__ import annotations

from typing import Any

from glider_cli.config.settings import TransformSettings
from glider_cli.protocol.parse import parse_request
from glider_cli.turns.pack import BRIEF, EPISODES_HEADING, PACKABLE, pack

CONTEXT = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "Today's date is Tuesday, December 1, 2026 (formatted according to the user's locale).\n"
    "My operating system is: linux\nI'm currently working in the directory: /home/me/work\n"
    + "Here is the folder structure of the current working directories:\n"
    + "\n".join(f"├───src/module_{i}.py" for i in range(300))
    + "\n</session_context>"
)
SYSTEM = "You are Gemini CLI, an interactive CLI agent. " + "Follow the core mandates carefully. " * 900
NAMES = [
    "list_directory", "read_file", "grep_search", "glob", "replace", "write_file", "web_fetch",
    "run_shell_command", "save_memory", "google_web_search", "write_todos", "activate_skill",
]  # fmt: skip


def _decl(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool. " + "It does what its name says, and more. " * 40,
        "parametersJsonSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A path. " * 50}},
        },
    }


def body(contents: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "contents": contents,
        "systemInstruction": {"role": "user", "parts": [{"text": SYSTEM}]},
        "tools": [{"functionDeclarations": [_decl(n) for n in NAMES]}],
        "generationConfig": {"temperature": 1, "maxOutputTokens": 4096},
        "model": "gemini-2.5-pro",
        "stream": True,
        "alt": "sse",
    }


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def test_gemini_is_packable_and_its_first_turn_shrinks_to_the_prompt_and_a_short_system() -> None:
    assert "gemini" in PACKABLE
    b = body([_user(CONTEXT), _user("say hi /local")])
    p = pack("gemini", b, TransformSettings(), episodes=["asked: fix the lexer; routed local"])
    out, report = p.body, p.report
    assert report.packed and report.tokens_before > 8000 and report.tokens_after < 2000, report.to_dict()
    assert out["contents"] == [_user("say hi /local")]
    system = out["systemInstruction"]["parts"][0]["text"]
    assert system.startswith(BRIEF) and len(system) < 2600
    for line in ("Today's date is Tuesday", "My operating system is: linux", "directory: /home/me/work"):
        assert line in system  # the environment lines of the session context
    assert "module_1.py" not in system
    assert EPISODES_HEADING in system and "fix the lexer" in system
    kept = [d["name"] for d in out["tools"][0]["functionDeclarations"]]
    assert kept == ["list_directory", "read_file", "grep_search", "glob", "replace", "write_file",
                    "run_shell_command"]  # fmt: skip
    assert all(len(d["description"]) <= 120 for d in out["tools"][0]["functionDeclarations"])
    assert b["contents"][0]["parts"][0]["text"] == CONTEXT  # the client's body is untouched
    chat = parse_request("gemini", out)
    assert chat.last_user_text == "say hi /local" and chat.estimated_tokens == report.tokens_after


def test_a_gemini_tool_turn_is_kept_whole_and_the_tools_it_used_stay() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "web_fetch", "args": {"url": "x"}}}]}
    result = {
        "role": "user",
        "parts": [{"functionResponse": {"name": "web_fetch", "response": {"output": "page"}}}],
    }
    earlier = [_user(CONTEXT), _user("first ask"), {"role": "model", "parts": [{"text": "done"}]}]
    b = body([*earlier, _user("fetch the page"), call, result])
    out = pack("gemini", b, TransformSettings(local_tools=())).body
    assert out["contents"] == [_user("fetch the page"), call, result]
    assert [d["name"] for d in out["tools"][0]["functionDeclarations"]] == ["web_fetch"]
    no_tools = pack("gemini", {**b, "toolConfig": {"x": 1}}, TransformSettings(), tools=False).body
    assert "tools" not in no_tools and "toolConfig" not in no_tools


def test_local_context_off_sends_the_gemini_body_as_it_is() -> None:
    b = body([_user(CONTEXT), _user("say hi")])
    p = pack("gemini", b, TransformSettings(local_context=False))
    assert p.body == b and not p.report.packed
