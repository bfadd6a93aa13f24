"""The default profile's scripts evaluated as Python (sandbox.native) decide exactly as through the
Starlark interpreter: same rule, action, trace and record, `route explain` included; and a decision
with the default profile no longer loads the interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from glider_cli.app.explain import ExplainInput, explain
from glider_cli.config.load import load_config
from glider_cli.domain import ChatRequest
from glider_cli.protocol.parse import parse_request
from glider_cli.router import Router
from glider_cli.router.compiled import _GroupedScript
from glider_cli.router.triggers import NativeScriptMatcher
from routing_helpers import message

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "clients"
_PROTOCOLS = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}
TEXTS = [
    "please refactor this",
    "RENAME the helper",
    "inline the variable",
    "extract method from this",
    "/swarm build it",
    "do it [fanout] now",
    "[fanout] and refactor",
    "Pourquoi le cache échoue-t-il ? İstanbul ΟΔΟΣ",
    "hello",
    "",
    "x" * 5000,
]


def requests() -> list[ChatRequest]:
    out = [message(t) for t in TEXTS]
    out.append(message("refactor this", tools=True, temperature=0.2))
    out.append(
        message(
            "now", history=[{"role": "user", "content": "/swarm"}, {"role": "assistant", "content": "ok"}]
        )
    )
    for path in sorted(FIXTURES.glob("*.json")):
        for r in json.loads(path.read_text())["requests"]:
            if r["path"] in _PROTOCOLS and isinstance(r.get("body"), dict):
                out.append(parse_request(_PROTOCOLS[r["path"]], r["body"]))
    return out


def starlark_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The router as it was: every bundled script through the in-process Starlark interpreter."""
    monkeypatch.setattr("glider_cli.sandbox.native.compile_native", lambda *a, **k: None)


def test_the_default_profile_scripts_run_natively() -> None:
    kinds = [type(r.matcher) for r in Router(load_config(profile="default")).rules if r.kind == "script"]
    assert kinds == [NativeScriptMatcher, NativeScriptMatcher]


@pytest.mark.parametrize("every", [False, True])
def test_the_default_profile_decides_as_through_starlark(
    monkeypatch: pytest.MonkeyPatch, every: bool
) -> None:
    config = load_config(profile="default")
    native = Router(config)
    with monkeypatch.context() as m:
        starlark_only(m)
        old = Router(config)
    assert all(not isinstance(r.matcher, NativeScriptMatcher) for r in old.rules)
    # The two adjacent bundled scripts share one interpreter call, as before.
    assert sum(isinstance(r.matcher, _GroupedScript) for r in old.rules) == 2
    seen = set()
    for request in requests():
        a, b = native.decide(request, every=every), old.decide(request, every=every)
        assert a == b, request.last_text[:80]
        assert a.to_record() == b.to_record()
        seen.add(a.rule)
    assert {"swarm_fanout", "refactor_local"} <= seen


def test_route_explain_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    def run() -> list[Any]:
        return [
            explain(ExplainInput(message=t, profile="default", every=True), environ={}).decision
            for t in TEXTS
        ]

    native = run()
    starlark_only(monkeypatch)
    assert run() == native
    assert native[0].rule == "refactor_local"
    line = next(r for r in native[0].trace if r.rule == "swarm_fanout")
    assert line.reason == "script swarm_fanout.star returned no match"


def test_a_default_profile_decision_does_not_load_the_starlark_interpreter() -> None:
    code = (
        "import sys\n"
        "from glider_cli.config.load import load_config\n"
        "from glider_cli.protocol.parse import parse_request\n"
        "from glider_cli.router import Router\n"
        "r = Router(load_config(profile='default'))\n"
        "for text in ('please refactor this', '/swarm go', 'hello'):\n"
        "    body = {'model': 'm', 'max_tokens': 8, 'messages': [{'role': 'user', 'content': text}]}\n"
        "    print(r.decide(parse_request('anthropic', body)).rule)\n"
        "print('starlark' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refactor_local", "swarm_fanout", "task_classifier.small", "False"]
