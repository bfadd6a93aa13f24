"""Strategies that operate, through a live Glider and strict fake upstreams (their `.requests` record every
member call): fan_out's member calls and judges, the chosen answer in each client protocol (whole and
streamed, keep-alives first), a slow member cut by its timeout, every member failing -> the fallback,
and a tool result going back to the member whose answer called the tool."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from glider_harness import GliderServer

from fake_upstream import FakeUpstream, closed_port_url

pytestmark = [
    pytest.mark.live,
    pytest.mark.fake_serves(
        models=["claude-x", "m"], ollama_models=["qwen-local", "qa", "qb", "qc", "judge"]
    ),
]

HEADERS = {"x-api-key": "sk-client", "anthropic-version": "2023-06-01"}
SERVES = {"models": ["claude-x"], "ollama_models": ["qwen-local", "qa", "qb", "qc", "judge"]}


@pytest.fixture(autouse=True)
def _reset(fake: FakeUpstream) -> None:
    fake.reset()


@pytest.fixture
def trio() -> Iterator[list[FakeUpstream]]:
    fakes = [FakeUpstream(**SERVES).start() for _ in range(3)]  # type: ignore[arg-type]
    try:
        yield fakes
    finally:
        for f in fakes:
            f.stop()


def _config(local_url: str, origin_url: str, orchestration: str = "", extra_backends: str = "") -> str:
    return (
        "extends: default\n"
        "backends:\n"
        f"  ollama: {{type: ollama, side: local, base_url: '{local_url}', model: qwen-local}}\n"
        f"  origin: {{type: origin, side: cloud, base_url: '{origin_url}'}}\n"
        + extra_backends
        + (f"orchestration:\n{orchestration}" if orchestration else "")
    )


def _members_config(fakes: list[FakeUpstream], origin: str, judge: str = "longest_agreement") -> str:
    names = ["qa", "qb", "qc"]
    backends = "".join(
        f"  l{i}: {{type: ollama, side: local, base_url: '{f.url}', model: {names[i]}}}\n"
        for i, f in enumerate(fakes)
    )
    members = ", ".join(f"{{backend: l{i}}}" for i in range(len(fakes)))
    return _config(
        fakes[0].url,
        origin,
        f"  fan_out: {{enabled: true, judge: {judge}, members: [{members}]}}\n",
        backends,
    )


def _anthropic(text: str, *, stream: bool = False, **kw: Any) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
        **kw,
    }


def _chat_requests(fake: FakeUpstream) -> list[Any]:
    return [r for r in fake.requests if r.path == "/api/chat"]


def test_swarm_fans_out_three_sampled_calls_and_records_the_plan(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        r = httpx.post(
            g.url + "/v1/messages", json=_anthropic("/swarm add 2 and 2"), headers=HEADERS, timeout=30
        )
        assert r.status_code == 200, r.text
        assert r.json()["content"][0]["text"] == "hello from fake ollama qwen-local"
        assert r.headers["x-glider-strategy"].startswith("fan_out; members=3")
        calls = _chat_requests(fake)
        assert len(calls) == 3
        assert sorted(c.body["options"]["temperature"] for c in calls) == [0.2, 0.7, 1.0]
        assert all(c.body["stream"] is False and c.body["model"] == "qwen-local" for c in calls)
        assert all("/swarm add 2 and 2" in json.dumps(c.body["messages"]) for c in calls)
        decided = g.wait_for("RouteDecided")[0]
        assert decided["strategy"] == "fan_out" and decided["rule"] == "swarm_fanout"
        plan = decided["plan"]
        assert [m["backend"] for m in plan["members"]] == ["ollama"] * 3
        assert plan["judge"] == "longest_agreement"
        members = g.wait_for("StrategyMember", 3)
        assert [m["outcome"] for m in members] == ["ok"] * 3
        assert all(m["backend"] == "ollama" and m["model"] == "qwen-local" for m in members)
        chosen = g.wait_for("StrategyChosen")[0]
        assert chosen["index"] in (0, 1, 2) and chosen["complete"] == [0, 1, 2]
        done = g.wait_for("FulfilledLocal")[0]
        assert done["backend"] == "ollama" and done["complete"] is True


PIPE_RULE = (
    "routing:\n  rules:\n"
    "    - {name: piped, priority: 98, trigger: {type: explicit, commands: ['/pipe']},"
    " action: {target: local, strategy: pipeline}}\n"
)


def test_without_enabled_the_strategy_is_one_ordinary_call(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url) + PIPE_RULE, tmp_path) as g:
        r = httpx.post(g.url + "/v1/messages", json=_anthropic("/pipe hi"), headers=HEADERS, timeout=30)
        assert r.status_code == 200
        assert g.wait_for("RouteDecided")[0]["strategy"] == "pipeline"
        assert len(_chat_requests(fake)) == 1 and len(fake.requests) == 1
        assert "StrategyMember" not in g.types() and "plan" not in g.wait_for("RouteDecided")[0]


def test_longest_agreement_picks_the_answer_the_others_agree_with(
    fake: FakeUpstream, trio: list[FakeUpstream], tmp_path: Path
) -> None:
    for f, text in zip(trio, ["The answer is 5", "The answer is 4", "The answer is 4."], strict=True):
        f.set_reply(text=text)
    with GliderServer(_members_config(trio, fake.url), tmp_path) as g:
        r = httpx.post(g.url + "/v1/messages", json=_anthropic("/swarm 2+2?"), headers=HEADERS, timeout=30)
        assert r.json()["content"][0]["text"] == "The answer is 4"
        assert [len(_chat_requests(f)) for f in trio] == [1, 1, 1]
        chosen = g.wait_for("StrategyChosen")[0]
        assert chosen["index"] == 1 and chosen["backend"] == "l1" and chosen["model"] == "qb"
        assert chosen["scores"][1] > chosen["scores"][0]
        assert r.headers["x-glider-route"].startswith("local; rule=swarm_fanout; backend=l1")


def test_a_model_judge_gets_the_candidates_and_its_index_wins(
    fake: FakeUpstream, trio: list[FakeUpstream], tmp_path: Path
) -> None:
    for f, text in zip(trio, ["alpha one", "alpha one", "gamma three"], strict=True):
        f.set_reply(text=text)
    with FakeUpstream(**SERVES) as judge:  # type: ignore[arg-type]
        judge.set_reply(text="2")
        cfg = _members_config(trio, fake.url, judge="{backend: j, model: judge}")
        cfg = cfg.replace(
            "backends:\n", f"backends:\n  j: {{type: ollama, side: local, base_url: '{judge.url}'}}\n"
        )
        with GliderServer(cfg, tmp_path) as g:
            r = httpx.post(
                g.url + "/v1/messages", json=_anthropic("/swarm name it"), headers=HEADERS, timeout=30
            )
            assert r.json()["content"][0]["text"] == "gamma three"
            asked = _chat_requests(judge)
            assert len(asked) == 1 and asked[0].body["model"] == "judge"
            prompt = asked[0].body["messages"][-1]["content"]
            assert "/swarm name it" in prompt
            for i, text in enumerate(["alpha one", "alpha one", "gamma three"]):
                assert f"Candidate {i}:\n{text}" in prompt
            chosen = g.wait_for("StrategyChosen")[0]
            assert chosen["index"] == 2 and chosen["judge"] == "model"


def test_openai_stream_gets_keep_alives_first_then_the_chosen_answer(
    fake: FakeUpstream, tmp_path: Path
) -> None:
    fake.set_fault(delay=1.2, times=3)
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        g.app.state.proxy.orchestrator.keepalive = 0.3
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "/swarm count to 3"}]}
        lines: list[tuple[float, str]] = []
        t0 = time.monotonic()
        with httpx.stream("POST", g.url + "/v1/chat/completions", json=body, timeout=30) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                lines.append((time.monotonic() - t0, line))
        comments = [t for t, line in lines if line.startswith(": keep-alive")]
        data = [(t, line) for t, line in lines if line.startswith("data: ")]
        assert len(comments) >= 3 and comments[0] < 0.5
        assert all(t < data[0][0] for t in comments)
        assert data[-1][1] == "data: [DONE]"
        text = "".join(
            json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
            for _, line in data[:-1]
            if json.loads(line[6:])["choices"]
        )
        assert text == "hello from fake ollama qwen-local"


def test_anthropic_stream_is_well_formed_for_the_sdk(fake: FakeUpstream, tmp_path: Path) -> None:
    import anthropic

    fake.set_fault(delay=0.8, times=3)
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        g.app.state.proxy.orchestrator.keepalive = 0.2
        raw = httpx.post(
            g.url + "/v1/messages", json=_anthropic("/swarm say it", stream=True), headers=HEADERS, timeout=30
        ).text
        kinds = [line[7:] for line in raw.splitlines() if line.startswith("event: ")]
        assert kinds[0] == "message_start" and kinds.count("ping") >= 3 and kinds[-1] == "message_stop"
        fake.set_fault(delay=0.5, times=3)
        client = anthropic.Anthropic(base_url=g.url, api_key="sk-client")
        with client.messages.stream(
            model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "/swarm say it"}]
        ) as s:
            final = s.get_final_message()
        assert final.content[0].text == "hello from fake ollama qwen-local"  # type: ignore[union-attr]
        assert final.stop_reason == "end_turn"


def test_responses_client_whole_and_streamed(fake: FakeUpstream, tmp_path: Path) -> None:
    with GliderServer(_config(fake.url, fake.url), tmp_path) as g:
        body = {"model": "m", "input": "/swarm hello there"}
        r = httpx.post(g.url + "/v1/responses", json=body, timeout=30)
        out = r.json()["output"]
        assert out[-1]["content"][0]["text"] == "hello from fake ollama qwen-local"
        raw = httpx.post(g.url + "/v1/responses", json={**body, "stream": True}, timeout=30).text
        assert raw.startswith(": keep-alive") and "response.completed" in raw
        assert "hello from fake ollama qwen-local" in raw
        assert len(_chat_requests(fake)) == 6


def test_a_slow_member_is_cut_by_its_timeout(
    fake: FakeUpstream, trio: list[FakeUpstream], tmp_path: Path
) -> None:
    trio[2].set_fault(delay=5.0)
    cfg = _members_config(trio, fake.url).replace(
        "judge: longest_agreement", "judge: longest_agreement, member_timeout: 1"
    )
    with GliderServer(cfg, tmp_path) as g:
        t0 = time.monotonic()
        r = httpx.post(g.url + "/v1/messages", json=_anthropic("/swarm quick"), headers=HEADERS, timeout=30)
        assert time.monotonic() - t0 < 3.5
        assert r.status_code == 200
        members = {m["backend"]: m for m in g.wait_for("StrategyMember", 3)}
        assert members["l2"]["outcome"] == "timeout" and members["l0"]["outcome"] == "ok"
        assert g.wait_for("StrategyChosen")[0]["complete"] == [0, 1]


def test_a_total_deadline_ends_the_wait(fake: FakeUpstream, trio: list[FakeUpstream], tmp_path: Path) -> None:
    for f in trio[1:]:
        f.set_fault(delay=5.0)
    cfg = _members_config(trio, fake.url).replace(
        "judge: longest_agreement", "judge: longest_agreement, deadline: 1"
    )
    with GliderServer(cfg, tmp_path) as g:
        t0 = time.monotonic()
        r = httpx.post(g.url + "/v1/messages", json=_anthropic("/swarm quick"), headers=HEADERS, timeout=30)
        assert time.monotonic() - t0 < 3.5
        assert r.json()["content"][0]["text"] == "hello from fake ollama qa"
        outcomes = sorted(m["outcome"] for m in g.wait_for("StrategyMember", 3))
        assert outcomes == ["cancelled", "cancelled", "ok"]


@pytest.mark.parametrize("stream", [False, True])
def test_every_member_failing_takes_the_ordinary_fallback(
    fake: FakeUpstream, tmp_path: Path, stream: bool
) -> None:
    with GliderServer(_config(closed_port_url(), fake.url), tmp_path) as g:
        r = httpx.post(
            g.url + "/v1/messages", json=_anthropic("/swarm hi", stream=stream), headers=HEADERS, timeout=30
        )
        assert r.status_code == 200
        if stream:
            deltas = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
            text = "".join(d["delta"].get("text", "") for d in deltas if d["type"] == "content_block_delta")
            assert text == "hello from fake anthropic claude-x"
            kinds = [line[7:] for line in r.text.splitlines() if line.startswith("event: ")]
            assert kinds.count("message_start") == 1 and kinds[-1] == "message_stop"
        else:
            assert r.json()["content"][0]["text"] == "hello from fake anthropic claude-x"
        assert [m["outcome"] for m in g.wait_for("StrategyMember", 3)] == ["error"] * 3
        assert g.wait_for("StrategyChosen")[0]["index"] is None
        assert g.wait_for("FallbackUsed")[0]["to"] == "origin"
        assert g.wait_for("OriginPassthrough")[0]["fallback_from"] == "ollama"


def test_tool_results_go_back_to_the_member_that_called_the_tool(
    fake: FakeUpstream, trio: list[FakeUpstream], tmp_path: Path
) -> None:
    trio[0].set_reply(text="no tool needed")
    trio[1].set_reply(tool="Bash")
    trio[2].set_reply(tool="Bash")
    tools = [
        {
            "name": "Bash",
            "description": "run",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ]
    # The classifier would send a request with tools to the cloud (85) before the swarm rule (55).
    cfg = _members_config(trio, fake.url) + "routing:\n  task_classifier: {enabled: false}\n"
    with GliderServer(cfg, tmp_path) as g:
        first = _anthropic("/swarm list the files", tools=tools)
        r = httpx.post(g.url + "/v1/messages", json=first, headers=HEADERS, timeout=30)
        reply = r.json()
        use = next(b for b in reply["content"] if b["type"] == "tool_use")
        assert reply["stop_reason"] == "tool_use"
        assert g.wait_for("StrategyChosen")[0]["backend"] == "l1"
        assert g.wait_for("ToolCallsIssued")[0]["backend"] == "l1"
        before = [len(_chat_requests(f)) for f in trio]
        follow = {
            **first,
            "messages": [
                *first["messages"],
                {"role": "assistant", "content": reply["content"]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "a.py"}],
                },
            ],
        }
        r2 = httpx.post(g.url + "/v1/messages", json=follow, headers=HEADERS, timeout=30)
        assert r2.status_code == 200, r2.text
        after = [len(_chat_requests(f)) for f in trio]
        assert [a - b for a, b in zip(after, before, strict=True)] == [0, 1, 0]
        assert _chat_requests(trio[1])[-1].body["model"] == "qb"
        assert len(g.wait_for("StrategyMember", 4, timeout=1)) == 3


def test_judge_first_serves_the_first_complete_answer_and_cancels_the_rest(
    fake: FakeUpstream, trio: list[FakeUpstream], tmp_path: Path
) -> None:
    trio[0].set_fault(delay=4.0)
    trio[2].set_fault(delay=4.0)
    with GliderServer(_members_config(trio, fake.url, judge="first"), tmp_path) as g:
        t0 = time.monotonic()
        r = httpx.post(g.url + "/v1/messages", json=_anthropic("/swarm fast"), headers=HEADERS, timeout=30)
        assert time.monotonic() - t0 < 3.0
        assert r.json()["content"][0]["text"] == "hello from fake ollama qb"
        chosen = g.wait_for("StrategyChosen")[0]
        assert (chosen["index"], chosen["why"]) == (1, "the first complete answer")
        outcomes = {m["backend"]: m["outcome"] for m in g.wait_for("StrategyMember", 3)}
        assert outcomes == {"l0": "cancelled", "l1": "ok", "l2": "cancelled"}
