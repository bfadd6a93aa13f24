"""Verdicts that do not depend on the request are built once, at config load, not per decision."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from glider_cli.config.load import load_config
from glider_cli.router import Router
from glider_cli.router.compiled import Ctx
from glider_cli.router.complexity import LazyComplexity
from routing_helpers import message


def ctx_for(router: Router, text: str) -> Ctx:
    req = message(text)
    return Ctx(req, req.last_text, req.last_user_text, LazyComplexity(router._scorer, text, 1, False))


def test_a_script_rule_that_returns_none_gives_its_one_prebuilt_verdict() -> None:
    router = Router(load_config(profile="default"))
    rules = {r.name: r for r in router.rules}
    for name in ("swarm_fanout", "refactor_local"):  # grouped: one interpreter call for both
        first = rules[name].matcher(ctx_for(router, "where next?"))
        again = rules[name].matcher(ctx_for(router, "and after that?"))
        assert first.reason == f"script {name}.star returned no match"
        assert again is first
    d = router.decide(message("where next?"))
    assert [t.reason for t in d.trace if t.rule == "refactor_local"] == [
        "script refactor_local.star returned no match"
    ]


def test_the_wrap_up_wording_is_looked_for_in_the_first_2000_characters_only() -> None:
    router = Router(load_config(profile="default"))
    wrapup = next(r for r in router.rules if r.name == "composer_wrapup_origin").matcher
    assert wrapup(ctx_for(router, "summarize the conversation so far")).matched
    assert wrapup(ctx_for(router, " " * 1990 + "summarize the conversation")).matched is False
    assert wrapup(ctx_for(router, " " * 1960 + "summarize the conversation" + "x" * 50)).matched


def trigger_calls(router: Router, text: str) -> list[str]:
    """The functions of `router.triggers` one decision about `text` calls."""
    req = message(text)
    router.decide(req)
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.endswith("triggers.py"):
            seen.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        router.decide(req)
    finally:
        sys.setprofile(None)
    return seen


def test_the_command_pre_check_makes_no_generator() -> None:
    # One pass of substring tests over the user text, for the delegate flags and every explicit
    # rule's commands at once: a text with a "/" but no command calls no command finder, and one
    # with a command has only the rule that owns it look for it in the person's own text.
    router = Router(load_config(profile="default"))
    finders = {"typed_command", "find_command", "typed", "typed_text", "client_text"}
    seen = trigger_calls(router, "where should we look next in src/app?")
    assert not finders & set(seen)
    assert "<genexpr>" not in seen
    assert not finders & set(trigger_calls(router, "where should we look next?"))
    seen = trigger_calls(router, "/cloud where should we look next in src/app?")
    assert [f for f in seen if f in finders] == ["typed_text", "client_text", "typed", "find_command"]
