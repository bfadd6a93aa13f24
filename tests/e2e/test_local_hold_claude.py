"""A `/local` turn holds for its own turn, with the real Claude Code CLI through a live Glider.

The bundled default profile (over the fake upstream: Ollama for the local side, Anthropic for the
origin): the prompt says `/local`, the local model answers with an Agent call, and Claude Code runs
the subagent, whose request carries tools — the classifier's tools rule (85) would send it to the
cloud and bind the whole family there. It stays local, and so does the Agent result.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import claude_code
from e2e.test_sticky_claude import decided, reset_after_first_request, run_claude
from fake_upstream import FakeUpstream, ToolReply
from server.glider_harness import GliderServer, backends_yaml

pytestmark = [pytest.mark.claude_code, pytest.mark.live, pytest.mark.slow]


@pytest.fixture
def glider(tmp_path: Path) -> Iterator[tuple[GliderServer, FakeUpstream]]:
    models = [claude_code.MODEL, "claude-opus-5-5", "claude-haiku-4-5-20251001"]
    with (
        FakeUpstream(models=models, ollama_models=["qwen-local"]) as fake,
        GliderServer(backends_yaml(fake.url), tmp_path) as g,
    ):
        yield g, fake


def test_a_local_turn_keeps_its_real_subagent_local(
    claude_bin: str, glider: tuple[GliderServer, FakeUpstream], tmp_path: Path
) -> None:
    g, fake = glider
    home = tmp_path / "user-home"  # the agent's HOME; the server's GLIDER_HOME is tmp_path / "home"
    home.mkdir()
    prompt = "List the python files in this directory, one per line."
    args = {"description": "find python files", "prompt": prompt, "subagent_type": "Explore"}
    fake.set_reply(tool=ToolReply("Agent", args))
    with reset_after_first_request(fake):
        out = run_claude(claude_bin, g.url, home, tmp_path, "audit the files /local")
    assert out["num_turns"] == 2
    g.wait_for("FulfilledLocal", 3)
    assert "OriginPassthrough" not in g.types()
    assert {q.path for q in fake.requests} == {"/api/chat"}
    (d1, t1), (d2, t2), (d3, t3) = decided(g)
    assert (d1["rule"], d1["target"], d1["family"]["kind"]) == ("explicit_local", "local", "new_turn")
    assert (d2["family"]["kind"], t2, d2["target"], d2["rule"]) == ("subagent", t1, "local", "sticky")
    assert d2["family"]["subagent_type"] == "Explore" and d2["request"]["has_tools"] is True
    assert "held local" in d2["trace"][0]["reason"] and "explicit /local" in d2["trace"][0]["reason"]
    assert (d3["family"]["kind"], t3, d3["target"]) == ("tool_result", t1, "local")
    bound = [d for t, d, _ in g.events if t == "StickyBound"]
    assert bound and {d["target"] for d in bound} == {"local"}
