"""A client's own messages after a turn a rule sent local (issue 42, point 2): a "failed" message sends
the rest of the turn to the cloud (`Escalated`, the family bound until the next real user message); a
neutral continuation stays on the local side that answered. An explicit `/local`, the pure-local
profile and `routing.escalate.on_client_failure: false` keep both local."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from family_helpers import cc, tool_result, tool_use, user
from glider_cli.config.model import Config, EscalateSettings
from glider_cli.protocol.parse import parse_request
from routing_helpers import config_with_rules
from turns.test_sticky import S1, Harness

RULES = """
- name: explicit_local
  priority: 100
  trigger: {type: explicit, commands: ["/local"]}
  action: {target: local, backend: local1}
- name: small_task
  priority: 50
  trigger: {type: regex, pattern: "small task"}
  action: {target: local, backend: local1}
- name: default_cloud
  priority: 0
  trigger: {type: always}
  action: {target: cloud, backend: cloud1}
"""
MAX_TOKENS = (
    "Output token limit hit. Resume directly \u2014 no apology, no recap of what you were doing. "
    "Pick up mid-thought if that is where the cut happened. Break remaining work into smaller pieces."
)
FAILED = "The previous response failed to produce a valid tool call. Please retry the tool call now."
EMPTY = "[Your previous response had no visible output. Please continue and produce a user-visible response.]"
GEMINI_EMPTY = (
    "[System: You successfully executed a tool but returned an empty response. Please analyze the tool "
    "output and explain your progress or final answer.]"
)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return config_with_rules(tmp_path, RULES)


def _after(prompt: str, follow: str) -> list[dict[str, Any]]:
    return [user(prompt), {"role": "assistant", "content": "Here is"}, user(follow)]


def test_a_neutral_continuation_of_a_rules_local_turn_stays_local(config: Config) -> None:
    h = Harness(config)
    _, d1 = h.route(cc(S1, [user("small task: fix the typo")])[0])
    assert (d1.target, d1.rule) == ("local", "small_task")
    p2, d2 = h.route(cc(S1, _after("small task: fix the typo", MAX_TOKENS))[0])
    # Decided on its own text it would go to the cloud (default_cloud): it continues the local turn.
    assert (p2.placement.kind, p2.turn_id) == ("continuation", "t1")
    assert (d2.target, d2.backend, d2.rule) == ("local", "local1", "sticky")
    assert "stays on the local side that answered turn t1" in " ".join(r.reason for r in d2.trace)
    assert "Escalated" not in [t for t, _, _ in h.events]


@pytest.mark.parametrize(("text", "which"), [(FAILED, "invalid_tool_call"), (EMPTY, "no_visible_output")])
def test_a_failed_message_sends_the_rest_of_the_turn_to_the_cloud(
    config: Config, text: str, which: str
) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("small task: fix the typo")])[0])
    p2, d2 = h.route(cc(S1, _after("small task: fix the typo", text))[0], calls=[])
    assert p2.placement.sent == which
    assert p2.escalated == (f"client_failure:{which}", "local1", "small_task")
    assert (d2.target, d2.backend) == ("cloud", "cloud1")
    assert "escalated to the cloud" in " ".join(r.reason for r in d2.trace)
    (esc,) = [(d, turn) for t, d, turn in h.events if t == "Escalated"]
    assert esc == (
        {"reason": f"client_failure:{which}", "from": "local1", "to": "cloud1", "rule": "small_task"},
        "t1",
    )
    bound = [d for t, d, _ in h.events if t == "StickyBound"]
    assert bound and bound[0]["target"] == "cloud" and bound[0]["family"] == "t1"
    (regret,) = [d for t, d, _ in h.events if t == "LocalRegret"]  # regretted for the rule that sent it
    assert (regret["kind"], regret["rule"], regret["evidence"]) == (
        "escalated",
        "small_task",
        f"client_failure:{which}",
    )
    # The rest of the turn stays there: the cloud's tool call comes back, its result goes to the cloud...
    messages = [*_after("small task: fix the typo", text), tool_use("toolu_9")]
    h.route(cc(S1, messages)[0], calls=[])
    _, d3 = h.route(cc(S1, [*messages, tool_result("toolu_9")])[0])
    assert d3.target == "cloud"
    # ... and the next real user message decides anew.
    _, d4 = h.route(cc(S1, [user("small task: another typo")])[0])
    assert (d4.target, d4.rule) == ("local", "small_task")


def test_gemini_clis_empty_response_nudge_escalates(config: Config) -> None:
    h = Harness(config)

    def gemini(*contents: dict[str, Any]) -> Any:
        body = {
            "contents": list(contents),
            "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}],
        }
        return parse_request("gemini", body, {})

    context = {"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}
    ask = {"role": "user", "parts": [context, {"text": "small task: list the files"}]}
    call = {
        "role": "model",
        "parts": [{"functionCall": {"name": "run_shell_command", "args": {"command": "ls"}}}],
    }
    result = {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {}}}]}
    empty = {"role": "model", "parts": [{"text": ""}]}
    nudge = {"role": "user", "parts": [{"text": GEMINI_EMPTY}]}
    _, d1 = h.route(gemini(ask))
    assert d1.target == "local"
    h.route(gemini(ask, call, result))
    p3, d3 = h.route(gemini(ask, call, result, empty, nudge))
    assert p3.placement.sent == "empty_after_tool"
    assert (d3.target, d3.backend) == ("cloud", "cloud1")
    assert [d["reason"] for t, d, _ in h.events if t == "Escalated"] == ["client_failure:empty_after_tool"]


def test_an_explicit_local_turn_is_never_escalated(config: Config) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("fix the typo /local")])[0])
    _, d2 = h.route(cc(S1, _after("fix the typo /local", FAILED))[0])
    assert (d2.target, d2.backend) == ("local", "local1")
    assert "Escalated" not in [t for t, _, _ in h.events]


@pytest.mark.parametrize(
    "change", [{"local_only": True}, {"escalate": EscalateSettings(on_client_failure=False)}]
)
def test_pure_local_or_escalation_off_keeps_the_failed_turn_local(
    config: Config, change: dict[str, Any]
) -> None:
    h = Harness(config)
    h.turns.use(h.router, **change)  # as a reload does
    h.route(cc(S1, [user("small task: fix the typo")])[0])
    _, d2 = h.route(cc(S1, _after("small task: fix the typo", FAILED))[0])
    assert (d2.target, d2.backend) == ("local", "local1")
    assert "Escalated" not in [t for t, _, _ in h.events]


def test_after_a_cloud_answer_a_failed_message_is_not_an_escalation(config: Config) -> None:
    h = Harness(config)
    h.route(cc(S1, [user("design the system")])[0])
    _, d2 = h.route(cc(S1, _after("design the system", FAILED))[0])
    assert d2.target == "cloud" and "Escalated" not in [t for t, _, _ in h.events]
