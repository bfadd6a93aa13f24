"""`pipeline` and `ensemble` through a live Glider and strict fakes: each stage's input is the previous
stage's answer, a stage answering with tool calls ends the pipeline, an ensemble asks local and cloud."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from fake_upstream import FakeUpstream
from glider_cli.proxy.strategies.judge import EXECUTE_PROMPT, PLAN_PROMPT, REVIEW_PROMPT
from server.glider_harness import GliderServer

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(models=["claude-x"], ollama_models=["qwen-local"]),
]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
RULES = (
    "routing:\n  task_classifier: {enabled: false}\n  rules:\n"
    "    - {name: piped, priority: 98, trigger: {type: explicit, commands: ['/pipe']},"
    " action: {target: local, strategy: pipeline}}\n"
    "    - {name: together, priority: 97, trigger: {type: explicit, commands: ['/ens']},"
    " action: {target: local, strategy: ensemble}}\n"
)


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


def _config(local: str, origin: str, orchestration: str) -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{origin}'}}\n"
        + RULES
        + "orchestration:\n"
        + orchestration
    )


def _post(g: GliderServer, text: str, **kw: object) -> httpx.Response:
    body = {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": text}], **kw}
    return httpx.post(g.url + "/v1/messages", json=body, headers=HEADERS, timeout=30)


def test_pipeline_local_draft_then_cloud_review(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url, "  pipeline: {enabled: true}\n"), tmp_path) as g:
        r = _post(g, "/pipe fix: print('hi'")
        assert r.json()["content"][0]["text"] == "hello from fake anthropic claude-x"
        assert [q.path for q in fake.requests] == ["/api/chat", "/v1/messages"]
        draft, review = fake.requests
        assert draft.body["messages"][-1]["content"] == "/pipe fix: print('hi'"
        msgs = review.body["messages"]
        assert msgs[0]["content"] == "/pipe fix: print('hi'"
        assert msgs[1] == {"role": "assistant", "content": "hello from fake ollama qwen-local"}
        assert msgs[2] == {"role": "user", "content": REVIEW_PROMPT}
        assert review.headers["x-api-key"] == "sk-client" and review.body["stream"] is False
        plan = g.wait_for("RouteDecided")[0]["plan"]
        assert [(m["role"], m["backend"]) for m in plan["members"]] == [
            ("draft", "ollama"),
            ("review", "origin"),
        ]
        assert g.wait_for("StrategyChosen")[0]["backend"] == "origin"
        assert g.wait_for("OriginPassthrough")[0]["backend"] == "origin"
        # A cloud member counts as cloud: the family is bound as a cloud decision binds it.
        assert g.wait_for("StickyBound")


def test_pipeline_cloud_plan_then_local_execute_streamed(fake: FakeUpstream, tmp_path: Path) -> None:
    stages = (
        "  pipeline: {enabled: true, stages: [{role: plan, side: cloud}, {role: execute, side: local}]}\n"
    )
    with GliderServer(_config(fake.url, fake.url, stages), tmp_path) as g:
        r = _post(g, "/pipe write a regex for digits", stream=True)
        data = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
        text = "".join(d["delta"].get("text", "") for d in data if d["type"] == "content_block_delta")
        assert text == "hello from fake ollama qwen-local" and data[-1]["type"] == "message_stop"
        plan_req, run_req = fake.requests
        assert plan_req.path == "/v1/messages" and run_req.path == "/api/chat"
        assert plan_req.body["messages"][-1] == {"role": "user", "content": PLAN_PROMPT}
        contents = [m.get("content") for m in run_req.body["messages"]]
        assert "hello from fake anthropic claude-x" in contents and EXECUTE_PROMPT in contents


def test_a_stage_with_tool_calls_ends_the_pipeline(fake: FakeUpstream, tmp_path: Path) -> None:
    tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}]
    with FakeUpstream(models=["claude-x"], ollama_models=["qwen-local"]) as local:
        local.set_reply(tool="Bash")
        with GliderServer(_config(local.url, fake.url, "  pipeline: {enabled: true}\n"), tmp_path) as g:
            r = _post(g, "/pipe list files", tools=tools)
            assert r.json()["stop_reason"] == "tool_use"
            assert len(local.requests) == 1 and fake.requests == []
            assert "tool calls" in g.wait_for("StrategyChosen")[0]["why"]
            assert g.wait_for("ToolCallsIssued")[0]["backend"] == "ollama"


def test_ensemble_asks_local_and_cloud_and_a_judge_picks(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url, "  ensemble: {enabled: true}\n"), tmp_path) as g:
        r = _post(g, "/ens 2+2")
        assert r.status_code == 200
        assert sorted(q.path for q in fake.requests) == ["/api/chat", "/v1/messages"]
        members = g.wait_for("StrategyMember", 2)
        assert {(m["backend"], m["side"]) for m in members} == {("ollama", "local"), ("origin", "cloud")}
        chosen = g.wait_for("StrategyChosen")[0]
        assert chosen["complete"] == [0, 1] and chosen["judge"] == "longest_agreement"
        assert r.json()["content"][0]["text"] == "hello from fake ollama qwen-local"
