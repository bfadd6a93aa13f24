"""Parsing a body of plain dicts runs no ABC instance check (`isinstance(x, Mapping)` on a dict or
None goes through ABCMeta.__instancecheck__, a Python-level call, per value)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from glider_cli.protocol.parse import parse_request

CLIENTS = Path(__file__).resolve().parents[1] / "fixtures" / "clients"


def abc_checks_while(call: Any) -> int:
    seen = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal seen
        if event == "call" and frame.f_code.co_name == "__instancecheck__":
            seen += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


def test_a_captured_claude_code_request_parses_without_abc_checks() -> None:
    requests = json.loads((CLIENTS / "claude-code-02-tool-use-followup.json").read_text())["requests"]
    bodies = [r["body"] for r in requests if isinstance(r["body"], dict) and "messages" in r["body"]]
    body = max(bodies, key=lambda b: len(b.get("tools") or ()))
    assert body["tools"]  # a tool without a `function`: the case that asked
    parse_request("anthropic", body)  # warm: nothing is imported lazily while counting
    assert abc_checks_while(lambda: parse_request("anthropic", body)) == 0
