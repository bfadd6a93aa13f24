"""Vendor adapters: argv with the real flags, permissions never widened unasked, output parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glider_cli.config.settings import DelegateSettings
from glider_cli.delegate.agents import ADAPTERS, adapter_for
from glider_cli.errors import DelegateError

WS, RUN = Path("/w/project"), Path("/h/run/x")


def test_claude_argv() -> None:
    inv = ADAPTERS["claude"].build(None, "/fix it", WS, RUN)
    assert inv.cwd == WS
    assert inv.argv[:4] == ("claude", "-p", "--output-format", "json")
    assert ("--append-system-prompt-file", str(RUN / "glider-context.md")) == inv.argv[4:6]
    assert inv.argv[-1] == "Task: /fix it"  # never read as a slash command
    assert "--dangerously-skip-permissions" not in inv.argv


def test_codex_argv_points_at_run_dir_and_workspace() -> None:
    inv = ADAPTERS["codex"].build(
        DelegateSettings(vendor="codex", command="codex", model="gpt-x"), "t", WS, RUN
    )
    a = inv.argv
    assert a[:2] == ("codex", "exec") and "--json" in a
    assert a[a.index("-C") + 1] == str(RUN) and a[a.index("--add-dir") + 1] == str(WS)
    assert a[a.index("-m") + 1] == "gpt-x"
    assert ADAPTERS["codex"].context_limit == 32 * 1024


@pytest.mark.parametrize(
    ("vendor", "flag"),
    [
        ("claude", "--dangerously-skip-permissions"),
        ("cursor-agent", "--force"),
        ("agy", "--yolo"),
        ("codex", "--dangerously-bypass-approvals-and-sandbox"),
    ],
)
def test_permissions_widen_only_when_config_asks(vendor: str, flag: str) -> None:
    plain = DelegateSettings(vendor=vendor, command=vendor)
    assert flag not in ADAPTERS[vendor].build(plain, "t", WS, RUN).argv
    unsafe = DelegateSettings(vendor=vendor, command=vendor, unsafe_permissions=True)
    assert flag in ADAPTERS[vendor].build(unsafe, "t", WS, RUN).argv


def test_cursor_agent_needs_trust_and_agy_prompt_follows_p() -> None:
    assert "--trust" in ADAPTERS["cursor-agent"].build(None, "t", WS, RUN).argv
    a = ADAPTERS["agy"].build(None, "t", WS, RUN).argv
    assert a[a.index("-p") + 1].startswith("t\n")


def test_claude_parse_reads_is_error_and_subtype() -> None:
    a = ADAPTERS["claude"]
    good = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done"})
    assert a.parse(good, 0).ok and a.parse(good, 0).text == "done"
    bad = json.dumps({"type": "result", "subtype": "success", "is_error": True, "result": "API Error: 400"})
    assert not a.parse(bad, 0).ok
    assert not a.parse(good, 1).ok
    assert not a.parse("", 0).ok


def test_cursor_agent_result_ready() -> None:
    a = ADAPTERS["cursor-agent"]
    assert not a.result_ready('{"type":"result","subt')
    assert a.result_ready('{"type":"result","subtype":"success","is_error":false,"result":"x"}\n')


def test_agy_parse() -> None:
    a = ADAPTERS["agy"]
    assert a.parse(json.dumps({"response": "hi", "stats": {}}), 0).text == "hi"
    assert not a.parse("", 0).ok
    assert not a.parse(json.dumps({"error": {"message": "nope", "code": 400}}), 144).ok
    assert not a.parse(json.dumps({"response": ""}), 0).ok


def test_codex_parse_file_changes_and_failure() -> None:
    a = ADAPTERS["codex"]
    lines = [
        {"type": "thread.started"},
        {
            "type": "item.completed",
            "item": {"type": "file_change", "changes": [{"path": "a.go"}, {"path": "b.go"}]},
        },
        {"type": "item.completed", "item": {"type": "agent_message", "text": "fixed"}},
        {"type": "turn.completed", "usage": {}},
    ]
    out = a.parse("\n".join(json.dumps(x) for x in lines), 0)
    assert out.ok and out.text == "fixed" and out.files == ("a.go", "b.go")
    failed = a.parse(json.dumps({"type": "turn.failed", "error": {"message": "400 bad"}}), 1)
    assert not failed.ok and "400 bad" in failed.text


def test_unknown_vendor() -> None:
    with pytest.raises(DelegateError, match="unknown delegate vendor"):
        adapter_for("gemini")
