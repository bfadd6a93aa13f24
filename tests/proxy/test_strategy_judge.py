"""The strategies' judges and member request bodies (`proxy.strategies.judge`), pure: no HTTP."""

from __future__ import annotations

from glider_cli.proxy.strategies.judge import (
    agreement,
    judge_index,
    judge_prompt,
    member_body,
    stage_followup,
)


def test_agreement_picks_the_consensus_and_ties_go_first() -> None:
    assert agreement(["x = 5", "x = 4", "x = 4"])[0] == 1
    assert agreement(["a", "b"])[0] == 0


def test_model_judge_prompt_and_index() -> None:
    prompt = judge_prompt("what is 2+2?", ["4", "5"])
    assert "what is 2+2?" in prompt and "Candidate 0:\n4" in prompt and "Candidate 1:\n5" in prompt
    assert judge_index("Candidate 1", 2) == 1
    assert judge_index("7, then 0", 2) == 0
    assert judge_index("none", 2) is None


def test_member_bodies() -> None:
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "messages": []}
    out = member_body("openai_chat", body, temperature=0.7, followup=[("user", "go")])
    assert out == {
        "model": "m",
        "stream": False,
        "temperature": 0.7,
        "messages": [{"role": "user", "content": "go"}],
    }
    resp = member_body("openai_responses", {"input": "hi"}, followup=stage_followup("review", "draft"))
    assert resp["input"][0] == {"role": "user", "content": "hi"}
    assert resp["input"][1]["content"][0] == {"type": "output_text", "text": "draft"}
    assert body["stream"] is True  # the client's body is left as it was
