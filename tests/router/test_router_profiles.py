"""The bundled profiles mean what they say: pure-local keeps everything local unless /cloud is typed,
local-first sends small tool-carrying turns local and hard or long ones to the cloud."""

from __future__ import annotations

import pytest

from glider_cli.config.load import load_config
from glider_cli.errors import GateRefused
from glider_cli.router import Router, StickyView
from routing_helpers import message


@pytest.fixture(scope="module")
def pure() -> Router:
    return Router(load_config(profile="pure-local"))


@pytest.fixture(scope="module")
def first() -> Router:
    return Router(load_config(profile="local-first"))


@pytest.mark.parametrize(
    ("text", "tools", "tokens"),
    [
        ("say hi", True, None),
        ("design the whole architecture of the cache layer", True, None),
        ("summarise the conversation so far", False, None),
        ("fix it", True, 90_000),
    ],
)
def test_pure_local_keeps_everything_local(pure: Router, text: str, tools: bool, tokens: int | None) -> None:
    chat = message(text, tools=tools)
    if tokens is not None:
        from glider_cli.values import replace

        chat = replace(chat, estimated_tokens=tokens)
    assert pure.decide(chat).target == "local"


def test_pure_local_sends_to_the_cloud_only_what_the_user_sends_there(pure: Router) -> None:
    d = pure.decide(message("/cloud design the cache", tools=True))
    assert (d.target, d.rule) == ("cloud", "explicit_cloud")


def test_pure_local_a_summary_view_does_not_send_it_to_the_cloud(pure: Router) -> None:
    # The view a summary gets in the default profile (refused local) never arises under local_only;
    # a family bound by an explicit /cloud still keeps its follow-ons off the local model.
    follow_on = message("go on", history=[{"role": "user", "content": "/cloud x"}])
    bound = StickyView(True, "t1", "bound by explicit /cloud in turn t1", True)
    assert pure.decide(follow_on, bound).target == "cloud"


def test_pure_local_a_request_no_local_backend_can_take_is_an_error_naming_the_gate(pure: Router) -> None:
    with pytest.raises(GateRefused) as err:
        pure.decide(message("fix it", tools=True), gate=lambda b: "pack 9,800 tokens > window 8,192")
    assert "window 8,192" in err.value.message and err.value.hint == "send it with /cloud"


def test_pure_local_local_backends_fall_back_to_no_cloud_backend() -> None:
    cfg = load_config(profile="pure-local")
    assert cfg.routing.local_only and cfg.settings.backends["ollama"].fallback == "none"


@pytest.mark.parametrize(
    ("text", "target", "rule"),
    [
        ("fix the typo in the README", "local", "task_classifier.small"),
        ("rename this variable to count", "local", "task_classifier.small"),
        ("design the whole architecture of the cache layer", "cloud", "task_classifier.cloud"),
        ("find the root cause of the deadlock in the scheduler", "cloud", "task_classifier.cloud"),
    ],
)
def test_local_first_small_tool_turns_local_hard_ones_cloud(
    first: Router, text: str, target: str, rule: str
) -> None:
    d = first.decide(message(text, tools=True))
    assert (d.target, d.rule) == (target, rule)


def test_local_first_a_long_session_goes_to_the_cloud(first: Router) -> None:
    from glider_cli.values import replace

    d = first.decide(replace(message("fix the typo", tools=True), estimated_tokens=80_000))
    assert (d.target, d.rule) == ("cloud", "large_context_cloud")


def test_the_default_profile_still_sends_tool_carrying_requests_to_the_cloud() -> None:
    d = Router(load_config(profile="default")).decide(message("fix the typo", tools=True))
    assert (d.target, d.rule) == ("cloud", "task_classifier.tools")


@pytest.mark.parametrize(("profile", "target"), [("pure-local", "local"), ("default", "cloud")])
def test_a_compaction_request_stays_local_only_under_pure_local(profile: str, target: str) -> None:
    import json

    from glider_cli.turns.lifecycle import Turns

    cfg = load_config(profile=profile)
    s = cfg.settings
    ids = iter(f"t{i}" for i in range(10))
    turns = Turns(
        Router(cfg), s.sticky, s.tool_followup, clock=lambda: 1.0, new_id=lambda: next(ids),
        local_only=cfg.routing.local_only,
    )  # fmt: skip
    meta = {"metadata": {"user_id": json.dumps({"session_id": "s-1"})}}
    assert turns.open(message("fix the typo", **meta), {}).plan.placement.kind == "new_turn"
    history = [{"role": "user", "content": "fix the typo"}, {"role": "assistant", "content": "done"}]
    opened = turns.open(message("summarise the conversation so far", history=history, **meta), {})
    assert opened.plan.placement.kind == "summary"
    assert opened.decision.target == target
